"""Rule write_meta's script; the work is src/imagefolder_lmdb/steps/write_meta.py."""

from imagefolder_lmdb.steps.write_meta import run_in_rule

run_in_rule(snakemake)  # type: ignore[name-defined]  # noqa: F821
