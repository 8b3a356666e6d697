"""What the rest of the workflow asks of a split's labelling (sources/labelling.py), of the checked
split config: the label keys its listing reads, the files rules extract and count_check read, what
``made_from`` records, the config's checks, extract's copy of a label file inside the source
archive, the label keys that are paths, the command line's ``--labels`` per split, the words of the
labels' origin, and whether an edited label file or a newer rule changes an existing dataset. Asked
through these functions, never by a labelling's or a key's name, as a kind of source is asked
through sources/__init__.py.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from imagefolder_lmdb.sources.base import Labels, Listing
from imagefolder_lmdb.sources.inputs_read import InputRead
from imagefolder_lmdb.sources.label_files.settings import METADATA
from imagefolder_lmdb.sources.label_keys import (
    COLUMN_KEYS,
    COPIED_VAL_LABELS,
    EXTRACT_KEYS,
    LABEL_FILE_WORDS,
    LABEL_KEYS,
    LABEL_PATH_KEYS,
    PARAM_ORDER,
    UNLABELLED,
    VAL_LABELS_COPY,
    KeyProblem,
)
from imagefolder_lmdb.sources.label_origin import origin_words
from imagefolder_lmdb.sources.label_origin import recorded as recorded_entry

__all__ = [
    "COLUMN_KEYS",
    "EXTRACT_KEYS",
    "LABEL_FILE_WORDS",
    "LABEL_KEYS",
    "LABEL_PATH_KEYS",
    "PARAM_ORDER",
    "UNLABELLED",
    "KeyProblem",
]

if TYPE_CHECKING:
    from imagefolder_lmdb.sources.labelling import Labelling
    from imagefolder_lmdb.sources.layouts import Layout

log = logging.getLogger("imagefolder_lmdb.extract")


def layout_named(name: str) -> Layout:
    """The layout ``name`` (sources/layouts.py), its labellings' modules imported when one is first asked
    for: the settings of every rule job import this module, most of them use no labelling."""
    from imagefolder_lmdb.sources.layouts import layout_named as named

    return named(name)


def labelling_of(split: Mapping[str, Any]) -> Labelling:
    """The split's labelling, as its layout names it (sources/layouts.py)."""
    return layout_named(split["layout"]).labelling


def label_settings(split: Mapping[str, Any]) -> dict[str, Any]:
    """The label keys the split's listing reads, as plain data (rule count_check's param)."""
    return labelling_of(split).settings(split)


def extract_label_settings(split: Mapping[str, Any]) -> dict[str, Any]:
    """What rule extract copies out of the source for the split's listing, as plain data (its param)."""
    return labelling_of(split).extract_settings(split)


def labels_read(layout: str, settings: Labels, copies: Mapping[str, Any]) -> Labels:
    """What rule count_check hands the listing: ``settings`` (its param) with extract's copies."""
    return layout_named(layout).labelling.read_with(settings, copies)


def classes_expected(layout: str, labels: Labels) -> tuple[list[str], list[InputRead]] | None:
    """The classes a full source of the layout holds, and the files they were read from as parsed
    (``Labelling.classes_expected``; None: no such check)."""
    return layout_named(layout).labelling.classes_expected(labels)


def lists_no_labels(listing: Listing) -> bool:
    """Whether the listing's images have no label (an unlabelled split: no class of its own)."""
    from imagefolder_lmdb.sources.unlabelled import NO_LABELS_KIND

    return listing.label_kind == NO_LABELS_KIND


def label_inputs(split: Mapping[str, Any]) -> list[str]:
    """The label files rule extract reads."""
    return labelling_of(split).input_files(split)


def listing_label_inputs(split: Mapping[str, Any]) -> list[str]:
    """The label files rule count_check reads."""
    return labelling_of(split).listing_files(split)


def label_recipe(split: Mapping[str, Any]) -> dict[str, Any]:
    """What of the split's label keys changes its records, as run/made_from.py records it."""
    return labelling_of(split).recipe(split)


def label_problems(split: Mapping[str, Any], classes: object) -> list[KeyProblem]:
    """The split's label keys' problems (``classes``: the config's class list)."""
    return labelling_of(split).problems(split, classes)


def label_listing_problems(split: Mapping[str, Any], wanted: list[str] | None) -> list[KeyProblem]:
    """What reading the split's label files against a folder's images finds."""
    return labelling_of(split).listing_problems(split, wanted)


