"""v1 records read by offset (``LocatedRecords``): one pread per record at the offsets of
meta/locations, page-cache probes and fadvise hints for cold batches; records not located, and every
record of a file whose locations do not fit, go to ``LmdbRecords``."""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, cast

import lmdb
import numpy as np

from imagefolder_lmdb.reader.format import Meta, check_record
from imagefolder_lmdb.reader.handles import shared_fd
from imagefolder_lmdb.reader.offset_reads import CAN_ADVISE, CAN_PREAD, CAN_PROBE, fetch_record, pread_bytes
from imagefolder_lmdb.reader.record_locations import LocationsWarning, locations_problem
from imagefolder_lmdb.reader.records import Begin
from imagefolder_lmdb.reader.records_lmdb import LmdbRecords

if TYPE_CHECKING:
    import torch


# py-lmdb touches every 4 KB page of a value before returning it, and on a cold cache each touch
# is a synchronous read of its own. With the offsets the writer recorded, a record is one read,
# and a batch's ranges are all requested from the kernel before the first is read, so the disk
# (or the network filesystem) sees one deep queue. The offsets are trusted only after checking,
# when the file is opened, that they were taken for this very file (v1_records).


#: A read slower than this, plus the time to copy its bytes into fresh memory, may have waited for
#: the disk; a one-byte probe of the next record then decides. Generous, so that cached reads rarely
#: pay for a probe: a batch that is cold from its first record on is caught before any read anyway.
_SLOW_READ_SECONDS = 50e-6
_COPY_BYTES_PER_SECOND = 2e9
_PROBE = bytearray(1)  # the probe's byte is thrown away, so threads may share it


def _slow(seconds: float, length: int) -> bool:
    return seconds > _SLOW_READ_SECONDS + length / _COPY_BYTES_PER_SECOND


def _cached(fd: int, offset: int) -> bool:
    """Whether the byte at ``offset`` is in the page cache: a read that may not wait (Linux)."""
    try:
        os.preadv(fd, [_PROBE], offset, os.RWF_NOWAIT)
    except OSError:  # BlockingIOError: not cached; any other: no such probe here, assume cold
        return False
    return True


def _hint_rest(fds: Sequence[int], offsets: list[int], lengths: list[int], start: int = 0) -> bool:
    """If the first located record of ``offsets[start:]`` is not cached, the batch is cold: ask for
    all of those at once (posix_fadvise WILLNEED), each of its file (``fds``, one per record).
    Returns whether nothing is left to hint."""
    upcoming = next((slot for slot in range(start, len(offsets)) if offsets[slot]), None)
    if upcoming is None:
        return True
    if CAN_PROBE and _cached(fds[upcoming], offsets[upcoming]):
        return False  # cached after all (a slow read on a busy machine): asking would only cost time
    for fd, offset, length in zip(fds[start:], offsets[start:], lengths[start:], strict=True):
        if offset:
            os.posix_fadvise(fd, offset, length, os.POSIX_FADV_WILLNEED)
    return True


def located_reads(
    fds: Sequence[int], offsets: list[int], lengths: list[int], decode: str
) -> Iterator[bytes | torch.Tensor | None]:
    """Each record's bytes read by offset, in order (None where its offset is 0: not located); record
    ``k`` lies in the file open as ``fds[k]`` (a split of many data files reads one batch from several).

    When a record about to be read is not in the page cache (a one-byte probe, made before the
    first read and after any slow one), the remaining ranges of the batch are requested all at
    once (posix_fadvise WILLNEED), so that they load in parallel while the caller decodes this one.
    Cached batches are not hinted: asking for ranges already cached costs time and buys nothing."""
    # Not yet hinted; a batch whose first record is not cached is hinted before any read.
    hint = CAN_ADVISE and not _hint_rest(fds, offsets, lengths)
    for slot, (fd, offset, length) in enumerate(zip(fds, offsets, lengths, strict=True)):
        if not offset:
            yield None
            continue
        started = time.perf_counter()
        data = fetch_record(fd, offset, length, decode)
        if hint and _slow(time.perf_counter() - started, length):
            hint = not _hint_rest(fds, offsets, lengths, start=slot + 1)
        yield data


def v1_records(
    path: str, env: lmdb.Environment, meta: Meta, lock: bool, crc_check: bool = True
) -> LmdbRecords | LocatedRecords:
    """The source of a v1 file: by offset if its recorded locations fit it (locations_problem), else
    through LMDB, with a one-time LocationsWarning; files without them (older ones) silently. With
    ``crc_check`` every record read is checked against meta/crc32 (DamagedRecordError)."""
    through_lmdb = LmdbRecords(path, meta.storage, meta.crc32 if crc_check else None)
    # lock=True asks for LMDB's reader protocol, which protects a read from a concurrent writer;
    # reads by offset assume, as lock=False does, that the file does not change while it is read.
    unusable = lock or not CAN_PREAD or os.path.isdir(path)
    if unusable or meta.locations is None or "locations" not in meta.document:
        return through_lmdb
    fd, file_id = shared_fd(path)
    problem = locations_problem(fd, env, meta)
    if problem is not None:
        warnings.warn(
            f"{path}: {problem}. It is read through LMDB, which gives the same bytes but is "
            f"slower on a cold cache; `imagefolder-lmdb add-locations {path}` (in a checkout: "
            f"`python scripts/add_locations.py {path}`) writes them again for this file.",
            LocationsWarning,
            stacklevel=4,  # v1_records, _open_records, LMDBReader.__init__, the caller
        )
        return through_lmdb
    if not meta.locations["offset"].any():
        return through_lmdb  # every record is inline in a leaf that holds meta (a tiny dataset)
    offsets = np.ascontiguousarray(meta.locations["offset"])
    return LocatedRecords(through_lmdb, offsets, np.ascontiguousarray(meta.locations["length"]), file_id)


