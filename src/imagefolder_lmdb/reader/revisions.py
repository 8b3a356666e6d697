"""The pinned reader of a split of revisions (docs/FORMAT.md, version 5): ``open_if_revisions`` opens
the revision a dataset asks for (default: the pointer's current one) and ``RevisionRecords`` reads its
samples from its data files, found by content id. The pointer is read once, when the dataset is made:
a DataLoader worker (fork, spawn, forkserver) gets the revision with the dataset and reopens only its
data files, so a reader keeps the revision it opened for its life, whatever the pointer names later."""

from __future__ import annotations

import json
import operator
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import lmdb
import numpy as np

from imagefolder_lmdb.reader.data_files import fd_token, read_located
from imagefolder_lmdb.reader.file_checks import LmdbReadTxn
from imagefolder_lmdb.reader.format import FormatError, Meta, decode_meta
from imagefolder_lmdb.reader.handles import (
    begin_read,
    forget_if_replaced,
    guarded,
    opened_fd,
    opened_token,
    shared_env,
    shared_fd,
)
from imagefolder_lmdb.reader.identity import FileChangedError, LocalFileToken, changed_message, content_id
from imagefolder_lmdb.reader.offset_reads import CAN_PREAD
from imagefolder_lmdb.reader.records import Begin, Opened, RecordSource
from imagefolder_lmdb.reader.records_lmdb import LmdbRecords
from imagefolder_lmdb.reader.records_located import LocatedRecords, v1_records
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


class _FileBegin:
    """Opens a read transaction of a data file through LMDB (its records read through it: files without
    fitting locations, ``lock=True``); a class, not a closure, so that it goes to workers with the dataset."""

    def __init__(self, path: str, lock: bool, max_readers: int | None) -> None:
        self.path, self.lock, self.max_readers = path, lock, max_readers

    def __call__(self) -> LmdbReadTxn:
        env = shared_env(self.path, lock=self.lock, max_readers=self.max_readers)
        return guarded(begin_read(env, self.path), self.path, self.lock)


@dataclass
class _DataFileSource:
    """One data file of a revision: where it lies, its content id, the file opened and its records. A
    located file (``located``) is read by offset with this process's one descriptor of it (shared_fd, on
    its first read); another through its LMDB environment (``begin``), as a split file is."""

    path: str
    id: str
    token: LocalFileToken | None
    source: RecordSource
    begin: _FileBegin
    located: bool = False
    meta: Meta | None = None
    #: (device, inode) of the file opened: what shared_fd records of its descriptor (compared at every read)
    identity: tuple[int, int] | None = field(init=False)

    def __post_init__(self) -> None:
        self.identity = None if self.token is None else (self.token.device, self.token.inode)


def _opened_file(pointer: str, number: int, file: DataFile, place: str, options: OpenOptions) -> _DataFileSource:
    """A data file opened and checked by its content id (FileChangedError for other content): by plain
    reads, keeping no descriptor, where its records are located (reader/data_files.py); else by LMDB."""
    forget_if_replaced(place)  # the file now at the name, as a dataset opens its path (a copy put back)
    begin = _FileBegin(place, options.lock, options.max_readers)
    try:  # lock=True asks for LMDB's reader protocol, which reads by offset do not follow (v1_records)
        located = read_located(place) if CAN_PREAD and not options.lock else None
        if located is None:
            return _through_lmdb(pointer, number, file, place, options, begin)
    except FileNotFoundError:
        raise MissingDataFileError(missing_message(pointer, number, [place])) from None
    meta, token = located.meta, located.token
    _check_content(meta, pointer, number, file, place)
    records = LmdbRecords(place, meta.storage, meta.crc32 if options.crc_check else None)
    source = LocatedRecords(records, located.offsets, located.lengths, (token.device, token.inode))
    return _DataFileSource(place, file.id, token, source, begin, located=True, meta=meta)


def _through_lmdb(
    pointer: str, number: int, file: DataFile, place: str, options: OpenOptions, begin: _FileBegin
) -> _DataFileSource:
    """A data file whose records are read through its LMDB environment, opened here."""
    env = shared_env(place, lock=options.lock, max_readers=options.max_readers)
    with guarded(env.begin(), place, options.lock) as txn:
        meta = decode_meta(txn, place)
    _check_content(meta, pointer, number, file, place)
    source = v1_records(place, env, meta, options.lock, options.crc_check)
    return _DataFileSource(place, file.id, opened_token(place), source, begin, meta=meta)


def _check_content(meta: Meta, pointer: str, number: int, file: DataFile, place: str) -> None:
    """FormatError or FileChangedError unless the data file holds what the revision names by its name."""
    if meta.label_lists is not None or meta.fields:
        raise FormatError(f"{place}: a multi-label or field file cannot be a data file of a split of revisions yet")
    found = content_id(meta)
    if found != file.id:
        raise FileChangedError(
            f"{place}: holds content {found[:12]}, not {file.id[:12]} that revision={number} of {pointer} names by "
            "this file's name: the file was replaced by another. Copy the split's folder again from its original."
        )


