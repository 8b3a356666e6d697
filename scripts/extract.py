"""Rule extract's script; the work is src/imagefolder_lmdb/steps/extract.py."""

from imagefolder_lmdb.steps.extract import run_in_rule

run_in_rule(snakemake)  # type: ignore[name-defined]  # noqa: F821
