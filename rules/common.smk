# Config validation and the helpers every rule file uses.
import os
import sys

from snakemake.exceptions import WorkflowError
from snakemake.utils import min_version, validate

min_version("9.0")

ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".zip")

if not config.get("splits"):
    raise WorkflowError(
        "No splits configured. Run with a config file, e.g.\n"
        "    snakemake --cores 2 --configfile config/demo.yaml"
    )

validate(config, "../config/schema.yaml")


def check_config(config: dict) -> None:
    """What the schema cannot say: sources exist, options agree."""
    for name, split in config["splits"].items():
        source = split["source"]
        key = f"splits.{name}.source"
        if not os.path.exists(source):
            raise WorkflowError(
                f"config key {key}: {source!r} does not exist "
                f"(relative paths are taken from {os.getcwd()})."
            )
        if os.path.isfile(source) and not source.lower().endswith(ARCHIVE_SUFFIXES):
            raise WorkflowError(
                f"config key {key}: {source!r} is a file but not an archive; expected a "
                f"folder or one of {', '.join(ARCHIVE_SUFFIXES)}."
            )
    encode = config["encode"]
    if encode["reencode"] == "never" and encode["max_side"] is not None:
        raise WorkflowError(
            "config keys encode.reencode and encode.max_side: resizing re-encodes images, "
            "which reencode: never forbids. Set max_side: null or reencode: auto."
        )


check_config(config)

RESULTS = config["results"]
WORK = config["work"]
LOGS = f"{WORK}/logs"
SPLITS = list(config["splits"])


wildcard_constraints:
    split="|".join(SPLITS),
    shard=r"\d{5}",


def split_config(wildcards) -> dict:
    return config["splits"][wildcards.split]


def shard_ids(split: str) -> list[str]:
    return [f"{k:05d}" for k in range(config["splits"][split]["shards"])]


def part_files(pattern: str):
    """Input function: ``pattern`` expanded over every shard of the wildcard's split."""

    def files(wildcards) -> list[str]:
        return expand(pattern, split=wildcards.split, shard=shard_ids(wildcards.split))

    return files


def final_outputs() -> list[str]:
    return expand(
        [
            f"{RESULTS}/{{split}}.lmdb",
            f"{RESULTS}/{{split}}.verify.json",
            f"{RESULTS}/{{split}}.contact.png",
        ],
        split=SPLITS,
    )


def encode_settings() -> dict:
    """What decides the stored bytes; a change reruns the encoding."""
    return dict(config["encode"])


def print_summary(config: dict) -> None:
    """After a successful run: per split, what was stored and where the outputs are."""
    sys.path.insert(0, os.path.join(workflow.basedir, "scripts"))
    from summary import summary_lines

    for line in summary_lines(config):
        print(line)