class LocatedRecords:
    """v1 records read with one pread each at the offsets recorded in meta/locations, checked when
    the file was opened (v1_records). Records not located (offset 0) are read through ``lmdb``,
    and so is every record once the path names another file (replaced since it was opened)."""

    legacy = False

    def __init__(self, lmdb: LmdbRecords, offsets: np.ndarray, lengths: np.ndarray, file_id: tuple[int, int]) -> None:
        self.lmdb = lmdb
        self.offsets: np.ndarray | None = offsets  # uint64 per record, 0 = read through LMDB
        self.lengths: np.ndarray | None = lengths  # uint32 per record
        self.file_id: tuple[int, int] | None = file_id  # (st_dev, st_ino) the offsets belong to

    @property
    def by_offset(self) -> bool:
        return self.offsets is not None

    def stop_reading_by_offset(self) -> None:
        """Read every record through LMDB from now on."""
        self.offsets = self.lengths = self.file_id = None

    def _fd(self) -> int | None:
        """The descriptor to pread from, or None (reads by offset stop) when the path now names
        another file than the one the offsets were checked for (replaced, then close_all_envs())."""
        fd, identity = shared_fd(self.lmdb.path)
        if identity == self.file_id:
            return fd
        warnings.warn(
            f"{self.lmdb.path} was replaced by another file since it was opened; it is read through LMDB",
            LocationsWarning,
            stacklevel=4,  # _fd, read or get_bytes, the dataset's method, its caller
        )
        self.stop_reading_by_offset()
        return None

    def get_bytes(self, index: int, begin: Begin) -> bytes:
        # The common case, kept short: raw reads are where per-call overhead shows.
        offset = self.offsets.item(index) if self.offsets is not None else 0
        fd = self._fd() if offset else None
        if fd is None:
            return self.lmdb.get_bytes(index, begin)
        assert self.lengths is not None
        data = pread_bytes(fd, self.lengths.item(index), offset)
        check_record(self.lmdb.path, index, data, self.lmdb.crc32)
        return data

    def read(self, positions: list[int], decode: str, begin: Begin, targets: Sequence[Any]) -> list[tuple[Any, Any]]:
        """Decoded images and labels of ``positions``: one pread each where the records are located
        (see _read_located), the rest in one LMDB transaction."""
        fd = self._fd() if self.offsets is not None else None
        if fd is None:
            return self.lmdb.read(positions, decode, begin, targets)
        assert self.offsets is not None and self.lengths is not None
        if len(positions) == 1:  # get_bytes, ds[i]: spare them the array indexing of _read_located
            index = positions[0]
            offset = self.offsets.item(index)
            if not offset:
                return self.lmdb.read(positions, decode, begin, targets)
            data = fetch_record(fd, offset, self.lengths.item(index), decode)
            return [(self._decoded(data, index, decode), targets[index])]
        return self._read_located(fd, positions, decode, begin, targets)

    def _read_located(
        self, fd: int, positions: list[int], decode: str, begin: Begin, targets: Sequence[Any]
    ) -> list[tuple[Any, int]]:
        """A batch, read by offset where located (located_reads: a cold batch is hinted at once), the
        rest in one LMDB transaction."""
        assert self.offsets is not None and self.lengths is not None
        offsets, lengths = self.offsets[positions].tolist(), self.lengths[positions].tolist()
        batch: list[Any] = []
        unlocated: list[int] = []
        for slot, data in enumerate(located_reads([fd] * len(positions), offsets, lengths, decode)):
            index = positions[slot]
            if data is None:
                batch.append(None)
                unlocated.append(slot)
                continue
            batch.append((self._decoded(data, index, decode), targets[index]))
        if unlocated:
            through_lmdb = self.lmdb.read([positions[slot] for slot in unlocated], decode, begin, targets)
            for slot, sample in zip(unlocated, through_lmdb, strict=True):
                batch[slot] = sample
        return batch

    def _decoded(self, data: bytes | torch.Tensor, index: int, decode: str) -> Any:
        """Record ``index``'s bytes as read by offset (a tensor for decode="tensor"), checked, decoded."""
        # decode="tensor": read straight into a tensor (offset_reads.fetch_record)
        stored = cast("torch.Tensor", data).numpy().data if decode == "tensor" else cast(bytes, data)
        check_record(self.lmdb.path, index, stored, self.lmdb.crc32)
        return self.lmdb.codec(index).decode(data, decode)
