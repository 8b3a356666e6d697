"""A split's label keys (config/schema.yaml: ``devkit``, ``val_labels``, ``labels`` and a label
file's columns) as a labelling (sources/labelling.py) answers for them: the mapping rule
count_check's param carries to the listing, the files rules extract and count_check read, what
``made_from`` records, and the config's checks. The rest of the workflow asks the split's labelling
through sources/labellings.py, never by a key's name.

Every split may give ``devkit`` (a class list in ImageNet's label order, for any labelling) and
``val_labels``; those are answered here for every labelling alike (``Labelling``'s defaults), and a
labelling adds its own: ILSVRC2012 val's ground truth, a label file's columns.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from imagefolder_lmdb.classes.lists import is_shipped, shipped_path
from imagefolder_lmdb.sources.label_files.settings import METADATA, LabelsFrom
from imagefolder_lmdb.sources.source_record import file_digest
from imagefolder_lmdb.sources.splits import ARCHIVES

#: The label keys rule count_check's param writes after ``shards``, where earlier versions wrote them
#: (Snakemake compares the param's repr: another order would list every split again); any other
#: (a label file's ``labels``) is written last.
PARAM_ORDER = ("devkit", "val_labels")
#: The label keys of rule extract's param: a label file inside the source archive, to copy out.
EXTRACT_KEYS = ("labels_member",)
#: A label file's columns: keys of the split's labelling (layout label-file) only.
COLUMN_KEYS = ("file_column", "label_column", "label_separator")
#: The split config's keys a labelling reads (the config's checks of them wait for the schema's).
LABEL_KEYS = (*PARAM_ORDER, "labels", *COLUMN_KEYS)
#: The label keys whose value is a path (made absolute where it exists: Snakemake runs in the work folder).
LABEL_PATH_KEYS = frozenset({*PARAM_ORDER, "labels"})
#: source.json's key for extract's copy of ``val_labels`` taken out of the source archive.
COPIED_VAL_LABELS = "labels"
#: Where extract puts that copy.
VAL_LABELS_COPY = "val_labels.csv"
#: The ``labels`` value of a split without labels (sources/unlabelled.py; not ``none``: YAML reads
#: that as null, the default).
UNLABELLED = "unlabelled"
#: What each label file of a recipe's ``labels`` is, in words (by its key there).
LABEL_FILE_WORDS = {"labels": "the label file", "devkit": "the devkit", "val_labels": "the val_labels file"}
#: What ``labels`` takes, in words.
LABELS_WANTED = (
    f"set labels to {METADATA} (Hugging Face's metadata.csv/.jsonl/.parquet files beside the images) or to the "
    "path of one .csv, .jsonl or .parquet file naming each image and its label"
)


@dataclass(frozen=True)
class KeyProblem:
    """A problem of one of the split's keys, in one line (config/check.py names the key and the split)."""

    key: str
    text: str
    missing_path: bool = False


def labels_member(split: Mapping[str, Any]) -> str | None:
    """``val_labels`` naming a member of the source archive (Kaggle's LOC_val_solution.csv inside
    the zip) rather than a file: extract copies it out."""
    labels, source = split["val_labels"], split["source"]
    if labels is None or os.path.isfile(labels) or not is_archive(source):
        return None
    return str(labels)


def is_archive(path: object) -> bool:
    return isinstance(path, str) and os.path.isfile(path) and path.lower().endswith(ARCHIVES)


def own_val_labels(split: Mapping[str, Any]) -> str | None:
    """``val_labels`` when it is a file of its own (not a member of the source archive)."""
    return None if labels_member(split) else split["val_labels"]


def common_settings(split: Mapping[str, Any]) -> dict[str, Any]:
    """The keys every labelling's listing may read: the devkit, and a val_labels file of its own."""
    return {"devkit": split["devkit"], "val_labels": own_val_labels(split)}


def label_file_settings(split: Mapping[str, Any]) -> dict[str, Any]:
    """A label file's (or metadata files') entry, with its columns where not at their defaults."""
    labels = LabelsFrom.from_split(split)
    return {} if labels is None else {"labels": labels.as_data()}


def common_inputs(split: Mapping[str, Any]) -> list[str]:
    """The devkit and a val_labels file of its own; for ``devkit: imagenet1k`` the shipped list's
    file, so that a changed list reruns the split."""
    devkit = shipped_path(split["devkit"]) if is_shipped(split["devkit"]) else split["devkit"]
    return [path for path in (devkit, own_val_labels(split)) if path]


def recorded(files: Mapping[str, str]) -> dict[str, list[str]]:
    """Label files by role, each as ``[real path, content digest]`` (``made_from``'s ``labels``)."""
    return {
        key: [os.path.realpath(path), file_digest(path) if os.path.isfile(path) else "missing"]
        for key, path in files.items()
    }


def common_files(split: Mapping[str, Any]) -> dict[str, str]:
    """The devkit and val_labels a split reads by role (val_labels inside the source archive is
    recorded with the source)."""
    files = {}
    devkit = split.get("devkit")
    if devkit:
        files["devkit"] = shipped_path(devkit) if is_shipped(devkit) else devkit
    labels = split.get("val_labels")
    if labels and os.path.isfile(labels):
        files["val_labels"] = labels
    return files


def label_file_recipe(split: Mapping[str, Any]) -> dict[str, Any]:
    """A label file's columns not at their defaults (``label_columns``; none: no entry)."""
    labels = LabelsFrom.from_split(split)
    settings: dict[str, Any] = {} if labels is None else labels.as_data()
    settings.pop("from", None)
    return {"label_columns": settings} if settings else {}


def missing_label_files(split: Mapping[str, Any]) -> list[KeyProblem]:
    """A devkit or val_labels that is not a file (a shipped list, or a member of the source archive,
    is none of these problems)."""
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
        problems.append(KeyProblem(key, text, missing_path=not os.path.exists(value)))
    return problems


def label_settings_problems(split: Mapping[str, Any], layout: str, wanted: str) -> list[KeyProblem]:
    """A label file's keys given to a labelling that reads none: its columns without ``labels``, or
    ``labels`` for a layout that finds each image's label itself. ``wanted``: what ``labels`` takes."""
    labels = split["labels"]
    if labels is None:
        given = [setting for setting in ("file_column", "label_separator") if split[setting] is not None]
        return [KeyProblem(setting, f"{setting} is set, but no labels: {wanted}") for setting in given]
    if labels == UNLABELLED:  # left so by the layout's pick for another layout only
        return [KeyProblem("labels", f"labels: {UNLABELLED} is for a folder or an archive of images: remove layout")]
    text = (
        f"labels set for layout {layout}, which finds each image's label itself: remove labels, "
        f"or remove layout for a folder or an archive of images labelled by the file"
    )
    return [KeyProblem("labels", text)]
