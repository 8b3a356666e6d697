"""Every check of a config, run once by rules/common.smk before any job: keys given twice in a config
file, the schema (with its defaults filled in), and what the schema cannot say (paths exist, options
agree, the outputs lie outside the sources, the class list is usable). Every problem is collected
and reported together, one line each (src/imagefolder_lmdb/config/problems.py), so one round of
fixes is enough.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from imagefolder_lmdb.classes.lists import ClassList, ClassListError, configured_names, is_shipped, shipped_path
from imagefolder_lmdb.classes.plan import ClassPlan, plan_classes
from imagefolder_lmdb.config.problems import KeyPath, Problem, config_error, key_problem
from imagefolder_lmdb.config.schema import schema_problems
from imagefolder_lmdb.config.shards import shards_allowed
from imagefolder_lmdb.config.yaml_nodes import duplicate_keys
from imagefolder_lmdb.sources import kind_of_layout, source_file_suffixes
from imagefolder_lmdb.sources.label_files.problems import LabelFileError
from imagefolder_lmdb.sources.label_files.reading import SUFFIXES as LABEL_FILE_SUFFIXES
from imagefolder_lmdb.sources.label_files.settings import METADATA
from imagefolder_lmdb.sources.labelling import IlsvrcValLabels
from imagefolder_lmdb.sources.layouts import DEFAULT_LAYOUT, LABEL_FILE_LAYOUT, file_set_layouts, layout_named
from imagefolder_lmdb.sources.missing_paths import missing_path_hint, taken_from
from imagefolder_lmdb.sources.source_files import SourceFilesError
from imagefolder_lmdb.sources.unlabelled import UNLABELLED, UNLABELLED_LAYOUT

#: Layouts whose source is a set of source files (sources/layouts.py).
FILE_SET_LAYOUTS = file_set_layouts()
SOURCE_FILE_SUFFIXES = source_file_suffixes()
ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".zip")

#: What ``labels`` takes, in words.
LABELS_WANTED = (
    f"set labels to {METADATA} (Hugging Face's metadata.csv/.jsonl/.parquet files beside the images) or to the "
    "path of one .csv, .jsonl or .parquet file naming each image and its label"
)

#: For a source that looks like a set of source files given without its layout (their publishers call
#: them shards: WebDataset's tars, the Hugging Face hub's Parquet files).
FILE_SET_HINT = (
    f" Shards (a glob, a brace pattern, a list, {', '.join(f'a {suffix} file' for suffix in SOURCE_FILE_SUFFIXES)})"
    f" are read with {' or '.join(f'layout: {layout}' for layout in FILE_SET_LAYOUTS)}."
)


@dataclass(frozen=True)
class CheckedConfig:
    """What the rules need beyond the config itself, once it has passed every check."""

    classes: ClassPlan


def check_config(
    config: dict[str, Any],
    schema: dict[str, Any],
    config_files: Sequence[str] = (),
    paths_may_be_missing: bool = False,
    read_labels: bool = True,
) -> CheckedConfig:
    """Fill in the schema's defaults (in place) and check everything; ConfigError names every problem.
    ``paths_may_be_missing``: sources and label files that do not exist are no problem (a lint reads
    the rules, not the data). ``read_labels``: a folder's label files are read against its images
    (the main process; a cluster job parsing the workflow again need not walk the folder again)."""
    problems = [duplicate.problem for path in config_files for duplicate in duplicate_keys(str(path))]
    found = schema_problems(config, schema)
    label_file_layouts(config)
    usable = Usable({problem.path for problem in found})
    problems += found + content_problems(config, usable) + class_list_problems(config, usable)
    if read_labels and not problems:
        wanted = plan_classes(config).wanted  # classes: given bounds a label file's indices (issue 57)
        problems += [
            problem
            for name, split in config["splits"].items()
            for problem in folder_label_problems(name, split, wanted(name))
        ]
    problems = [problem for problem in problems if not (paths_may_be_missing and problem.missing_path)]
    if problems:
        raise config_error(in_config_order(problems, config))
    return CheckedConfig(plan_classes(config))


@dataclass(frozen=True)
class Usable:
    """The keys the schema found wrong: a check that reads one of them (or a key under it) is skipped,
    since its own message would only repeat the schema's."""

    wrong: set[KeyPath]

    def __call__(self, *paths: KeyPath) -> bool:
        return not any(path[:length] in self.wrong for path in paths for length in range(len(path) + 1))


#: The checks of one split: the keys each reads, and the check.
SplitCheck = Callable[[str, dict[str, Any], dict[str, Any]], list[Problem]]