def label_extras(split: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """The split's label keys whose files need a package of an extra (``Labelling.extras``)."""
    return labelling_of(split).extras(split)


def copy_labels_member(source: str, settings: Mapping[str, Any], building: str, output: str) -> dict[str, Any]:
    """Rule extract: the label file ``settings`` (``extract_label_settings``) names inside the source
    archive, copied into the folder being built (one small file) for count_check; source.json's
    entry for it."""
    member = settings.get("labels_member")
    if not member:
        return {COPIED_VAL_LABELS: None}
    from imagefolder_lmdb.sources.archive_members import copy_member

    log.info("copying %s from %s (val_labels)", member, source)
    copy_member(source, member, os.path.join(building, VAL_LABELS_COPY))
    return {COPIED_VAL_LABELS: os.path.abspath(os.path.join(output, VAL_LABELS_COPY))}


def names_a_label_file(value: object) -> bool:
    """Whether a ``labels`` value is a label file's path (not Hugging Face's metadata files, not ``unlabelled``)."""
    return isinstance(value, str) and value not in (METADATA, UNLABELLED)


def is_metadata_labels(value: object) -> bool:
    """Whether a ``labels`` value reads Hugging Face's metadata files inside the source."""
    return value == METADATA


def label_file_misfit(split: Mapping[str, Any], folder: str) -> str | None:
    """Why the label file of ``split`` (its ``labels`` and columns) does not label the images of
    ``folder`` (None: it does), as the listing words it."""
    from imagefolder_lmdb.sources.base import CountMismatchError
    from imagefolder_lmdb.sources.label_files.settings import LabelsFrom
    from imagefolder_lmdb.sources.table_listing import folder_labels

    labels = LabelsFrom.from_split(split)
    assert labels is not None
    try:
        folder_labels(labels, folder, None)
    except CountMismatchError as exc:
        return str(exc).split(": ", 1)[-1].split(": every image", 1)[0]
    return None


def label_origin_words(labels: dict[str, Any], recipe: dict[str, Any], document: dict[str, Any]) -> list[str]:
    """``  labels from: ...`` lines of a dataset's recipe ``labels`` (sources/label_origin.py)."""
    return origin_words(labels, recipe, document)


def recorded_label_file(entry: Any) -> bool:
    """Whether a recipe's label entry is a file's ``[path, digest]``."""
    return recorded_entry(entry)


def label_rule_changes(recorded: dict[str, Any], now: dict[str, Any], dataset_classes: Any) -> list[str]:
    """Where the dataset's labels were read by an earlier rule than ``now``'s (its recipe has none:
    rule 1) and that rule read them otherwise: why it is made again. The same rule, no label file
    now, or a file whose content changed (run/made_from.py label_changes names that): nothing to add."""
    from imagefolder_lmdb.sources.label_files.rules import classes_read_differently, read_differently
    from imagefolder_lmdb.sources.label_files.settings import LabelsFrom

    rule = now.get("label_rule")
    if rule is None or recorded.get("label_rule", 1) == rule:
        return []
    before, after = (recorded.get("labels") or {}).get("labels"), (now.get("labels") or {}).get("labels")
    if after is None:  # Hugging Face's metadata files, inside the source: judged by the list they made
        found = classes_read_differently(dataset_classes) if isinstance(dataset_classes, list) else None
        return [found] if found else []
    if before != after:
        return []
    try:
        with open(after[0], "rb") as stream:
            data = stream.read()
    except OSError:
        return []  # the listing names what is missing
    labels = LabelsFrom.from_data({"from": after[0], **now.get("label_columns", {})})
    found = read_differently(after[0], data, labels.settings)
    return [found] if found else []


def edited_label_file(recorded: dict[str, Any], now: dict[str, Any]) -> str | None:
    """The label file (``labels: PATH``) of two recipes edited at the same path (None: not so)."""
    before, after = (recorded.get("labels") or {}).get("labels"), (now.get("labels") or {}).get("labels")
    if not before or not after or before[0] != after[0] or before[1] == after[1]:
        return None
    return str(after[0])


def label_file_change_words(
    path: str, split: Mapping[str, Any], images: list[str], named: list[Any], files: list[str] | None
) -> str:
    """How the label file at ``path``, read with ``split``'s columns, labels a dataset's ``images``
    (their labels ``named``) otherwise: the first image whose label differs (``files``: the folder's now)."""
    from imagefolder_lmdb.sources.label_files.changes import label_file_change
    from imagefolder_lmdb.sources.label_files.settings import LabelSettings, LabelsFrom

    settings = LabelsFrom.from_split(split)
    with open(path, "rb") as stream:
        return label_file_change(
            path, stream.read(), settings.settings if settings else LabelSettings(), images, named, files
        )
