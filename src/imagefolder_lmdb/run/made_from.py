"""What a split's dataset is made from, and whether the dataset there still matches it.

Snakemake notices a changed param only through the records it keeps in ``.snakemake/``, which users
delete (``--clean``, ``rm -rf work``). So the decision is made here, from the output and the source:
before any job, the main process computes each split's ``made_from`` (the source's record,
sources/source_record.py, and every setting or input that changes its records or labels) and compares
it with the one the dataset holds in its meta. ``{work}/{split}/made_from.json`` is an input of rules
extract, count_check and write_meta: it is written with the current time where they differ, so
Snakemake's own comparison of file times runs what the difference needs, however much of the work
folder is left; where they agree it is given a time older than any output, and nothing runs.
write_meta stores the file's content in the new dataset's meta.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Any

from imagefolder_lmdb.board.label_origin import same_contents
from imagefolder_lmdb.classes.plan import ClassPlan, ClassSource
from imagefolder_lmdb.sources import input_files, kind_of_layout, kind_recipe
from imagefolder_lmdb.sources.labellings import LABEL_FILE_WORDS, label_recipe, label_rule_changes
from imagefolder_lmdb.sources.listing_options import ListingOptions
from imagefolder_lmdb.sources.source_files import SourceFilesError
from imagefolder_lmdb.sources.source_record import SourceRecord, record_files, record_folder
from imagefolder_lmdb.work.paths import RunPaths
from imagefolder_lmdb.writing.atomic import write_json_atomic

#: The meta document's key, and the version of what it holds.
KEY = "made_from"
VERSION = 1
#: The variable a command-line conversion sets for its Snakemake run: the work folder whose
#: made_from files it has just written (the walk of the source is not made twice).
RECORDED_VARIABLE = "IMAGEFOLDER_LMDB_SOURCES_RECORDED"
#: The order differences are named in: where the images come from first.
RECIPE_ORDER = ("source", "root", "layout", "listing", "classes", "labels", "label_columns", "columns", "encode")
#: The made_from file's entry that only this run needs (not recorded in the dataset).
CHANGED_GROUPS = "changed_groups"
#: Encode settings that change no record by themselves (run/existing.py judges on_error by what was set aside).
NOT_RECORDED = ("on_error",)


@dataclass
class Verdict:
    """How a split's dataset stands against what it would be made from now."""

    made_from: dict[str, Any]
    state: str  # "new": no dataset; "legacy": a dataset without the record; "same"; "changed"
    differences: list[str] = field(default_factory=list)  # in words, for "changed"
    #: the source's groups that changed since the dataset was made, each with what it is now: their
    #: shards are encoded again even where kept parts and an unchanged listing would say otherwise
    changed_groups: dict[str, str] = field(default_factory=dict)

    @property
    def up_to_date(self) -> bool:
        return self.state == "same"


def made_from(split: dict[str, Any], encode: dict[str, Any], classes: ClassSource) -> dict[str, Any]:
    """What a split of a checked config is made from: the recipe and the source's record."""
    return {"version": VERSION, "recipe": recipe(split, encode, classes), "source": source_record(split).as_data()}


def recipe(split: dict[str, Any], encode: dict[str, Any], classes: ClassSource) -> dict[str, Any]:
    """Every setting and input besides the images that changes a split's records or labels."""
    sources = split["source"] if isinstance(split["source"], list) else [split["source"]]
    labelling = label_recipe(split)  # its label files by path and content, and how they are read
    found = {
        "source": [os.path.realpath(path) for path in sources]
        if isinstance(split["source"], list)
        else os.path.realpath(split["source"]),
        "root": (split.get("root") or "").strip("/") or None,
        "layout": split["layout"],
        "classes": class_recipe(classes),
        "labels": labelling["labels"],
        "encode": {key: value for key, value in sorted(encode.items()) if key not in NOT_RECORDED},
    }
    found.update(kind_recipe(split))  # the kind's own options (a Parquet split's columns)
    found.update({key: value for key, value in labelling.items() if key != "labels"})  # a label file's columns, rule
    found.update(ListingOptions.from_split(split).recipe())  # ImageFolder's listing arguments, unless defaults
    return found


def class_recipe(classes: ClassSource) -> dict[str, Any]:
    """The class list as resolved: its names where the config gives them (sorted, however spelled),
    else where the listing takes them from (this split's source, or another split's)."""
    if classes.names is not None:
        return {"names": sorted(classes.names)}
    if classes.kind == "shared":
        return {"from": "split", "split": classes.shared_from}
    return {"from": "source"}  # its own listing, shared with others or not: the same labels here


def source_record(split: dict[str, Any]) -> SourceRecord:
    """The record of the folder the split reads (its ``root``), or of its archive or source files."""
    source = split["source"]
    if kind_of_layout(split["layout"]) is not None:  # a set of source files
        try:
            return record_files(input_files(split))
        except SourceFilesError:
            return record_files([])  # extract names what is missing
    folder = os.path.join(source, *split["root"].strip("/").split("/")) if split.get("root") else source
    if isinstance(source, str) and os.path.isdir(folder):
        return record_folder(folder)
    return record_files([source] if isinstance(source, str) else source)


