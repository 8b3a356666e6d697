# Config validation, every file's path (src/imagefolder_lmdb/run_paths.py) and the input functions the rule
# files use. Stale locks and leftovers of killed runs: rules/resume.smk.
import os
import time

from snakemake.exceptions import WorkflowError
from snakemake.utils import min_version, validate

min_version("9.0")

#: The checkout, for envs/imagefolder-lmdb.post-deploy.sh (--use-conda installs its package): this
#: file's own folder's parent, not workflow.basedir, which inside a host's `module` is the host's.
os.environ.setdefault(
    "IMAGEFOLDER_LMDB_CHECKOUT",
    os.path.dirname(os.path.realpath(str(workflow.current_basedir))),
)

RUN_STARTED = time.time()

ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".zip")

if not config.get("splits"):
    raise WorkflowError(
        "No splits configured. Run with a config file, e.g.\n"
        "    snakemake --cores 2 --configfile config/demo.yaml"
    )


def check_split_keys(config: dict) -> None:
    """A top-level key written under a split, before the schema's long message says so."""
    for name, split in config["splits"].items():
        if not isinstance(split, dict):
            continue
        misplaced = sorted(
            set(split) & {"classes", "encode", "verify", "results", "work"}
        )
        if misplaced:
            raise WorkflowError(
                f"config key splits.{name}.{misplaced[0]}: {misplaced[0]} is a top-level key "
                "(shared by every split), not a key of one split: move it to the top level of the "
                "config, next to splits:."
            )


check_split_keys(config)
validate(config, "../config/schema.yaml")


#: Layouts whose source is a set of shard files (src/imagefolder_lmdb/sources/shard_files.py).
SHARD_LAYOUTS = ("webdataset", "parquet")


def check_config(config: dict) -> None:
    """What the schema cannot say: sources exist, options agree."""
    for name, split in config["splits"].items():
        if split["layout"] in SHARD_LAYOUTS:
            check_shards(name, split)
        else:
            check_source(name, split)
        check_root(name, split)
        check_labels(name, split)
    check_resizing(config["encode"])


def check_resizing(encode: dict) -> None:
    """A resize re-encodes, which ``reencode: never`` forbids."""
    for key in ("max_side", "short_side"):
        if encode["reencode"] == "never" and encode[key] is not None:
            raise WorkflowError(
                f"config keys encode.reencode and encode.{key}: resizing re-encodes images, "
                f"which reencode: never forbids. Set {key}: null or reencode: auto."
            )


def check_shards(name: str, split: dict) -> None:
    """Layouts webdataset and parquet: the shards the source names are all there."""
    from imagefolder_lmdb.sources.shard_files import ShardFilesError, shard_files

    try:
        shard_files(split["source"])
    except ShardFilesError as exc:
        raise WorkflowError(f"config key splits.{name}.source: {exc}.") from exc


def check_source(name: str, split: dict) -> None:
    """One folder or archive."""
    source = split["source"]
    key = f"splits.{name}.source"
    if not isinstance(source, str):
        raise WorkflowError(
            f"config key {key}: a list of files is a source of shards; set layout: webdataset or "
            f"layout: parquet, or give one folder or archive."
        )
    if not os.path.exists(source):
        pattern = any(mark in source for mark in "*?[{")
        raise WorkflowError(
            f"config key {key}: {source!r} does not exist "
            f"(relative paths are taken from {os.getcwd()})."
            + (SHARDS_HINT if pattern else "")
        )
    if os.path.isfile(source) and not source.lower().endswith(ARCHIVE_SUFFIXES):
        raise WorkflowError(
            f"config key {key}: {source!r} is a file but not an archive; expected a "
            f"folder or one of {', '.join(ARCHIVE_SUFFIXES)}."
            + (SHARDS_HINT if source.lower().endswith(".parquet") else "")
        )


#: For a source that looks like shards given without their layout.
SHARDS_HINT = (
    " Shards (a glob, a brace pattern, a list, a .parquet file) are read with "
    "layout: webdataset or layout: parquet."
)


