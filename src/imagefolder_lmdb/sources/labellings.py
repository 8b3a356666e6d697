"""What the rest of the workflow asks of a split's labelling (sources/labelling.py), of the checked
split config: the label keys its listing reads, the files rules extract and count_check read, what
``made_from`` records, the config's checks, and extract's copy of a label file inside the source
archive. Asked through these functions, never by a labelling's or a key's name, as a kind of source
is asked through sources/__init__.py.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

from imagefolder_lmdb.sources.base import Labels, Listing
from imagefolder_lmdb.sources.inputs_read import InputRead
from imagefolder_lmdb.sources.label_keys import (
    COPIED_VAL_LABELS,
    EXTRACT_KEYS,
    LABEL_FILE_WORDS,
    LABEL_KEYS,
    PARAM_ORDER,
    UNLABELLED,
    VAL_LABELS_COPY,
    KeyProblem,
)
from imagefolder_lmdb.sources.labelling import Labelling
from imagefolder_lmdb.sources.layouts import layout_named

__all__ = ["EXTRACT_KEYS", "LABEL_FILE_WORDS", "LABEL_KEYS", "PARAM_ORDER", "UNLABELLED", "KeyProblem"]

log = logging.getLogger("imagefolder_lmdb.extract")


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