def composed_meta(revision: Revision, metas: Sequence[Meta | None]) -> Meta:
    """The meta of the single file the revision flattens to: each sample's columns taken from its record
    (one gather over the data files' columns put end to end, whatever their number)."""
    order = revision.order
    known = [meta for meta in metas if meta is not None]
    assert len(known) == len(metas)
    starts = np.cumsum([0] + [meta.length for meta in known[:-1]], dtype=np.int64)
    at = starts[order["file"].astype(np.int64)] + order["record"].astype(np.int64) if known else order["record"]
    columns = {name: _gathered(known, name, dtype, at) for name, dtype in COLUMNS.items()}
    paths = _gathered_paths([meta.paths for meta in known], at)
    for position, path in revision.moved.items():
        paths[position] = path
    return Meta(
        document=dict(revision.document),
        labels=np.ascontiguousarray(revision.labels, dtype=np.int32),
        sizes=columns["sizes"],
        crc32=columns["crc32"],
        storage=columns["storage"],
        source_bytes=columns["source_bytes"],
        paths=paths,
    )


#: The per-record columns of a data file that a revision's meta takes, with their types.
COLUMNS = {"sizes": np.uint32, "crc32": np.uint32, "storage": np.uint8, "source_bytes": np.uint64}


def _gathered(metas: Sequence[Meta], name: str, dtype: type, at: np.ndarray) -> np.ndarray:
    if not metas:
        return np.zeros((0, 2) if name == "sizes" else 0, dtype)
    return np.concatenate([np.asarray(getattr(meta, name), dtype=dtype) for meta in metas])[at]


def _gathered_paths(per_file: list[list[str]], at: np.ndarray) -> list[str]:
    """The names at ``at`` of the files' names put end to end, taken at C speed (itemgetter)."""
    joined = [name for names in per_file for name in names]
    if len(at) < 2:
        return [joined[position] for position in at.tolist()]
    return list(operator.itemgetter(*at.tolist())(joined))


class NoTargets(Sequence[Any]):
    """The targets handed to a data file's source: the revision's own replace them (see RevisionRecords.read;
    a URL's revision too: remote/revisions.py)."""

    def __getitem__(self, index: Any) -> Any:
        return None

    def __len__(self) -> int:
        return 0


_NO_TARGETS = NoTargets()


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

    def _source(self, index: int) -> _DataFileSource:
        """Data file ``index``, the file at its name checked in this process at its first read here (a
        worker, a new epoch's workers, after a fork); every later read finds its descriptor open."""
        file = self.files[index]
        if file.located:
            opened = opened_fd(file.path)
            if opened is None or opened[1] != file.identity:
                return self._first_read(index, file, self._descriptor_token(file))
            return file
        token = opened_token(file.path)
        return file if token is not None and token == file.token else self._first_read(index, file, None)

    def _descriptor_token(self, file: _DataFileSource) -> LocalFileToken:
        """The token of the file this process's one descriptor of ``file`` reads, opened here if need be."""
        try:
            return fd_token(shared_fd(file.path)[0])
        except FileNotFoundError:
            raise MissingDataFileError(missing_message(self.pointer, self.revision, [file.path])) from None

    def _first_read(self, index: int, file: _DataFileSource, token: LocalFileToken | None) -> _DataFileSource:
        """``file`` as this process finds it at its name: the file opened, or another with the same content
        (a copy, opened afresh) or an error. ``token``: of a located file's descriptor; else its environment is
        opened here."""
        if token is None:
            try:
                shared_env(file.path, lock=self.lock, max_readers=self.max_readers)
            except FileNotFoundError:
                raise MissingDataFileError(missing_message(self.pointer, self.revision, [file.path])) from None
            token = opened_token(file.path)
        if token == file.token:
            return file
        reopened = _opened_file(self.pointer, self.revision, DataFile(file.id, 0, 0), file.path, self.options)
        reopened.meta = None  # the revision's composed meta holds what a read needs
        self.files[index] = reopened
        return reopened

    def read(self, positions: list[int], decode: str, begin: Begin, targets: Sequence[Any]) -> list[tuple[Any, Any]]:
        """Decoded images and targets of ``positions``, each data file's records read together."""
        if len(positions) == 1:  # ds[i]: spared the array work of a batch
            position = positions[0]
            file = self._source(self.files_of.item(position))
            image = file.source.read([self.records_of.item(position)], decode, file.begin, _NO_TARGETS)[0][0]
            return [(image, targets[position])]
        wanted = np.asarray(positions, dtype=np.int64)
        files, records = self.files_of[wanted], self.records_of[wanted]
        batch: list[Any] = [None] * len(positions)
        for index in np.unique(files).tolist():
            slots = np.flatnonzero(files == index).tolist()
            file = self._source(index)
            part = file.source.read(records[slots].tolist(), decode, file.begin, _NO_TARGETS)
            for slot, (image, _) in zip(slots, part, strict=True):
                batch[slot] = (image, targets[positions[slot]])
        return batch

    def get_bytes(self, index: int, begin: Begin) -> bytes:
        file = self._source(self.files_of.item(index))
        return file.source.get_bytes(self.records_of.item(index), file.begin)


@dataclass
class OpenSettings:
    lock: bool
    max_readers: int | None
    crc_check: bool = True