def content_problems(config: dict[str, Any], usable: Usable) -> list[Problem]:
    """What the schema cannot say."""
    problems: list[Problem] = []
    splits = config.get("splits")
    if not isinstance(splits, dict) or not usable(("splits",)):
        return problems
    for name, split in splits.items():
        for keys, check in SPLIT_CHECKS:
            if usable(*[("splits", name, key) for key in keys]):
                problems += check(name, split, config)
    problems += resizing_problems(config["encode"], usable)
    if usable(("merge",), ("keep_parts",)):
        problems += no_merge_problems(config)
    if usable(("results",), ("work",)):
        problems += output_problems(config)
    return problems


def in_config_order(problems: list[Problem], config: dict[str, Any]) -> list[Problem]:
    """The problems in the order their keys are written (a file's own problems first)."""

    def position(problem: Problem) -> tuple[int, ...]:
        place: list[int] = []
        node: Any = config
        for key in problem.path:
            keys = list(node) if isinstance(node, dict) else []
            place.append(keys.index(key) if key in keys else len(keys))
            node = node.get(key) if isinstance(node, dict) else None
        return tuple(place)

    return sorted(problems, key=position)


def class_list_problems(config: dict[str, Any], usable: Usable) -> list[Problem]:
    """A ``classes:`` list or file that is empty, names a class twice, or cannot be read."""
    if not usable(("classes",)) or config.get("classes") is None:
        return []
    try:
        configured_names(config["classes"])
    except ClassListError as exc:
        return [Problem("", str(exc), ("classes",))]  # its message names the key and the file
    return []


# --------------------------------------------------------------------------------------------------
# One split
# --------------------------------------------------------------------------------------------------


def source_problems(name: str, split: dict[str, Any], config: dict[str, Any]) -> list[Problem]:
    """A folder or an archive; for a layout whose source is a set of source files, files that are all there."""
    source, key = split["source"], ("splits", name, "source")
    kind = kind_of_layout(split["layout"])
    if kind is not None:
        try:
            kind.input_files(source)
        except SourceFilesError as exc:
            return [key_problem(key, str(exc), exc.missing)]
        return []
    if not isinstance(source, str):
        layouts = " or ".join(f"layout: {layout}" for layout in FILE_SET_LAYOUTS)
        text = f"a list of files is a source of shards; set {layouts}, or give one folder or archive"
        return [key_problem(key, text)]
    if not os.path.exists(source):
        hint = FILE_SET_HINT if any(mark in source for mark in "*?[{") else ""
        missing = f"{source!r} does not exist{taken_from(source)}."
        return [key_problem(key, missing + (hint or missing_path_hint(source)), missing_path=True)]
    if os.path.isfile(source) and not source.lower().endswith(ARCHIVE_SUFFIXES):
        hint = FILE_SET_HINT if source.lower().endswith(SOURCE_FILE_SUFFIXES) else ""
        text = f"{source!r} is a file but not an archive; expected a folder or one of {', '.join(ARCHIVE_SUFFIXES)}."
        return [key_problem(key, text + hint)]
    return []


def root_problems(name: str, split: dict[str, Any], config: dict[str, Any]) -> list[Problem]:
    """``root`` is a relative folder inside the source (extract checks that it is there)."""
    root, key = split["root"], ("splits", name, "root")
    if root is None:
        return []
    if split["layout"] in FILE_SET_LAYOUTS:
        text = f"layout {split['layout']} reads its shard files whole; remove root (source names the shards)"
        return [key_problem(key, text)]
    from imagefolder_lmdb.sources.tree import root_problem

    problem = root_problem(root)
    if problem is None:
        return []
    return [key_problem(key, f"{root!r} {problem}: a folder inside the source (e.g. ILSVRC/Data/CLS-LOC/train)")]


def label_problems(name: str, split: dict[str, Any], config: dict[str, Any]) -> list[Problem]:
    """ILSVRC validation needs a label source; a given devkit or val_labels must be there."""
    checks = (shipped_devkit_problem, missing_label_files, missing_labels)
    return [problem for check in checks for problem in check(name, split, config)]


def labelled_by_file(split: dict[str, Any]) -> bool:
    """Whether the split's images get their labels from a label file (ILSVRC val's devkit or CSV)."""
    return isinstance(layout_named(split["layout"]).labelling, IlsvrcValLabels)