def judge(document: dict[str, Any] | None, now: dict[str, Any]) -> Verdict:
    """``now`` against the meta document of the dataset there (None: there is none)."""
    if document is None:
        return Verdict(now, "new")
    recorded = document.get(KEY)
    if not isinstance(recorded, dict) or recorded.get("version") != VERSION:
        return Verdict(now, "legacy")
    differences = recipe_differences(recorded["recipe"], now["recipe"], document.get("classes")) + label_changes(
        recorded["recipe"], now["recipe"]
    )
    differences += label_rule_changes(recorded["recipe"], now["recipe"], document.get("classes"))
    earlier, current = SourceRecord.from_data(recorded["source"]), SourceRecord.from_data(now["source"])
    changed = current.changed(earlier)
    edited = current.edited_in_place(earlier) if recorded["recipe"]["source"] == now["recipe"]["source"] else []
    if changed:
        differences.append(f"its source changed ({groups_in_words(changed)}: images added, removed or replaced)")
    if edited:
        differences.append(f"images were written in place since ({groups_in_words(edited)})")
    groups = {name: current.entries.get(name, "removed") for name in changed}
    groups.update({name: current.hints[name] for name in edited})
    return Verdict(now, "changed" if differences else "same", differences, groups)


def recipe_differences(recorded: dict[str, Any], now: dict[str, Any], dataset_classes: Any = None) -> list[str]:
    """Each setting of the recipe that differs, in words that follow "was made": ``from /a, not /b``,
    ``with layout 'imagefolder', not 'ilsvrc-val'``. A label file changed at the same path is a
    changed input, not a setting (``label_changes``). ``dataset_classes``: the file's class list."""
    found = []
    for key in sorted({*recorded, *now}, key=lambda k: (RECIPE_ORDER.index(k) if k in RECIPE_ORDER else 99, k)):
        old, new = recorded.get(key), now.get(key)
        if key == "label_rule":
            continue  # a rule read the same file otherwise: label_rule_changes, no setting of the user's
        if key == "labels" and same_contents(old, new):
            continue  # moved or copied elsewhere, the same bytes: the same labels (issue 59)
        if key == "labels":
            old, new = label_paths(old), label_paths(new)
        if old == new or (key == "classes" and same_class_names(old, new, now, dataset_classes)):
            continue
        if key == "labels":
            found.extend(label_file_moves(label_paths(recorded.get(key)), label_paths(now.get(key))))
        elif key == "source":
            found.append(f"from {old}, not {new}")
        elif key == "root":
            found.append(f"with root {old or 'none'}, not {new or 'none'}")
        elif key == "encode":
            old, new = old or {}, new or {}
            # a key the file's settings lack came after it was made: not a difference the user made
            changed = sorted(k for k in {*old, *new} if k in old and old.get(k) != new.get(k))
            if changed:
                found.append("with encode " + ", ".join(f"{k} {old.get(k)!r}, not {new.get(k)!r}" for k in changed))
        elif key == "classes":
            found.append(f"with the class list {classes_in_words(old)}, not {classes_in_words(new)}")
        else:
            found.append(f"with {RECIPE_KEY_WORDS.get(key, key)} {setting_words(old)}, not {setting_words(new)}")
    return found


#: A recipe's key that is no key of the config, in words.
RECIPE_KEY_WORDS = {"label_columns": "the label file's columns", "listing": "the listing's settings"}


def label_file_moves(old: dict[str, str], new: dict[str, str]) -> list[str]:
    """Each label input read from another path (or none) than the dataset's: ``with the label file
    /a/train.csv, not /b/train.csv``."""
    return [
        f"with {LABEL_FILE_WORDS.get(key, key)} {old.get(key) or 'none'}, not {new.get(key) or 'none'}"
        for key in sorted({*old, *new})
        if old.get(key) != new.get(key)
    ]


def setting_words(value: Any) -> str:
    """A recipe's setting in words, never a Python dict or list: ``file_column 'id', label_column
    'tag'``, ``extensions .jpg .png``; ``none (the defaults)`` for no setting."""
    if value is None or value == {}:
        return "none (the defaults)"
    if isinstance(value, dict):
        return ", ".join(f"{key} {value_words(item)}" for key, item in value.items())
    return value_words(value)


def value_words(value: Any) -> str:
    """One value of a setting: a list as its items, a dict in parentheses, else as written."""
    if isinstance(value, list | tuple):
        return " ".join(value_words(item) for item in value) or "none"
    if isinstance(value, dict):
        return f"({setting_words(value)})"
    return repr(value)


