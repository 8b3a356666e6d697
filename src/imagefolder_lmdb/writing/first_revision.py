"""A split's first revision made straight from N data files (``merge: false``, issue 60): the files'
records, concatenated in the order given, are the split in ImageFolder's order, so no sample is looked up
by its path (as ``new_revision`` does for a change). What it reads and writes is each file's meta and
one order and label entry per record, built with numpy: the one serial step of a conversion without a
merge costs O(files) in Python, not O(records).

    first_revision("OUT/train.lmdb", ["WORK/train/files/00000.lmdb", ...], document={...})

Each file is hard-linked (a copy across file systems) into ``OUT/train.lmdb.d/`` under its content id,
then the pointer is written under a temporary name and renamed over ``OUT/train.lmdb``, with the data
folder's lock held, as ``new_revision`` does.
"""

from __future__ import annotations

import datetime
import os
import shutil
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from imagefolder_lmdb.reader import Meta
from imagefolder_lmdb.reader.codec import STORAGE_REASONS
from imagefolder_lmdb.reader.handles import forget_if_replaced
from imagefolder_lmdb.reader.identity import content_id
from imagefolder_lmdb.reader.revision_format import ORDER_DTYPE, DataFile, Revision, data_file_path, encode_revision
from imagefolder_lmdb.writing.atomic import fsync_path, publish, temporary_path
from imagefolder_lmdb.writing.meta_document import checked
from imagefolder_lmdb.writing.revisions import (
    AddedFile,
    RevisionWritten,
    added_file,
    locked_split,
    write_pointer,
)

#: The reason of each storage code, by name (to order summed counts as ``storage_counts`` does).
_CODE_OF = {reason: code for code, reason in STORAGE_REASONS.items()}


def first_revision(
    split: str | os.PathLike[str],
    data_files: Sequence[str | os.PathLike[str]],
    document: Mapping[str, Any] | None = None,
) -> RevisionWritten:
    """Write ``split`` (``OUT/<name>.lmdb``) as revision 1 over ``data_files``, whose records in the order
    given are the split's samples; whatever lay at ``split`` is replaced.

    Args:
        split: where the pointer goes.
        data_files: complete split files of versions 1 to 4, one label each, of one class list; a file of
            no record adds only its skipped images to the revision's stats.
        document: meta/json entries over those the files share (the first file's), e.g. ``made_from``.

    Raises:
        ValueError: no data file, or files of different class lists.
        FormatError: a damaged data file, or a multi-label or field file.
    """
    path = os.path.abspath(os.fspath(split))
    files = [added_file(os.path.abspath(os.fspath(file))) for file in data_files]
    revision = planned_first(files, dict(document or {}))
    with locked_split(path):
        for file, data in zip(kept_files(files), revision.files, strict=True):
            link_or_copy(file.path, data_file_path(path, data.id))
        fsync_path(os.path.dirname(data_file_path(path, "x")))
        entry, values = encode_revision(revision)
        write_pointer(path, {1: entry}, values, 1)
    forget_if_replaced(os.path.realpath(path))
    places = [data_file_path(path, file.id) for file in revision.files]
    return RevisionWritten(path, 1, 0, revision.changes, places, first_change=False)


def link_or_copy(source: str, target: str) -> None:
    """``target`` the same file as ``source`` (a hard link; a copy, renamed when whole, across file systems).
    A file of that name is already the same content: its name is its content id."""
    if os.path.exists(target):
        return
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, temporary_path(target))
        publish(temporary_path(target), target)


def kept_files(files: Sequence[AddedFile]) -> list[AddedFile]:
    """The files a revision reads: those holding a record (an all-skipped shard's holds none)."""
    return [file for file in files if file.meta.length]


def planned_first(files: Sequence[AddedFile], given: dict[str, Any]) -> Revision:
    """Revision 1 over ``files``: sample ``i`` the ``i``-th record of their concatenation."""
    if not files:
        raise ValueError("a split of revisions needs at least one data file")
    check_same_classes(files)
    kept = kept_files(files)
    lengths = [file.meta.length for file in kept]
    order = np.zeros(sum(lengths), ORDER_DTYPE)
    order["file"] = np.repeat(np.arange(len(kept), dtype=np.uint32), lengths)
    order["record"] = np.concatenate([np.arange(n, dtype=np.uint32) for n in lengths]) if kept else []
    labels = np.concatenate([np.asarray(file.meta.labels, np.int32) for file in kept]) if kept else np.zeros(0, "<i4")
    created = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    return Revision(
        number=1,
        parent=None,
        created=created,
        files=[DataFile(content_id(file.meta), file.meta.length, int(file.lengths.sum())) for file in kept],
        document=joined_document([file.meta for file in files], given, created),
        order=order,
        labels=labels,
        changes={"added": len(order), "removed": 0, "relabelled": 0, "moved": 0},
    )


def check_same_classes(files: Sequence[AddedFile]) -> None:
    first = files[0].meta.classes
    for file in files[1:]:
        if file.meta.classes != first:
            raise ValueError(f"{file.path}: its classes differ from {files[0].path}'s: not data files of one split")


def joined_document(metas: Sequence[Meta], given: Mapping[str, Any], created: str) -> dict[str, Any]:
    """The meta/json of the one file the revision flattens to: the entries the files share (the first
    file's), ``given`` over them, and the counts summed over the files."""
    documents = [meta.document for meta in metas]
    base = {key: value for key, value in documents[0].items() if key not in ("checksums", "locations")}
    stats = [document["stats"] for document in documents]
    sources = [document["source"] for document in documents]
    document = base | dict(given)
    document |= {
        "version": max(int(document_["version"]) for document_ in documents),
        "length": sum(meta.length for meta in metas),
        "created": created,
        "stats": {
            **stats[0],
            "source_bytes": sum(int(entry["source_bytes"]) for entry in stats),
            "stored_bytes": sum(int(entry["stored_bytes"]) for entry in stats),
            "storage": summed_storage([entry["storage"] for entry in stats]),
            "skipped": [skipped for entry in stats for skipped in entry["skipped"]],
        },
        "source": {
            **sources[0],
            "images": sum(int(source["images"]) for source in sources),
            # a folder read in place has a root only where every file's images lie at their own paths
            "root": sources[0].get("root") if all(source.get("root") for source in sources) else None,
        },
    }
    return checked(document)


def summed_storage(counts: Sequence[Mapping[str, int]]) -> dict[str, int]:
    """Each file's storage counts summed, in code order as ``storage_counts`` gives them."""
    total: dict[str, int] = {}
    for entry in counts:
        for reason, count in entry.items():
            total[reason] = total.get(reason, 0) + int(count)
    return {reason: total[reason] for reason in sorted(total, key=lambda reason: _CODE_OF.get(reason, 1 << 8))}
