"""Rule write_pointer's script; the work is src/imagefolder_lmdb/steps/write_pointer.py."""

from imagefolder_lmdb.steps.write_pointer import run_in_rule

run_in_rule(snakemake)  # type: ignore[name-defined]  # noqa: F821
