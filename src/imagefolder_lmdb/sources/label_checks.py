"""The config's checks of a labelling's own keys (sources/labelling.py ``problems`` and
``listing_problems``): ILSVRC2012 val's ground truth, a label file that can be read with the columns
set, and a folder's label files read against its images, all before any job. Each problem is one
line about one key of the split (config/check.py names the split and the key)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from imagefolder_lmdb.classes.lists import ClassList, is_shipped
from imagefolder_lmdb.sources.label_files.problems import LabelFileError
from imagefolder_lmdb.sources.label_files.reading import SUFFIXES as LABEL_FILE_SUFFIXES
from imagefolder_lmdb.sources.label_files.settings import METADATA, LabelsFrom
from imagefolder_lmdb.sources.label_keys import LABELS_WANTED, UNLABELLED, KeyProblem
from imagefolder_lmdb.sources.missing_paths import taken_from


def ground_truth_problems(split: Mapping[str, Any], classes: object) -> list[KeyProblem]:
    """ILSVRC2012 val labelled by its ground truth: a devkit or val_labels given, and not
    ``devkit: imagenet1k``, which names the classes, not the class of each image."""
    devkit = split["devkit"]
    if is_shipped(devkit):
        from imagefolder_lmdb.sources.ilsvrc import SHIPPED_NOT_GROUND_TRUTH

        return [KeyProblem("devkit", f"{devkit!r} cannot label layout ilsvrc-val: {SHIPPED_NOT_GROUND_TRUTH}")]
    if devkit is not None or split["val_labels"] is not None:
        return []
    text = (
        "layout ilsvrc-val needs the labels: set devkit (ILSVRC2012_devkit_t12.tar.gz) or val_labels "
        "(LOC_val_solution.csv)." + ground_truth_hint(classes)
    )
    return [KeyProblem("devkit", text)]


def ground_truth_hint(classes: object) -> str:
    """For ilsvrc-val without labels: why ``classes: imagenet1k`` does not label it either."""
    if not is_shipped(classes):
        return ""
    return (
        f" classes: {classes} names the classes, not the class of each validation image: those come "
        "from the devkit's ground truth, which no class list can replace."
    )


def label_file_problems(split: Mapping[str, Any]) -> list[KeyProblem]:
    """``labels``: ``metadata`` or a label file that exists, ends in a label file's suffix and has
    the columns the settings name (read here, before any job)."""
    labels = split["labels"]
    if labels is None:
        return [KeyProblem("labels", f"layout {split['layout']} reads the labels from files: {LABELS_WANTED}")]
    if labels == UNLABELLED:
        return [KeyProblem("labels", f"labels: {UNLABELLED} is for a folder or an archive of images: remove layout")]
    return [] if labels == METADATA else label_file_read_problems(labels, split)


def label_file_read_problems(labels: str, split: Mapping[str, Any]) -> list[KeyProblem]:
    """A label file that is not there, not of a known kind, or lacks a column the settings name."""
    if labels.lower().endswith(".json") and os.path.isfile(labels):
        from imagefolder_lmdb.sources.label_files.metadata import json_array_refusal

        return [KeyProblem("labels", json_array_refusal(labels))]
    if not labels.lower().endswith(LABEL_FILE_SUFFIXES):
        text = f"{labels!r} is not a label file: give a .csv, .jsonl or .parquet file, or {METADATA} ({LABELS_WANTED})"
        return [KeyProblem("labels", text)]
    if not os.path.isfile(labels):
        text = f"{labels!r} is not a file{taken_from(labels)}."
        return [KeyProblem("labels", text, missing_path=not os.path.exists(labels))]
    from imagefolder_lmdb.sources.label_files.reading import label_file_bytes, read_table
    from imagefolder_lmdb.sources.label_files.settings import resolve_columns

    settings = LabelsFrom.from_split(split)
    assert settings is not None
    try:
        resolve_columns(read_table(labels, label_file_bytes(labels)), settings.settings)
    except LabelFileError as exc:
        return [KeyProblem("labels", str(exc))]
    except OSError as exc:
        return [KeyProblem("labels", f"{labels!r} cannot be read: {exc.strerror}")]
    return []


def folder_label_problems(split: Mapping[str, Any], wanted: list[str] | None) -> list[KeyProblem]:
    """A folder source's labels read against its images. ``wanted``: the config's class list for the
    split, which sets the bound on its indices."""
    from imagefolder_lmdb.sources.base import CountMismatchError
    from imagefolder_lmdb.sources.table_listing import folder_labels
    from imagefolder_lmdb.sources.tree import folder_inside

    source, labels = split["source"], LabelsFrom.from_split(split)
    folder = folder_inside(source, split["root"]) if isinstance(source, str) else ""
    if labels is None or not os.path.isdir(folder):
        return []  # source_problems and extract name a missing folder
    try:
        folder_labels(labels, folder, None if wanted is None else ClassList(wanted, "config", True))
    except CountMismatchError as exc:
        return [KeyProblem("labels", str(exc))]
    return []
