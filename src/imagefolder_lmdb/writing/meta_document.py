"""The meta JSON document of a dataset (docs/FORMAT.md, ``meta/json``): one builder, one validator.

write_meta and convert_legacy build their metas here (:func:`build_meta`, each with its own tool name),
so both carry the same keys; verify and both writers check a document with :func:`document_problems`.
The binary arrays beside it and the key layout belong to imagefolder_lmdb.reader.format, the format's
owner.
"""

from __future__ import annotations

import datetime
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from imagefolder_lmdb.reader import FORMAT_ID, STORAGE_REASONS, Meta, format_version_of
from imagefolder_lmdb.reader.codec import listed_reasons
from imagefolder_lmdb.reader.format_targets import (
    NO_SINGLE_LABEL,
    FieldColumn,
    LabelLists,
    field_problems,
    label_lists_problems,
)
from imagefolder_lmdb.reader.format_unlabelled import NO_LABEL

#: The version meta/json's ``tool`` records beside the writer's name (write_meta's, convert_legacy's).
TOOL_VERSION = "1.0.0"


class MetaDocumentError(ValueError):
    """A document that disagrees with itself; the writer stops rather than store it."""


def storage_counts(storage: Sequence[int]) -> dict[str, int]:
    """How many records were stored for each reason (``{"passthrough": n, ...}``)."""
    return {STORAGE_REASONS[code]: n for code, n in sorted(Counter(storage).items())}


def build_document(
    *,
    classes: list[str],
    storage: Sequence[int],
    settings: dict[str, Any],
    source: dict[str, Any],
    source_bytes: int,
    stored_bytes: int,
    skipped: list[dict[str, Any]],
    tool: dict[str, str],
    **extra: Any,
) -> dict[str, Any]:
    """The document for ``len(storage)`` records. ``source``: where they came from (path, images,
    classes, ignored_files, ...); ``extra``: further top-level entries (e.g. ``class_list``)."""
    version = format_version_of(storage)
    return {
        "format": FORMAT_ID,
        "version": version,
        "length": len(storage),
        "classes": classes,
        "class_to_idx": {name: i for i, name in enumerate(classes)},
        "settings": settings,
        "source": source,
        "stats": {
            "source_bytes": int(source_bytes),
            "stored_bytes": int(stored_bytes),
            "storage": storage_counts(storage),
            "skipped": skipped,
        },
        "storage_reasons": listed_reasons(version),
        "tool": tool,
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        **extra,
    }


def build_meta(
    *,
    tool: str,
    classes: list[str],
    storage: Sequence[int],
    settings: dict[str, Any],
    source: dict[str, Any],
    source_bytes: Sequence[int],
    stored_bytes: Sequence[int],
    skipped: list[dict[str, Any]],
    sizes: np.ndarray,
    crc32: Sequence[int],
    paths: list[str],
    labels: Sequence[int] | None = None,
    label_lists: Sequence[Sequence[int]] | None = None,
    fields: Mapping[str, FieldColumn] | None = None,
    unlabelled: bool = False,
    **extra: Any,
) -> Meta:
    """The meta of ``len(storage)`` records, its document checked: the per-record columns (``sizes``
    as (width, height) rows, ``crc32``, ``storage``, ``source_bytes``, ``paths``), each record's class
    index (``labels``; -1 each where ``unlabelled``: format version 6) or list of them (``label_lists``:
    version 4, as with ``fields``: name: type and one value per record, in a reader's order), and the
    document :func:`build_document` makes of them, written by ``tool`` (version :data:`TOOL_VERSION`).
    MetaDocumentError: labels given both ways or neither, labels, label lists or fields that do not
    fit the records and classes, or a document that disagrees with itself."""
    targets = checked_targets(len(storage), len(classes), labels, label_lists, fields, unlabelled)
    document = build_document(
        classes=classes,
        storage=storage,
        settings=settings,
        source=source,
        source_bytes=sum(source_bytes),
        stored_bytes=sum(stored_bytes),
        skipped=skipped,
        tool={"name": tool, "version": TOOL_VERSION},
        **extra,
    )
    return Meta(
        document=checked(document),
        labels=targets.labels,
        sizes=sizes.reshape(-1, 2),
        crc32=np.array(crc32, dtype=np.uint32),
        storage=np.array(storage, dtype=np.uint8),
        source_bytes=np.array(source_bytes, dtype=np.uint64),
        paths=paths,
        label_lists=targets.label_lists,
        fields=targets.fields,
        unlabelled=unlabelled,
    )


@dataclass
class StoredTargets:
    """What a meta stores of each record's labels and fields (reader/format.py's Meta columns)."""

    labels: np.ndarray
    label_lists: LabelLists | None
    fields: dict[str, FieldColumn] | None


def checked_targets(
    length: int,
    classes: int,
    labels: Sequence[int] | None,
    label_lists: Sequence[Sequence[int]] | None,
    fields: Mapping[str, FieldColumn] | None,
    unlabelled: bool = False,
) -> StoredTargets:
    """The labels (a multi-label or ``unlabelled`` file's meta/labels names no class), label lists and
    fields of ``length`` records of ``classes`` classes, checked as a reader checks them."""
    if (labels is None) == (label_lists is None):
        raise MetaDocumentError("the meta needs each record's labels, either one class index each or a list each")
    lists = None if label_lists is None else LabelLists.from_lists(label_lists)
    columns = dict(fields) if fields else None
    problems = [] if lists is None else label_lists_problems(lists, length, classes)
    for name, column in (columns or {}).items():
        problems += field_problems(name, column, length)
    if labels is not None and len(labels) != length:
        problems.append(f"{len(labels)} labels for {length} records")
    elif unlabelled and labels is not None and any(label != NO_LABEL for label in labels):
        problems.append(f"a label other than {NO_LABEL} in a split without labels")
    elif not unlabelled and labels is not None and any(not 0 <= label < classes for label in labels):
        problems.append(f"a label outside 0..{classes - 1} (its {classes} classes)")
    if problems:
        raise MetaDocumentError(
            "the label lists or fields to be written do not fit the records: " + "; ".join(problems)
        )
    single = np.full(length, NO_SINGLE_LABEL, dtype=np.int32) if labels is None else np.array(labels, dtype=np.int32)
    return StoredTargets(single, lists, columns)


def document_problems(document: dict[str, Any]) -> list[str]:
    """What in a document disagrees with itself (an empty list for a sound one)."""
    problems = []
    n, expected_index = document["length"], {name: i for i, name in enumerate(document["classes"])}
    if document.get("class_to_idx", expected_index) != expected_index:
        problems.append("class_to_idx in the meta disagrees with the class list")
    words = document.get("class_words")  # optional: files without it are sound
    if words is not None and (
        not isinstance(words, list) or len(words) != len(expected_index) or not all(isinstance(w, str) for w in words)
    ):
        problems.append("class_words in the meta is not one string per class")
    stored = sum(document["stats"]["storage"].values())
    if stored != n:
        problems.append(f"the storage counts add up to {stored} records, the meta describes {n}")
    source_images, skipped = document["source"]["images"], len(document["stats"]["skipped"])
    if n != source_images - skipped:
        problems.append(f"{n} records, but the source had {source_images} images and {skipped} were skipped")
    return problems


def checked(document: dict[str, Any]) -> dict[str, Any]:
    """``document``, after :func:`document_problems` found nothing (writers call this)."""
    problems = document_problems(document)
    if problems:
        raise MetaDocumentError("the meta to be written disagrees with itself: " + "; ".join(problems))
    return document
