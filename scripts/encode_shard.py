"""Rule encode_shard's script; the work is src/imagefolder_lmdb/steps/encode_shard.py."""

from imagefolder_lmdb.steps.encode_shard import run_in_rule

run_in_rule(snakemake)  # type: ignore[name-defined]  # noqa: F821