def check_root(name: str, split: dict) -> None:
    """``root`` is a relative folder inside the source (extract checks that it is there)."""
    if split["root"] is None:
        return
    if split["layout"] in SHARD_LAYOUTS:
        raise WorkflowError(
            f"config key splits.{name}.root: layout {split['layout']} reads its shard files "
            "whole; remove root (source names the shards)."
        )
    from imagefolder_lmdb.sources.tree import root_problem

    problem = root_problem(split["root"])
    if problem is not None:
        raise WorkflowError(
            f"config key splits.{name}.root: {split['root']!r} {problem}: a folder inside "
            "the source (e.g. ILSVRC/Data/CLS-LOC/train)."
        )


def is_archive(path: str | list[str]) -> bool:
    return (
        isinstance(path, str)
        and os.path.isfile(path)
        and path.lower().endswith(ARCHIVE_SUFFIXES)
    )


def labels_member(split: dict) -> str | None:
    """``val_labels`` naming a member of the source archive (Kaggle's LOC_val_solution.csv inside
    the zip) rather than a file: extract copies it out."""
    labels = split["val_labels"]
    if labels is None or os.path.isfile(labels) or not is_archive(split["source"]):
        return None
    return labels


def check_labels(name: str, split: dict) -> None:
    """ILSVRC validation needs a label source; given files must exist (val_labels: or be a member
    of the source archive, which extract checks)."""
    # val_labels may also name a member of an archive source (a folder source has no members)
    member_hint = {
        "devkit": "",
        "val_labels": " val_labels may also name a member of an archive source "
        "(LOC_val_solution.csv inside Kaggle's zip).",
    }
    check_shipped_devkit(name, split)
    for key in ("devkit", "val_labels"):
        if key == "val_labels" and labels_member(split) is not None:
            continue  # extract copies it out of the archive, or names the archive if it is not there
        if key == "devkit" and shipped_devkit(split):
            continue  # the shipped list stands in for the devkit's class list
        if split[key] is not None and not os.path.isfile(split[key]):
            raise WorkflowError(
                f"config key splits.{name}.{key}: {split[key]!r} is not a file."
                + member_hint[key]
            )
    if (
        split["layout"] == "ilsvrc-val"
        and split["devkit"] is None
        and split["val_labels"] is None
    ):
        raise WorkflowError(
            f"config key splits.{name}.devkit: layout ilsvrc-val needs the labels: set devkit "
            "(ILSVRC2012_devkit_t12.tar.gz) or val_labels (LOC_val_solution.csv)."
            + ground_truth_hint(config)
        )


def ground_truth_hint(config: dict) -> str:
    """For ilsvrc-val without labels: why ``classes: imagenet1k`` does not label it either."""
    from imagefolder_lmdb.class_list import is_shipped

    if not is_shipped(config["classes"]):
        return ""
    return (
        f" classes: {config['classes']} names the classes, not the class of each validation image: "
        "those come from the devkit's ground truth, which no class list can replace."
    )


def shipped_devkit(split: dict) -> str | None:
    """The file of the shipped list ``devkit: imagenet1k`` names (None for a devkit file)."""
    from imagefolder_lmdb.class_list import is_shipped, shipped_path

    return shipped_path(split["devkit"]) if is_shipped(split["devkit"]) else None


def check_shipped_devkit(name: str, split: dict) -> None:
    """``devkit: imagenet1k`` names the labels' classes; ILSVRC val labels need the ground truth."""
    if split["layout"] != "ilsvrc-val" or not shipped_devkit(split):
        return
    from imagefolder_lmdb.ilsvrc import SHIPPED_NOT_GROUND_TRUTH

    raise WorkflowError(
        f"config key splits.{name}.devkit: {split['devkit']!r} cannot label layout ilsvrc-val: "
        f"{SHIPPED_NOT_GROUND_TRUTH}."
    )


check_config(config)


def configured_classes(config: dict) -> tuple[list[str] | None, str | None]:
    """The config's ``classes:`` (a list, or a file with one per line): sorted names and origin."""
    if config["classes"] is None:
        return None, None
    from imagefolder_lmdb.class_list import ClassListError, configured_names

    try:
        return configured_names(config["classes"])
    except ClassListError as exc:
        raise WorkflowError(str(exc)) from exc