def same_class_names(old: Any, new: Any, now: dict[str, Any], dataset_classes: Any) -> bool:
    """Whether a class list spelled by names and one taken from a listing are the same names: a split
    converted alone takes OUTDIR's list by name, a whole-tree run takes it from the folders again."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return False
    old_names = old.get("names", dataset_classes)  # the file's list is what its listing gave
    new_names = new["names"] if "names" in new else folder_classes(now) if new.get("from") == "source" else None
    return isinstance(old_names, list) and isinstance(new_names, list) and sorted(old_names) == sorted(new_names)


def folder_classes(recipe: dict[str, Any]) -> list[str] | None:
    """The class folders an ImageFolder source's listing finds (None where another layout decides)."""
    # the layouts' table (every labelling) and the tree scan (archives, tqdm): here, not at the top,
    # which write_meta's job imports
    from imagefolder_lmdb.sources.layouts import LAYOUTS
    from imagefolder_lmdb.sources.tree import find_classes

    known = LAYOUTS.get(str(recipe.get("layout")))  # a recipe read from a dataset: any value
    if known is None or not known.labelling.classes_are_folders or not isinstance(recipe.get("source"), str):
        return None
    folder = os.path.join(recipe["source"], *(recipe.get("root") or "").split("/"))
    try:
        return find_classes(folder)[0]
    except OSError:  # no such folder, or none inside: the listing names it
        return None


def label_paths(labels: dict[str, list[str]] | None) -> dict[str, str]:
    return {key: value[0] for key, value in (labels or {}).items()}


def label_changes(recorded: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """The label files of the recipe whose content changed at the same path."""
    old, new = recorded.get("labels") or {}, now.get("labels") or {}
    return [
        f"{key} file {new[key][0]} changed"
        for key in sorted(new)
        if key in old and old[key][0] == new[key][0] and old[key][1] != new[key][1]
    ]


def classes_in_words(entry: dict[str, Any] | None) -> str:
    if not entry:
        return "none"
    if "names" in entry:
        names = entry["names"]
        shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
        return f"[{shown}] ({len(names)} {'class' if len(names) == 1 else 'classes'})"
    return f"shared from split {entry['split']}" if entry.get("from") == "split" else "from its source's folders"


def groups_in_words(groups: list[str]) -> str:
    shown = ", ".join("files beside the class folders" if g == "." else os.path.basename(g) for g in groups[:5])
    return shown + (f" and {len(groups) - 5} more" if len(groups) > 5 else "")


def split_verdicts(config: dict[str, Any], plan: ClassPlan) -> dict[str, Verdict]:
    """Each split of a checked config against its dataset in ``config["results"]``."""
    from imagefolder_lmdb.work.split_document import split_document

    paths = RunPaths(config["results"], config["work"])
    verdicts = {}
    for name, split in config["splits"].items():
        dataset = paths.dataset(name)
        document = split_document(dataset) if os.path.isfile(dataset) else None
        verdicts[name] = judge(document, made_from(split, config["encode"], plan.source(name)))
    return verdicts


def write_made_from(config: dict[str, Any], verdicts: dict[str, Verdict]) -> None:
    """Each split's ``made_from.json``: newer than the dataset where it must be made again, older
    than any output where the dataset matches (or was made before datasets held the record)."""
    paths = RunPaths(config["results"], config["work"])
    for name, verdict in verdicts.items():
        path, dataset = paths.made_from(name), paths.dataset(name)
        content = {**verdict.made_from, CHANGED_GROUPS: verdict.changed_groups}
        if verdict.state in ("same", "legacy"):
            if read_json_or_none(path) != content:
                write_json_atomic(path, content)
                os.utime(path, ns=(0, 0))  # older than any output: Snakemake judges the rest as before
            elif newer_than(path, dataset):
                os.utime(path, ns=(0, 0))  # a run that was told to make the dataset again, and then did not
        elif read_json_or_none(path) != content or not newer_than(path, dataset):
            # a file written in place since the last run (no dataset yet, or one a change is still
            # rebuilding) moves only the hints: listed again, its shards' stamps change (shard_stamps.py)
            write_json_atomic(path, content)


def newer_than(path: str, other: str) -> bool:
    """Whether ``path`` is newer than ``other`` (True where ``other`` does not exist)."""
    return not os.path.exists(other) or os.path.getmtime(path) > os.path.getmtime(other)


def read_json_or_none(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as stream:
            return json.load(stream)
    except (OSError, ValueError):
        return None


def dry_run(arguments: list[str]) -> bool:
    """Whether Snakemake's command line asks for a dry run (``-n``, ``-np``, ``--dry-run``), which
    writes nothing: the verdicts are said, not written."""
    return any(
        argument in ("--dry-run", "--dryrun") or re.fullmatch(r"-[a-zA-Z]*n[a-zA-Z]*", argument) is not None
        for argument in arguments
    )


def changed_lines(verdicts: dict[str, Verdict]) -> list[str]:
    """Per split made again because what it is made from changed: what changed."""
    return [f"{name}: made again: {'; '.join(v.differences)}" for name, v in verdicts.items() if v.differences]


def recorded_by_caller(config: dict[str, Any]) -> bool:
    """Whether the command-line conversion that started this Snakemake already wrote the files (and
    checked the config, label files read: a config not yet checked may lack ``work``)."""
    work = config.get("work")
    return isinstance(work, str) and os.environ.get(RECORDED_VARIABLE) == os.path.abspath(work)
