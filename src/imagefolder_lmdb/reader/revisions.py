"""The pinned reader of a split of revisions (docs/FORMAT.md, version 5): ``open_if_revisions`` opens
the revision a dataset asks for (default: the pointer's current one) and ``RevisionRecords`` reads its
samples from its data files, found by content id. The pointer is read once, when the dataset is made:
a DataLoader worker (fork, spawn, forkserver) gets the revision with the dataset and reopens only its
data files, so a reader keeps the revision it opened for its life, whatever the pointer names later."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import lmdb
import numpy as np

from imagefolder_lmdb.reader.file_checks import LmdbReadTxn
from imagefolder_lmdb.reader.format import FormatError, Meta, decode_meta
from imagefolder_lmdb.reader.handles import begin_read, forget_if_replaced, guarded, opened_token, shared_env
from imagefolder_lmdb.reader.identity import FileChangedError, LocalFileToken, changed_message, content_id
from imagefolder_lmdb.reader.records import Begin, Opened, RecordSource
from imagefolder_lmdb.reader.records_located import v1_records
from imagefolder_lmdb.reader.revision_format import (
    POINTER_JSON,
    DataFile,
    Revision,
    data_file_path,
    data_folder,
    decode_pointer,
    decode_revision,
    entry_of,
    is_pointer_document,
)


class MissingDataFileError(FileNotFoundError):
    """A data file of the revision a dataset reads is gone (``gc``, a pointer copied without its folder)."""


class OpenOptions(Protocol):
    """What opening a revision takes from the dataset (LMDBReader's attributes)."""

    lock: bool
    max_readers: int | None
    crc_check: bool


def missing_message(pointer: str, number: int, missing: list[str]) -> str:
    """One line naming the missing data files of revision ``number`` and the fix."""
    return (
        f"{pointer}: revision={number} reads data files that are not there: {', '.join(missing)} (a split of "
        f"revisions is the pointer {os.path.basename(pointer)} and its folder {data_folder(pointer)}/: copy both; "
        "`imagefolder-lmdb gc` removes only files no kept revision names). Copy the folder beside the pointer, "
        "or open a revision whose files are there (LMDBDataset(path) opens the current one)."
    )


def opened_env(path: str) -> lmdb.Environment:
    """This process's environment of the file now at ``path`` (the commands' and the writer's way in: LMDB
    opens a file once per process, and a reader in the same process may have it open already)."""
    path = os.path.realpath(path)  # the name a dataset opens it by (its realpath)
    forget_if_replaced(path)
    return shared_env(path)


def pointer_document(path: str, env: lmdb.Environment, lock: bool) -> dict[str, Any] | None:
    """The pointer's meta/json if the file at ``path`` is a pointer, else None (a split file, or
    anything its own reader names)."""
    with guarded(env.begin(), path, lock) as txn:
        raw = txn.get(POINTER_JSON)
        raw = None if raw is None else bytes(raw)
    try:
        document = None if raw is None else json.loads(raw)
    except (ValueError, RecursionError):  # a nesting bomb too
        return None  # a split file's damaged meta: its own reader names it
    return decode_pointer(raw, path) if raw is not None and is_pointer_document(document) else None


def refuse_if_pointer(path: str, env: lmdb.Environment, lock: bool, opened: str) -> None:
    """FileChangedError if a dataset that opened a single split file finds a pointer at its path: the
    split changed since (its file now lies in the data folder; a new dataset reads the new revision)."""
    pointer = pointer_document(path, env, lock)
    if pointer is not None:
        found = f"a split of revisions at revision {pointer['revision']}, its data files in {data_folder(path)}/"
        raise FileChangedError(changed_message(path, opened, found))


def open_if_revisions(
    path: str, env: lmdb.Environment, options: OpenOptions, revision: int | None = None
) -> Opened | None:
    """Revision ``revision`` (None: the current one) of the pointer at ``path``; None when ``path`` is a
    split file (ValueError if a revision was asked of one)."""
    pointer = pointer_document(path, env, options.lock)
    if pointer is None:
        if revision is not None:
            raise ValueError(
                f"revision={revision}: {path} is a single split file, not a split of revisions (it never "
                "changed since its conversion); open it without revision="
            )
        return None
    entry = entry_of(pointer, revision, path)
    with guarded(env.begin(), path, options.lock) as txn:
        opened = decode_revision(txn, entry, path)
    return open_revision(path, opened, options)


def open_revision(path: str, revision: Revision, options: OpenOptions) -> Opened:
    """Revision ``revision`` of the pointer at ``path``: its data files opened and checked, its index composed."""
    places = [data_file_path(path, file.id) for file in revision.files]
    missing = [place for place in places if not os.path.isfile(place)]
    if missing:
        raise MissingDataFileError(missing_message(path, revision.number, missing))
    files = [
        _opened_file(path, revision.number, file, place, options)
        for file, place in zip(revision.files, places, strict=True)
    ]
    meta = composed_meta(revision, [file.meta for file in files])
    records = RevisionRecords(path, revision.number, revision.order, files, options)
    for file in files:
        file.meta = None  # the composed meta holds what the dataset needs; workers get no copy of each file's
    return Opened(records, meta.document, meta.classes, meta.paths, meta.targets(), meta, revision.number)


@dataclass
class _DataFileSource:
    """One data file of a revision: where it lies, its content id, the file this process opened and its records."""

    path: str
    id: str
    token: LocalFileToken | None
    source: RecordSource
    meta: Meta | None = None


def _opened_file(pointer: str, number: int, file: DataFile, place: str, options: OpenOptions) -> _DataFileSource:
    """A data file opened and checked by its content id (FileChangedError for other content)."""
    forget_if_replaced(place)  # the file now at the name, as a dataset opens its path (a copy put back)
    try:
        env = shared_env(place, lock=options.lock, max_readers=options.max_readers)
    except FileNotFoundError:
        raise MissingDataFileError(missing_message(pointer, number, [place])) from None
    with guarded(env.begin(), place, options.lock) as txn:
        meta = decode_meta(txn, place)
    if meta.label_lists is not None or meta.fields:
        raise FormatError(f"{place}: a multi-label or field file cannot be a data file of a split of revisions yet")
    found = content_id(meta)
    if found != file.id:
        raise FileChangedError(
            f"{place}: holds content {found[:12]}, not {file.id[:12]} that revision={number} of {pointer} names by "
            "this file's name: the file was replaced by another. Copy the split's folder again from its original."
        )
    source = v1_records(place, env, meta, options.lock, options.crc_check)
    return _DataFileSource(place, file.id, opened_token(place), source, meta)


def composed_meta(revision: Revision, metas: Sequence[Meta | None]) -> Meta:
    """The meta of the single file the revision flattens to: each sample's columns taken from its record."""
    order, n = revision.order, revision.length
    columns: dict[str, np.ndarray] = {
        "sizes": np.zeros((n, 2), np.uint32),
        "crc32": np.zeros(n, np.uint32),
        "storage": np.zeros(n, np.uint8),
        "source_bytes": np.zeros(n, np.uint64),
    }
    paths = np.empty(n, dtype=object)
    for index, meta in enumerate(metas):
        assert meta is not None
        mask = order["file"] == index
        records = order["record"][mask].astype(np.int64)
        for name, column in columns.items():
            column[mask] = getattr(meta, name)[records]
        paths[mask] = np.asarray(meta.paths, dtype=object)[records]
    for position, path in revision.moved.items():
        paths[position] = path
    document = dict(revision.document)
    return Meta(
        document=document,
        labels=np.ascontiguousarray(revision.labels, dtype=np.int32),
        sizes=columns["sizes"],
        crc32=columns["crc32"],
        storage=columns["storage"],
        source_bytes=columns["source_bytes"],
        paths=paths.tolist(),
    )


class NoTargets(Sequence[Any]):
    """The targets handed to a data file's source: the revision's own replace them (see RevisionRecords.read;
    a URL's revision too: remote/revisions.py)."""

    def __getitem__(self, index: Any) -> Any:
        return None

    def __len__(self) -> int:
        return 0


class RevisionRecords:
    """The records of one revision: sample ``i`` is record ``order[i].record`` of data file
    ``order[i].file``, read by that file's own source (by offset where located, CRC-checked). Each
    process checks a data file when it first reads it: the same content (its content id) or a one-line
    error, a missing file included; never another file's bytes."""

    legacy = False

    def __init__(
        self,
        pointer: str,
        revision: int,
        order: np.ndarray,
        files: list[_DataFileSource],
        options: OpenOptions,
    ) -> None:
        self.pointer, self.revision = pointer, revision
        self.files_of = np.ascontiguousarray(order["file"])
        self.records_of = np.ascontiguousarray(order["record"])
        self.files = files
        self.options = OpenSettings(options.lock, options.max_readers, options.crc_check)
        self.lock, self.max_readers = options.lock, options.max_readers

    @property
    def by_offset(self) -> bool:
        return all(file.source.by_offset for file in self.files)

    def _begin(self, file: _DataFileSource) -> Begin:
        def begin() -> LmdbReadTxn:
            env = shared_env(file.path, lock=self.lock, max_readers=self.max_readers)
            return guarded(begin_read(env, file.path), file.path, self.lock)

        return begin

    def _source(self, index: int) -> tuple[RecordSource, Begin]:
        """Data file ``index``'s source, the file checked in this process (opened on first use)."""
        file = self.files[index]
        token = opened_token(file.path)
        if token is None:  # not open in this process yet: a worker, a new epoch's workers
            try:
                shared_env(file.path, lock=self.lock, max_readers=self.max_readers)
            except FileNotFoundError:
                raise MissingDataFileError(missing_message(self.pointer, self.revision, [file.path])) from None
            token = opened_token(file.path)
        if token != file.token:  # another file at the name (a copy): the same content, or an error
            reopened = _opened_file(self.pointer, self.revision, DataFile(file.id, 0, 0), file.path, self.options)
            file.token, file.source = reopened.token, reopened.source
        return file.source, self._begin(file)

    def read(self, positions: list[int], decode: str, begin: Begin, targets: Sequence[Any]) -> list[tuple[Any, Any]]:
        """Decoded images and targets of ``positions``, each data file's records read together."""
        if len(positions) == 1:  # ds[i]: spared the array work of a batch
            source, begin_file = self._source(self.files_of.item(positions[0]))
            image = source.read([self.records_of.item(positions[0])], decode, begin_file, NoTargets())[0][0]
            return [(image, targets[positions[0]])]
        wanted = np.asarray(positions, dtype=np.int64)
        files, records = self.files_of[wanted], self.records_of[wanted]
        batch: list[Any] = [None] * len(positions)
        for index in np.unique(files).tolist():
            slots = np.flatnonzero(files == index).tolist()
            source, begin_file = self._source(index)
            part = source.read(records[slots].tolist(), decode, begin_file, NoTargets())
            for slot, (image, _) in zip(slots, part, strict=True):
                batch[slot] = (image, targets[positions[slot]])
        return batch

    def get_bytes(self, index: int, begin: Begin) -> bytes:
        source, begin_file = self._source(int(self.files_of[index]))
        return source.get_bytes(int(self.records_of[index]), begin_file)


@dataclass
class OpenSettings:
    lock: bool
    max_readers: int | None
    crc_check: bool = True