def shipped_devkit_problem(name: str, split: dict[str, Any], config: dict[str, Any]) -> list[Problem]:
    """``devkit: imagenet1k`` names the labels' classes; ILSVRC val labels need the ground truth."""
    if not labelled_by_file(split) or not is_shipped(split["devkit"]):
        return []
    from imagefolder_lmdb.sources.ilsvrc import SHIPPED_NOT_GROUND_TRUTH

    text = f"{split['devkit']!r} cannot label layout ilsvrc-val: {SHIPPED_NOT_GROUND_TRUTH}"
    return [key_problem(("splits", name, "devkit"), text)]


def missing_label_files(name: str, split: dict[str, Any], config: dict[str, Any]) -> list[Problem]:
    problems = []
    for key in ("devkit", "val_labels"):
        value = split[key]
        if value is None or os.path.isfile(value):
            continue
        if key == "val_labels" and labels_member(split) is not None:
            continue  # extract copies it out of the archive, or names the archive if it is not there
        if key == "devkit" and is_shipped(value):
            continue  # the shipped list stands in for the devkit's class list
        member = " val_labels may also name a member of an archive source (LOC_val_solution.csv inside Kaggle's zip)."
        text = f"{value!r} is not a file." + member * (key == "val_labels")
        problems.append(key_problem(("splits", name, key), text, missing_path=not os.path.exists(value)))
    return problems


def missing_labels(name: str, split: dict[str, Any], config: dict[str, Any]) -> list[Problem]:
    if not labelled_by_file(split) or split["devkit"] is not None or split["val_labels"] is not None:
        return []
    text = (
        "layout ilsvrc-val needs the labels: set devkit (ILSVRC2012_devkit_t12.tar.gz) or val_labels "
        "(LOC_val_solution.csv)." + ground_truth_hint(config.get("classes"))
    )
    return [key_problem(("splits", name, "devkit"), text)]


def ground_truth_hint(classes: object) -> str:
    """For ilsvrc-val without labels: why ``classes: imagenet1k`` does not label it either."""
    if not is_shipped(classes):
        return ""
    return (
        f" classes: {classes} names the classes, not the class of each validation image: those come "
        "from the devkit's ground truth, which no class list can replace."
    )


def extra_problems(name: str, split: dict[str, Any], config: dict[str, Any]) -> list[Problem]:
    """A split whose layout or devkit needs a package of an extra that is not installed, named with the
    extra to install (before any job, rather than a job's ImportError)."""
    from imagefolder_lmdb.extras import installed, missing_extra

    wanted = []
    kind = layout_named(split["layout"]).bytes.kind
    if kind in EXTRAS:  # a kind of source files read with a package of an extra
        wanted.append(("layout", EXTRAS[kind]))
    if split["devkit"] is not None and not is_shipped(split["devkit"]):
        wanted.append(("devkit", EXTRAS["devkit"]))
    return [
        key_problem(("splits", name, key), missing_extra(needs, module))
        for key, (module, needs) in wanted
        if not installed(module)
    ]


def listing_problems(name: str, split: dict[str, Any], config: dict[str, Any]) -> list[Problem]:
    """ImageFolder's listing arguments: for a folder of layout imagefolder; extensions or
    is_valid_file, as torchvision takes one of them; a predicate that imports."""
    from imagefolder_lmdb.sources.listing_options import FOLDER_ONLY, ListingOptions, PredicateError, load_predicate

    options = ListingOptions.from_split(split)
    if options.is_default:
        return []
    given = [key for key in ("extensions", "allow_empty", "is_valid_file") if split[key] not in (None, False)]
    key = ("splits", name, given[0])
    source = split["source"]
    takes_options = layout_named(split["layout"]).listing_options
    if not takes_options or not isinstance(source, str) or not os.path.isdir(source):
        if isinstance(source, str) and not os.path.exists(source):
            return []  # source_problems names the missing path
        return [
            key_problem(key, f"{'/'.join(given)} set for layout {split['layout']}, source {source!r}: {FOLDER_ONLY}")
        ]
    if options.extensions is not None and options.is_valid_file is not None:
        text = "extensions and is_valid_file both set: give one (as torchvision's DatasetFolder takes one)"
        return [key_problem(("splits", name, "is_valid_file"), text)]
    if options.is_valid_file is not None:
        try:
            load_predicate(options.is_valid_file)
        except PredicateError as exc:
            return [key_problem(("splits", name, "is_valid_file"), str(exc))]
    return []


