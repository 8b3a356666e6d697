"""Rule data_file's script; the work is src/imagefolder_lmdb/steps/data_file.py."""

from imagefolder_lmdb.steps.data_file import run_in_rule

run_in_rule(snakemake)  # type: ignore[name-defined]  # noqa: F821
