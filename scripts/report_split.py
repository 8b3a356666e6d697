"""Rule report_split's script; the work is src/imagefolder_lmdb/steps/report_split.py."""

from imagefolder_lmdb.steps.report_split import run_in_rule

run_in_rule(snakemake)  # type: ignore[name-defined]  # noqa: F821