def label_file_layouts(config: dict[str, Any]) -> None:
    """A split that gives ``labels`` with the default layout reads them: its layout becomes label-file
    (in place, as the schema's defaults are filled in), folder names no longer labels; ``labels:
    unlabelled`` becomes layout unlabelled (and no label file), whatever runs the check again."""
    splits = config.get("splits")
    for split in splits.values() if isinstance(splits, dict) else ():
        if isinstance(split, dict) and split.get("labels") == UNLABELLED:  # a split without labels: its layout
            if split.get("layout", DEFAULT_LAYOUT) in (DEFAULT_LAYOUT, UNLABELLED_LAYOUT):
                split["layout"], split["labels"] = UNLABELLED_LAYOUT, None
        elif isinstance(split, dict) and split.get("labels") is not None and split.get("layout") == DEFAULT_LAYOUT:
            split["layout"] = LABEL_FILE_LAYOUT


def label_file_problems(name: str, split: dict[str, Any], config: dict[str, Any]) -> list[Problem]:
    """``labels``: with a folder or an archive (layout label-file), ``metadata`` or a label file that
    exists, ends in a label file's suffix and has the columns the settings name (read here, before any
    job); the columns' settings only with ``labels``."""
    labels, key = split["labels"], ("splits", name, "labels")
    if split["layout"] == LABEL_FILE_LAYOUT and labels is None:
        return [key_problem(key, f"layout {LABEL_FILE_LAYOUT} reads the labels from files: {LABELS_WANTED}")]
    if labels is None:
        given = [setting for setting in ("file_column", "label_separator") if split[setting] is not None]
        return [
            key_problem(("splits", name, setting), f"{setting} is set, but no labels: {LABELS_WANTED}")
            for setting in given
        ]
    if labels == UNLABELLED:  # left so by label_file_layouts for another layout only
        return [key_problem(key, f"labels: {UNLABELLED} is for a folder or an archive of images: remove layout")]
    if split["layout"] != LABEL_FILE_LAYOUT:
        text = (
            f"labels set for layout {split['layout']}, which finds each image's label itself: remove labels, "
            f"or remove layout for a folder or an archive of images labelled by the file"
        )
        return [key_problem(key, text)]
    return [] if labels == METADATA else label_file_read_problems(key, labels, split)


def folder_label_problems(name: str, split: dict[str, Any], wanted: list[str] | None = None) -> list[Problem]:
    """A folder source's labels read against its images here, before any job: an image without a
    row, a row without an image, costs a second, not a run (an archive's are read by its listing).
    ``wanted``: the config's class list for the split, which sets the bound on its indices."""
    from imagefolder_lmdb.sources.base import CountMismatchError
    from imagefolder_lmdb.sources.label_files.settings import LabelsFrom
    from imagefolder_lmdb.sources.table_listing import folder_labels
    from imagefolder_lmdb.sources.tree import folder_inside

    source, labels, key = split["source"], LabelsFrom.from_split(split), ("splits", name, "labels")
    folder = folder_inside(source, split["root"]) if isinstance(source, str) else ""
    if labels is None or not os.path.isdir(folder):
        return []  # source_problems and extract name a missing folder
    try:
        folder_labels(labels, folder, None if wanted is None else ClassList(wanted, "config", True))
    except CountMismatchError as exc:
        return [key_problem(key, str(exc))]
    return []


def label_file_read_problems(key: KeyPath, labels: str, split: dict[str, Any]) -> list[Problem]:
    """A label file that is not there, not of a known kind, or lacks a column the settings name."""
    if labels.lower().endswith(".json") and os.path.isfile(labels):
        from imagefolder_lmdb.sources.label_files.metadata import json_array_refusal

        return [key_problem(key, json_array_refusal(labels))]
    if not labels.lower().endswith(LABEL_FILE_SUFFIXES):
        text = f"{labels!r} is not a label file: give a .csv, .jsonl or .parquet file, or {METADATA} ({LABELS_WANTED})"
        return [key_problem(key, text)]
    if not os.path.isfile(labels):
        text = f"{labels!r} is not a file{taken_from(labels)}."
        return [key_problem(key, text, missing_path=not os.path.exists(labels))]
    from imagefolder_lmdb.sources.label_files.reading import read_table
    from imagefolder_lmdb.sources.label_files.settings import LabelsFrom, resolve_columns

    settings = LabelsFrom.from_split(split)
    assert settings is not None
    try:
        with open(labels, "rb") as stream:
            resolve_columns(read_table(labels, stream.read()), settings.settings)
    except LabelFileError as exc:
        return [key_problem(key, str(exc))]
    except OSError as exc:
        return [key_problem(key, f"{labels!r} cannot be read: {exc.strerror}")]
    return []


