"""Rule count_check's script; the work is src/imagefolder_lmdb/steps/count_check.py."""

from imagefolder_lmdb.steps.count_check import run_in_rule

run_in_rule(snakemake)  # type: ignore[name-defined]  # noqa: F821
