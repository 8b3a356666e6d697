# SPDX-License-Identifier: MIT
"""A split of revisions read from a URL (docs/FORMAT.md, version 5; issue 58, point 5): the pointer
object ``…/train.lmdb`` read once, when the dataset is made, by the ranged reads that read a split
file's meta; then the data files of the revision asked for (default: the current one), each
``…/train.lmdb.d/<content id>.lmdb``, opened as a URL split file is and checked by its content id.
Every later read of a data file is pinned to the ETag it had at open (If-Match), and the revision
travels with the dataset to each DataLoader worker: the reader keeps the revision it opened for its
life, whatever the pointer names later. A data file gone since (``gc``) is one line naming it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from imagefolder_lmdb.reader.format import FormatError, Meta
from imagefolder_lmdb.reader.identity import FileChangedError, content_id
from imagefolder_lmdb.reader.records import Opened
from imagefolder_lmdb.reader.revision_format import (
    DATA_FOLDER_SUFFIX,
    POINTER_JSON,
    DataFile,
    decode_pointer,
    decode_revision,
    entry_of,
    is_pointer_document,
)
from imagefolder_lmdb.reader.revisions import MissingDataFileError, NoTargets, composed_meta, missing_message

from .cache import RecordCache
from .opening import RemoteFile, RemoteValues, open_remote, read_values
from .problems import NoSuchObjectError
from .records import RemoteRecords
from .urls import RemoteSettings


def data_file_url(pointer: str, content: str) -> str:
    """The URL of the data file of content id ``content`` beside the pointer at ``pointer``."""
    return f"{pointer}{DATA_FOLDER_SUFFIX}/{content}.lmdb"


def pointer_of(found: RemoteValues) -> dict[str, Any] | None:
    """The pointer's meta/json if the object read is a pointer (else None: a split file)."""
    raw = found.values.get(POINTER_JSON)
    try:
        document = None if raw is None else json.loads(raw)
    except (ValueError, RecursionError):
        return None  # a split file's damaged meta: decode_meta names it
    return decode_pointer(raw, found.url) if raw is not None and is_pointer_document(document) else None


@dataclass(frozen=True)
class CacheSettings:
    """Where a dataset keeps the records it fetched (None: nowhere), and how many bytes at most."""

    folder: str | None
    limit: int


def open_remote_revision(
    found: RemoteValues,
    pointer: dict[str, Any],
    revision: int | None,
    settings: RemoteSettings,
    cache: CacheSettings,
) -> Opened:
    """Revision ``revision`` (None: the current one) of the pointer object ``found``: its data files
    opened by content id, its index composed as the local reader composes it (reader/revisions.py)."""
    url = found.url
    entry = entry_of(pointer, revision, url)
    opened = decode_revision(found, entry, url)
    files = [_opened_file(url, opened.number, file, settings) for file in opened.files]
    meta = composed_meta(opened, [file.meta for file in files])
    sources = [_records_of(file, settings, cache) for file in files]
    records = RemoteRevisionRecords(opened.order, sources)
    return Opened(records, meta.document, meta.classes, meta.paths, meta.targets(), meta, opened.number)


@dataclass(frozen=True)
class RemoteSplit:
    """What ``info URL`` shows of a split object: a split file's meta, or a pointer's current revision's."""

    size: int  # of the file, or of the revision's data files together
    etag: str | None  # of the file or of the pointer
    meta: Meta
    revision: int | None


def remote_split(url: str, settings: RemoteSettings) -> RemoteSplit:
    """The meta of the split at ``url`` by ranged reads (no record read): a file's, or the current revision's."""
    found = read_values(url, settings)
    pointer = pointer_of(found)
    if pointer is None:
        remote = open_remote(url, settings, found)
        return RemoteSplit(remote.size, remote.etag, remote.meta, None)
    opened = decode_revision(found, entry_of(pointer, None, url), url)
    files = [_opened_file(url, opened.number, file, settings) for file in opened.files]
    meta = composed_meta(opened, [file.meta for file in files])
    return RemoteSplit(sum(file.size for file in files), found.etag, meta, opened.number)


def _opened_file(pointer: str, number: int, file: DataFile, settings: RemoteSettings) -> RemoteFile:
    """Data file ``file`` of revision ``number`` opened and checked by its content id."""
    url = data_file_url(pointer, file.id)
    try:
        remote = open_remote(url, settings)
    except NoSuchObjectError:
        raise MissingDataFileError(missing_message(pointer, number, [url])) from None
    if remote.meta.label_lists is not None or remote.meta.fields:
        raise FormatError(f"{url}: a multi-label or field file cannot be a data file of a split of revisions yet")
    found = content_id(remote.meta)
    if found != file.id:
        raise FileChangedError(
            f"{url}: holds content {found[:12]}, not {file.id[:12]} that revision={number} of {pointer} names by "
            "this object's name: the object was replaced by another. Upload the split's data files again."
        )
    return remote


def _records_of(remote: RemoteFile, settings: RemoteSettings, cache: CacheSettings) -> RemoteRecords:
    """The record source of one data file, pinned to the ETag it had at open."""
    meta: Meta = remote.meta
    kept = None if cache.folder is None else RecordCache(cache.folder, remote.url, remote.etag, cache.limit)
    records = RemoteRecords(
        remote.url, remote.etag, remote.offsets, remote.lengths, meta.crc32, meta.storage, settings, kept
    )
    records.size = remote.size
    return records


class RemoteRevisionRecords:
    """The records of one revision read from a URL: sample ``i`` is record ``order[i].record`` of data
    file ``order[i].file``, read by that file's RemoteRecords (ETag-pinned, CRC-checked); picklable."""

    legacy = False
    by_offset = True

    def __init__(self, order: np.ndarray, files: list[RemoteRecords]) -> None:
        self.files_of = np.ascontiguousarray(order["file"])
        self.records_of = np.ascontiguousarray(order["record"])
        self.files = files

    def read(self, positions: list[int], decode: str, begin: Any, targets: Sequence[Any]) -> list[tuple[Any, Any]]:
        """Decoded images and targets of ``positions``, each data file's records fetched together."""
        wanted = np.asarray(positions, dtype=np.int64)
        files, records = self.files_of[wanted], self.records_of[wanted]
        batch: list[Any] = [None] * len(positions)
        for index in np.unique(files).tolist():
            slots = np.flatnonzero(files == index).tolist()
            part = self.files[index].read(records[slots].tolist(), decode, begin, NoTargets())
            for slot, (image, _) in zip(slots, part, strict=True):
                batch[slot] = (image, targets[positions[slot]])
        return batch

    @property
    def size(self) -> int:
        """The bytes of the revision's data files together (``verify``'s ``file_bytes``)."""
        return sum(file.size or 0 for file in self.files)

    def fetch(self, positions: list[int]) -> dict[int, bytes]:
        """The stored bytes of ``positions``, unchecked (``verify`` checks them), each file's fetched together."""
        wanted = np.asarray(positions, dtype=np.int64)
        files, records = self.files_of[wanted], self.records_of[wanted]
        found: dict[int, bytes] = {}
        for index in np.unique(files).tolist():
            slots = np.flatnonzero(files == index).tolist()
            fetched = self.files[index].fetch(records[slots].tolist())
            found.update({positions[slot]: fetched[int(records[slot])] for slot in slots})
        return found

    def get_bytes(self, index: int, begin: Any) -> bytes:
        return self.files[int(self.files_of[index])].get_bytes(int(self.records_of[index]), begin)