def shards_problems(name: str, split: dict[str, Any], config: dict[str, Any]) -> list[Problem]:
    """More shards than the split is expected to hold images: jobs with nothing to do (rule
    count_check refuses the same once it has counted the images, where expected_images is null)."""
    shards, expected = split["shards"], split["expected_images"]
    if expected is None or shards_allowed(shards, expected):
        return []
    text = (
        f"{shards} is more than expected_images ({expected}): a shard holds at least one image; "
        f"set shards: {expected} or fewer"
    )
    return [key_problem(("splits", name, "shards"), text)]


SPLIT_CHECKS: list[tuple[tuple[str, ...], SplitCheck]] = [
    (("source", "layout"), source_problems),
    (("root", "layout"), root_problems),
    (("layout", "devkit", "val_labels", "source"), label_problems),
    (("layout", "labels", "file_column", "label_column", "label_separator"), label_file_problems),
    (("shards", "expected_images"), shards_problems),
    (("source", "layout", "extensions", "allow_empty", "is_valid_file"), listing_problems),
    (("layout", "devkit"), extra_problems),
]

#: What a split needs beyond the `convert` extra: (the module, what needs it); extras.py names the extra.
EXTRAS = {
    "parquet": ("pyarrow", "layout parquet (its Parquet files)"),
    "devkit": ("scipy", "the ILSVRC2012 devkit (its meta.mat)"),
}


# --------------------------------------------------------------------------------------------------
# The whole config
# --------------------------------------------------------------------------------------------------


def resizing_problems(encode: Any, usable: Usable) -> list[Problem]:
    """A resize re-encodes, which ``reencode: never`` forbids."""
    keys = ("max_side", "short_side")
    if not all(usable(("encode", "reencode"), ("encode", key)) for key in keys):
        return []
    return [
        Problem(
            f"config keys encode.reencode and encode.{key}",
            f"resizing re-encodes images, which reencode: never forbids. Set {key}: null or reencode: auto",
            ("encode", key),
        )
        for key in keys
        if encode["reencode"] == "never" and encode[key] is not None
    ]


def no_merge_problems(config: dict[str, Any]) -> list[Problem]:
    """``merge: false`` with ``keep_parts``: parts are kept for the merge to take unchanged shards from,
    and without a merge they have no reader (issue 60)."""
    if config["merge"] or not config["keep_parts"]:
        return []
    text = (
        "keep_parts keeps the shards' parts for a later merge to take, and merge: false (--no-merge) has no "
        "merge: each shard's data file already holds its records. Leave out keep_parts (--keep-parts), or merge"
    )
    return [key_problem(("keep_parts",), text)]


def output_problems(config: dict[str, Any]) -> list[Problem]:
    """``results`` or ``work`` inside a folder being converted: the next run would read the outputs
    as images of the source (a results folder as one more class)."""
    problems = []
    for key in ("results", "work"):
        output = os.path.realpath(config[key])
        for name, split in config["splits"].items():
            source = split.get("source") if isinstance(split, dict) else None
            if not isinstance(source, str) or not os.path.isdir(source):
                continue
            folder = os.path.realpath(source)
            if output == folder or output.startswith(folder.rstrip(os.sep) + os.sep):
                text = (
                    f"{resolved(config[key])} lies inside splits.{name}.source {resolved(source)}: a later run "
                    f"would read the outputs as images of the source; set {key} to a folder outside it"
                )
                problems.append(key_problem((key,), text))
    return problems


def resolved(path: str) -> str:
    """A configured path, with the real path it resolves to when that reads otherwise."""
    real = os.path.realpath(path)
    return repr(path) if real == path else f"{path!r} ({real})"


# --------------------------------------------------------------------------------------------------
# What the rules ask of a checked split
# --------------------------------------------------------------------------------------------------


def is_archive(path: str | list[str]) -> bool:
    return isinstance(path, str) and os.path.isfile(path) and path.lower().endswith(ARCHIVE_SUFFIXES)


def labels_member(split: dict[str, Any]) -> str | None:
    """``val_labels`` naming a member of the source archive (Kaggle's LOC_val_solution.csv inside
    the zip) rather than a file: extract copies it out."""
    labels = split["val_labels"]
    if labels is None or os.path.isfile(labels) or not is_archive(split["source"]):
        return None
    return labels


def shipped_devkit(split: dict[str, Any]) -> str | None:
    """The file of the shipped list ``devkit: imagenet1k`` names (None for a devkit file)."""
    return shipped_path(split["devkit"]) if is_shipped(split["devkit"]) else None
