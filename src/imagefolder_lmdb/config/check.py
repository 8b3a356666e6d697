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

from imagefolder_lmdb.classes.lists import ClassListError, configured_names
from imagefolder_lmdb.classes.plan import ClassPlan, plan_classes
from imagefolder_lmdb.config.problems import KeyPath, Problem, config_error, key_problem
from imagefolder_lmdb.config.schema import schema_problems
from imagefolder_lmdb.config.shards import shards_allowed
from imagefolder_lmdb.config.yaml_nodes import duplicate_keys
from imagefolder_lmdb.sources import kind_of_layout, source_file_suffixes
from imagefolder_lmdb.sources.labellings import (
    LABEL_KEYS,
    KeyProblem,
    label_extras,
    label_listing_problems,
    label_problems,
)
from imagefolder_lmdb.sources.layouts import DEFAULT_LAYOUT, file_set_layouts, layout_named, picked_layout
from imagefolder_lmdb.sources.missing_paths import missing_path_hint, taken_from
from imagefolder_lmdb.sources.source_files import SourceFilesError

#: Layouts whose source is a set of source files (sources/layouts.py).
FILE_SET_LAYOUTS = file_set_layouts()
SOURCE_FILE_SUFFIXES = source_file_suffixes()
ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".zip")

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
    labels_pick_layouts(config)
    usable = Usable({problem.path for problem in found})
    problems += found + content_problems(config, usable) + class_list_problems(config, usable)
    if read_labels and not problems:
        wanted = plan_classes(config).wanted  # classes: given bounds a label file's indices (issue 57)
        problems += [
            problem
            for name, split in config["splits"].items()
            for problem in split_problems(name, label_listing_problems(split, wanted(name)))
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


def labelling_problems(name: str, split: dict[str, Any], config: dict[str, Any]) -> list[Problem]:
    """The split's label keys, as its labelling checks them (sources/labelling.py ``problems``)."""
    return split_problems(name, label_problems(split, config.get("classes")))


def split_problems(name: str, problems: list[KeyProblem]) -> list[Problem]:
    """Problems of the split's keys, each naming the split's key."""
    return [key_problem(("splits", name, found.key), found.text, found.missing_path) for found in problems]


def extra_problems(name: str, split: dict[str, Any], config: dict[str, Any]) -> list[Problem]:
    """A split whose layout or label files need a package of an extra that is not installed, named with
    the extra to install (before any job, rather than a job's ImportError)."""
    from imagefolder_lmdb.extras import installed, missing_extra

    wanted = []
    kind = layout_named(split["layout"]).bytes.kind
    if kind in EXTRAS:  # a kind of source files read with a package of an extra
        wanted.append(("layout", EXTRAS[kind]))
    wanted += [(key, (module, needs)) for key, module, needs in label_extras(split)]
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


def labels_pick_layouts(config: dict[str, Any]) -> None:
    """A split that gives ``labels`` with the default layout reads them: its layout becomes the one of
    sources/layouts.py that they pick (in place, as the schema's defaults are filled in), whatever
    runs the check again."""
    splits = config.get("splits")
    for split in splits.values() if isinstance(splits, dict) else ():
        if isinstance(split, dict) and split.get("labels") is not None:
            split["layout"], split["labels"] = picked_layout(split.get("layout", DEFAULT_LAYOUT), split["labels"])


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
    (("layout", "source", *LABEL_KEYS), labelling_problems),
    (("shards", "expected_images"), shards_problems),
    (("source", "layout", "extensions", "allow_empty", "is_valid_file"), listing_problems),
    (("layout", *LABEL_KEYS), extra_problems),
]

#: What a kind of source needs beyond the `convert` extra: (the module, what needs it); extras.py names
#: the extra. A labelling's label files name their own (sources/labelling.py ``extras``).
EXTRAS = {
    "parquet": ("pyarrow", "layout parquet (its Parquet files)"),
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
