"""Rule merge's script; the work is src/imagefolder_lmdb/steps/merge.py."""

from imagefolder_lmdb.steps.merge import run_in_rule

run_in_rule(snakemake)  # type: ignore[name-defined]  # noqa: F821