CLASSES, CLASSES_ORIGIN = configured_classes(config)
SHARING = [name for name, split in config["splits"].items() if split["share_classes"]]
#: The split whose classes every sharing split uses, when the config lists none.
CLASSES_FROM = SHARING[0] if SHARING and CLASSES is None else None
from imagefolder_lmdb.run_paths import SHARD, RunPaths

PATHS = RunPaths(
    config["results"], config["work"]
)  # every file's path: src/imagefolder_lmdb/run_paths.py
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


def folder_stamp(wildcards) -> str | None:
    """Rule extract's param that changes when a folder source's class folders gain or lose
    files (see src/imagefolder_lmdb/source_stamp.py); None for an archive, whose own time shows a change.
    """
    split = split_config(wildcards)
    source = split["source"]
    if not isinstance(source, str) or not os.path.isdir(source):
        return None
    from imagefolder_lmdb.sources.tree import folder_inside

    from imagefolder_lmdb.source_stamp import listing_stamp

    folder = folder_inside(source, split["root"])
    if not os.path.isdir(folder):
        return None  # extract stops, naming the folders there are

    return listing_stamp(folder)


def source_files(wildcards) -> list[str]:
    """Rule extract's input: the folder or archive, or every shard of a webdataset/parquet split."""
    split = split_config(wildcards)
    if split["layout"] not in SHARD_LAYOUTS:
        return [split["source"]]
    from imagefolder_lmdb.sources.shard_files import shard_files

    return shard_files(split["source"])


def shares_classes(split: str) -> bool:
    return config["splits"][split]["share_classes"]


def wanted_classes(wildcards) -> list[str] | None:
    """The config's class list for a split that shares it (extract reads only those classes)."""
    return CLASSES if shares_classes(wildcards.split) else None


def class_list(wildcards) -> dict:
    """Rule count_check's param: the class list's names when the config gives them, and its
    origin in words (the summary and the verify report show it)."""
    split = wildcards.split
    if not shares_classes(split):
        return {"names": None, "origin": "this split's own (share_classes: false)"}
    if CLASSES is not None:
        return {"names": CLASSES, "origin": CLASSES_ORIGIN}
    if split != CLASSES_FROM:
        return {"names": None, "origin": f"shared from {CLASSES_FROM}"}
    others = [name for name in SHARING if name != split]
    shared = f", shared with {', '.join(others)}" if others else ""
    return {"names": None, "origin": f"from this split's source{shared}"}


def shared_class_manifest(wildcards) -> list[str]:
    """The first split's manifest, whose classes a later sharing split takes (none otherwise)."""
    split = wildcards.split
    if not shares_classes(split) or CLASSES is not None or split == CLASSES_FROM:
        return []
    return [PATHS.manifest(CLASSES_FROM)]


def label_files(wildcards) -> list[str]:
    """The devkit / label CSV of a split, when it has one (not a CSV inside the source archive);
    for ``devkit: imagenet1k`` the shipped list's file, so that a changed list reruns the split.
    """
    split = split_config(wildcards)
    devkit = shipped_devkit(split) or split["devkit"]
    return [path for path in (devkit, label_file(wildcards)) if path]


def label_file(wildcards) -> str | None:
    """``val_labels`` when it is a file of its own."""
    split = split_config(wildcards)
    return None if labels_member(split) else split["val_labels"]


def final_outputs() -> list[str]:
    return [path for split in SPLITS for path in PATHS.final_outputs(split)]


def benchmark_files(wildcards) -> list[str]:
    """Snakemake's benchmark record of every job of a split (the report tabulates them)."""
    per_split = [
        PATHS.benchmark(rule, wildcards.split)
        for rule in ("extract", "count_check", "merge", "write_meta", "verify")
    ]
    return per_split + part_files(PATHS.benchmark("encode_shard", shard=SHARD))(
        wildcards
    )


def encode_settings() -> dict:
    """What decides the stored bytes; a change reruns the encoding."""
    return dict(config["encode"])


def print_summary(config: dict) -> None:
    """After a successful run: per split, what was stored and where the outputs are."""
    from imagefolder_lmdb.summary import summary_lines

    for line in summary_lines(config, time.time() - RUN_STARTED):
        print(line)
