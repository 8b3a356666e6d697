"""Writing LMDB files: sorted appends, batched commits, a map that grows, clear disk-full errors,
and the whole file at its final path only when the block that writes it succeeds (``atomic_lmdb``)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import lmdb

from imagefolder_lmdb.reader import check_lmdb_file, keep_freed_memory_for_reuse
from imagefolder_lmdb.writing.atomic import publish, remove_path, temporary_path
from imagefolder_lmdb.writing.disk_space import DiskFullError, check_free_space, disk_full_message, free_bytes
from imagefolder_lmdb.writing.writeback import start_writeback

#: Memory a writer keeps for its next batch (keep_freed_memory_for_reuse): it holds up to
#: ``LMDBWriter.BATCH_BYTES`` of ~100 KB values, frees them at commit and allocates the next batch;
#: with glibc's defaults each batch page-faulted its memory in again. Measured here, merge ran
#: 1.4-1.6x faster with these limits. Memory stays bounded by the largest batch.
WRITER_KEEP_FREED_BYTES, WRITER_HEAP_BLOCKS_UP_TO = 512 << 20, 32 << 20


class LMDBWriter:
    """Append records in key order to a new single-file LMDB, committing in batches.

    The map starts at ``4 × expected_bytes`` (address space only: without ``writemap`` the file
    grows with the data, not with the map) and doubles whenever a batch does not fit, so
    ``MDB_MAP_FULL`` never reaches the user. ``lock=False``: one writer, and no ``-lock`` file
    left beside the output.

    Commits do not wait for the disk (``sync=False``): a file is used only after ``close`` has
    flushed it (``atomic_lmdb`` publishes it then), and a write interrupted before is removed,
    never resumed. Each commit starts the disk writing what it left, so the disk works while the
    next batch is built and ``close`` waits for the last ones only.
    """

    BATCH_BYTES = 64 << 20

    def __init__(self, path: str, expected_bytes: int, adds_bytes: int | None = None) -> None:
        self.path = path
        self.expected_bytes = expected_bytes
        # what writing adds to the file, for disk-full messages: all of it, unless the file exists
        self.adds_bytes = expected_bytes if adds_bytes is None else adds_bytes
        map_size = max(1 << 30, 4 * expected_bytes)
        keep_freed_memory_for_reuse(WRITER_KEEP_FREED_BYTES, WRITER_HEAP_BLOCKS_UP_TO)
        if os.path.exists(path):
            check_lmdb_file(path)  # write_meta writes into the merged file: never map a short one
        self.env = lmdb.open(
            path,
            subdir=False,
            map_size=map_size,
            lock=False,
            sync=False,
            readahead=False,
            meminit=False,
            max_dbs=0,
        )
        self._fd = os.open(path, os.O_RDONLY)  # for start_writeback: py-lmdb does not expose its own
        self._batch: list[tuple[bytes, bytes]] = []
        self._batch_bytes = 0
        self.records = 0
        self.bytes_written = 0
        self._last_key = b""

    def append(self, key: bytes, value: bytes) -> None:
        """Add one record; keys must come in strictly increasing byte order."""
        if key <= self._last_key:
            raise ValueError(f"{self.path}: key {key!r} does not follow {self._last_key!r}")
        self._last_key = key
        self._batch.append((key, value))
        self._batch_bytes += len(value)
        if self._batch_bytes >= self.BATCH_BYTES:
            self.flush()

    def put_many(self, items: dict[bytes, bytes]) -> None:
        """Store keys in any order (used for meta, which sorts after every record key)."""
        self.flush()
        self._commit(sorted(items.items()), append=False)

    def flush(self) -> None:
        if self._batch:
            self._commit(self._batch, append=True)
            self.records += len(self._batch)
            self.bytes_written += self._batch_bytes
            self._batch, self._batch_bytes = [], 0

    def _commit(self, items: list[tuple[bytes, bytes]], append: bool) -> None:
        while True:
            try:
                with self.env.begin(write=True) as txn:
                    for key, value in items:
                        # put(append=True) returns False instead of raising for an out-of-order
                        # key and stores nothing: never let that pass silently.
                        if not txn.put(key, value, append=append, overwrite=True):
                            raise RuntimeError(f"{self.path}: LMDB refused key {key!r}")
                start_writeback(self._fd)
                return
            except lmdb.MapFullError:
                self.env.set_mapsize(self.env.info()["map_size"] * 2)
            except lmdb.Error as exc:
                self.raise_if_disk_full(exc)
                raise

    def raise_if_disk_full(self, exc: lmdb.Error) -> None:
        """A DiskFullError naming the file and the room it needs, where ``exc`` (of any write to
        ``env``) comes from a full disk. py-lmdb reports ENOSPC as "No space left", but LMDB turns a
        short write on a filling disk into EIO; so an I/O error with too little room left for the
        batch is a full disk."""
        needed = max(self.adds_bytes - self.bytes_written, self._batch_bytes)
        if "No space left" in str(exc) or (
            "Input/output error" in str(exc) and free_bytes(self.path) < self._batch_bytes + (1 << 20)
        ):
            raise DiskFullError(disk_full_message(self.path, needed)) from exc

    def abandon(self) -> None:
        """Close without committing what is pending (the caller removes the file)."""
        self._batch, self._batch_bytes = [], 0
        self._close_files()

    def _close_files(self) -> None:
        os.close(self._fd)
        self.env.close()

    def close(self) -> None:
        """Commit what is pending and flush everything to disk."""
        try:
            self.flush()
            self.env.sync(True)
        except lmdb.Error as exc:
            self.raise_if_disk_full(exc)
            raise
        finally:
            self._close_files()


@contextlib.contextmanager
def atomic_lmdb(final: str, expected_bytes: int) -> Iterator[LMDBWriter]:
    """An LMDBWriter on a temporary name, renamed to ``final`` only if the block succeeds.
    Fails at once, before writing, when the disk cannot hold ``expected_bytes``."""
    temporary = temporary_path(final)
    remove_path(temporary)
    os.makedirs(os.path.dirname(os.path.abspath(final)), exist_ok=True)
    check_free_space(temporary, expected_bytes)
    writer = LMDBWriter(temporary, expected_bytes)
    try:
        yield writer
        writer.close()
    except BaseException:
        writer.abandon()
        remove_path(temporary)
        raise
    publish(temporary, final)
