"""The records of one revision of a split (``RevisionRecords``), read as fast as one file's (issues 58, 60).

Opening composes, for every sample, where its bytes lie: the data file, the offset and length (``Located``).
A read is then what a one-file dataset's is (records_located.LocatedRecords): one array lookup and one pread
on this process's descriptor of that data file, the bytes checked against the sample's CRC-32. The
descriptors' numbers are kept in a list, valid while handles.DESCRIPTORS_GENERATION holds the object seen
when they were taken (closing or forgetting a descriptor, a fork, a copy sent to a worker: another), so a
read neither looks a path up nor compares identities. A data file is checked at its first read in each
process and generation: the file at its name is the one opened, or one of the same content (a copy,
opened afresh), else FileChangedError; gone, MissingDataFileError; never another file's bytes. Files read
through LMDB (``lock=True``, locations that do not fit) keep their own source, checked at every read."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from imagefolder_lmdb.reader.codec import codec_of
from imagefolder_lmdb.reader.format import DamagedRecordError, checksum, damaged_record_message
from imagefolder_lmdb.reader.handles import DESCRIPTORS_GENERATION, opened_token, shared_env, shared_fd
from imagefolder_lmdb.reader.identity import FileChangedError
from imagefolder_lmdb.reader.offset_reads import fetch_record
from imagefolder_lmdb.reader.records import Begin
from imagefolder_lmdb.reader.records_located import located_reads
from imagefolder_lmdb.reader.revision_data_files import (
    DataFileSource,
    MissingDataFileError,
    OpenOptions,
    missing_message,
    opened_file,
)
from imagefolder_lmdb.reader.revision_format import DataFile

if TYPE_CHECKING:
    import torch


class NoTargets(Sequence[Any]):
    """The targets handed to a data file's source: the revision's own replace them (see RevisionRecords.read;
    a URL's revision too: remote/revisions.py)."""

    def __getitem__(self, index: Any) -> Any:
        return None

    def __len__(self) -> int:
        return 0


_NO_TARGETS = NoTargets()


@dataclass
class OpenSettings:
    lock: bool
    max_readers: int | None
    crc_check: bool = True


@dataclass
class Located:
    """Where each sample of a revision lies: offset (0: read through its file's LMDB source) and length in
    its data file, and what a read checks and decodes by (its CRC-32, None without crc_check; its storage code)."""

    offsets: np.ndarray  # uint64[n]
    lengths: np.ndarray  # uint32[n]
    crc32: np.ndarray | None  # uint32[n], the revision's composed meta/crc32
    storage: np.ndarray  # uint8[n]


def located_places(files: Sequence[DataFileSource], at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The offset and length of each sample, ``at`` being its record's place in the files' records put end
    to end (one gather, whatever the number of files); 0 for the records of files read through LMDB."""
    if not files:
        return np.zeros(len(at), np.uint64), np.zeros(len(at), np.uint32)
    offsets = np.concatenate([_column(file, file.offsets, np.uint64) for file in files])
    lengths = np.concatenate([_column(file, file.lengths, np.uint32) for file in files])
    return np.ascontiguousarray(offsets[at]), np.ascontiguousarray(lengths[at])


def _column(file: DataFileSource, values: np.ndarray | None, dtype: type) -> np.ndarray:
    if values is not None:
        return np.asarray(values, dtype=dtype)
    assert file.meta is not None
    return np.zeros(file.meta.length, dtype)


class _DataFiles:
    """The data files of one revision and the places of its samples in them, each file checked at its
    first read in a process (and a generation of its descriptors: handles.DESCRIPTORS_GENERATION)."""

    def __init__(
        self,
        pointer: str,
        revision: int,
        order: np.ndarray,
        files: list[DataFileSource],
        options: OpenOptions,
        at: Located,
    ) -> None:
        self.pointer, self.revision = pointer, revision
        self.files_of = np.ascontiguousarray(order["file"])
        self.records_of = np.ascontiguousarray(order["record"])
        self.files = files
        self.options = OpenSettings(options.lock, options.max_readers, options.crc_check)
        self.lock, self.max_readers = options.lock, options.max_readers
        # the composed places, each an attribute of its own: a read looks up no more than a one-file read
        self._offsets, self._lengths, self._crc32, self._storage = at.offsets, at.lengths, at.crc32, at.storage
        self._forget_descriptors()

    def _forget_descriptors(self) -> None:
        """No descriptor known in this process (yet): each file is checked at its next first read."""
        self._opening = threading.Lock()
        self._fds = [-1] * len(self.files)  # this process's descriptor of each located data file, -1: not yet
        self._generation: object | None = None  # the handles' generation _fds were taken in

    def __getstate__(self) -> dict[str, Any]:
        # descriptor numbers and the lock belong to this process; a worker takes its own
        return {key: value for key, value in self.__dict__.items() if key not in ("_opening", "_fds", "_generation")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._forget_descriptors()

    def _fd(self, index: int) -> int:
        """This process's descriptor of data file ``index`` (-1: a file read through LMDB)."""
        fd = self._fds[index] if self._generation is DESCRIPTORS_GENERATION[0] else -1
        return fd if fd >= 0 else self._first_read(index)

    def _first_read(self, index: int) -> int:
        """Data file ``index``'s descriptor, the file at its name checked: the one opened, or a copy of the
        same content (opened afresh, its places taken), else FileChangedError. -1: read through LMDB."""
        if not self.files[index].located:
            return -1
        with self._opening:
            if self._generation is not DESCRIPTORS_GENERATION[0]:
                self._fds = [-1] * len(self.files)  # a new list first: a reader seeing the new generation sees it
                self._generation = DESCRIPTORS_GENERATION[0]
            fd = self._fds[index]
            if fd < 0:
                fd = self._checked_descriptor(index)
                self._fds[index] = fd
            return fd

    def _checked_descriptor(self, index: int) -> int:
        file = self.files[index]
        for _ in range(3):  # a file replaced again while it is checked: checked again
            fd, identity = self._descriptor(file)
            if identity == file.identity:
                return fd
            file = self._reopened(index)  # another file at the name: the same content, or an error
            if not file.located:
                return -1
        raise FileChangedError(
            f"{file.path}: replaced again and again while this process checked it (revision={self.revision} of "
            f"{self.pointer}): read it once its data folder is no longer being written"
        )

    def _descriptor(self, file: DataFileSource) -> tuple[int, tuple[int, int]]:
        try:
            return shared_fd(file.path)
        except FileNotFoundError:
            raise MissingDataFileError(missing_message(self.pointer, self.revision, [file.path])) from None

    def _reopened(self, index: int) -> DataFileSource:
        """Data file ``index`` as now found at its name (a copy of its content: its own places; else an error)."""
        file = self.files[index]
        reopened = opened_file(self.pointer, self.revision, DataFile(file.id, 0, 0), file.path, self.options)
        positions = np.flatnonzero(self.files_of == index)
        records = self.records_of[positions].astype(np.int64)
        offsets, lengths = self._offsets.copy(), self._lengths.copy()
        offsets[positions] = 0 if reopened.offsets is None else reopened.offsets[records]
        lengths[positions] = 0 if reopened.lengths is None else reopened.lengths[records]
        self._offsets, self._lengths = offsets, lengths
        reopened.meta = reopened.offsets = reopened.lengths = None  # the revision's arrays hold what a read needs
        self.files[index] = reopened
        return reopened

    def _source(self, index: int) -> DataFileSource:
        """Data file ``index`` to be read through its own source: one read through LMDB checks, at each read,
        that this process's environment of it opened the file this dataset opened (else _first_read's check)."""
        file = self.files[index]
        if file.located:
            self._fd(index)
            return self.files[index]
        token = opened_token(file.path)
        if token is not None and token == file.token:
            return file
        try:
            shared_env(file.path, lock=self.lock, max_readers=self.max_readers)
        except FileNotFoundError:
            raise MissingDataFileError(missing_message(self.pointer, self.revision, [file.path])) from None
        if opened_token(file.path) == file.token:
            return file
        with self._opening:
            self._reopened(index)
        return self.files[index]


class RevisionRecords(_DataFiles):
    """The records of one revision: sample ``i`` is record ``records_of[i]`` of data file ``files_of[i]``,
    read by offset where located (``located_places``), else by that file's own source; CRC-checked."""

    legacy = False

    @property
    def by_offset(self) -> bool:
        return all(file.located or file.source.by_offset for file in self.files)

    def read(self, positions: list[int], decode: str, begin: Begin, targets: Sequence[Any]) -> list[tuple[Any, Any]]:
        """Decoded images and targets of ``positions``: one pread each where located (a cold batch hinted
        at once: located_reads), the others through their data file's LMDB source."""
        if len(positions) == 1:  # ds[i], kept short: per-read work is what a one-file read has
            position = positions[0]
            index = self.files_of.item(position)
            fd = self._fds[index] if self._generation is DESCRIPTORS_GENERATION[0] else -1
            if fd < 0:
                fd = self._first_read(index)
            offset = self._offsets.item(position)  # after the descriptor: a reopened copy's offsets
            if offset and fd >= 0:
                data = fetch_record(fd, offset, self._lengths.item(position), decode)
                return [(self._decoded(data, position, decode), targets[position])]
        return self._read_batch(positions, decode, targets)

    def _read_batch(self, positions: list[int], decode: str, targets: Sequence[Any]) -> list[tuple[Any, Any]]:
        wanted = np.asarray(positions, dtype=np.int64)
        fds = self._descriptors(self.files_of[wanted].tolist())
        offsets, lengths = self._offsets[wanted].tolist(), self._lengths[wanted].tolist()
        batch: list[Any] = []
        unlocated: list[int] = []
        for slot, data in enumerate(located_reads(fds, offsets, lengths, decode)):
            position = positions[slot]
            if data is None:
                batch.append(None)
                unlocated.append(slot)
                continue
            batch.append((self._decoded(data, position, decode), targets[position]))
        if unlocated:
            self._read_through_lmdb([positions[slot] for slot in unlocated], decode, targets, unlocated, batch)
        return batch

    def _descriptors(self, files: list[int]) -> list[int]:
        """This process's descriptor of each of ``files`` (-1 for a file read through LMDB)."""
        fds = {index: self._fd(index) for index in set(files)}
        return [fds[index] for index in files]

    def _read_through_lmdb(
        self, positions: list[int], decode: str, targets: Sequence[Any], slots: list[int], batch: list[Any]
    ) -> None:
        """``positions`` read by their data files' own sources, each file's together, put in ``batch[slots]``."""
        wanted = np.asarray(positions, dtype=np.int64)
        files, records = self.files_of[wanted], self.records_of[wanted]
        for index in np.unique(files).tolist():
            taken = np.flatnonzero(files == index).tolist()
            file = self._source(index)
            part = file.source.read(records[taken].tolist(), decode, file.begin, _NO_TARGETS)
            for at, (image, _) in zip(taken, part, strict=True):
                batch[slots[at]] = (image, targets[positions[at]])

    def get_bytes(self, index: int, begin: Begin) -> bytes:
        fd = self._fd(self.files_of.item(index))
        offset = self._offsets.item(index)
        if not (offset and fd >= 0):
            file = self._source(self.files_of.item(index))
            return file.source.get_bytes(self.records_of.item(index), file.begin)
        data = fetch_record(fd, offset, self._lengths.item(index), "bytes")
        self._check(cast(bytes, data), index)
        return cast(bytes, data)

    def _decoded(self, data: bytes | torch.Tensor, position: int, decode: str) -> Any:
        """Sample ``position``'s bytes as read by offset (a tensor for decode="tensor"), checked, decoded."""
        stored = cast("torch.Tensor", data).numpy().data if decode == "tensor" else cast(bytes, data)
        self._check(stored, position)
        return codec_of(self._storage.item(position)).decode(data, decode)

    def _check(self, stored: bytes | memoryview, position: int) -> None:
        crc32 = self._crc32
        if crc32 is not None and checksum(stored) != crc32.item(position):
            path = self.files[self.files_of.item(position)].path
            raise DamagedRecordError(damaged_record_message(path, self.records_of.item(position)))
