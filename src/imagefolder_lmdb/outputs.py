"""Outputs at their final paths only when whole: files, folders and LMDB files.

Every output the workflow finalises goes through here, so "a final path only ever holds a complete
file" is implemented once: build it under a temporary name in the same folder (``*.incomplete``:
a leftover of a killed run is never taken for a result), flush it to disk, rename it, and flush the
folder, so that the rename itself survives a crash. Plain files are written with ``atomic_file``;
a folder or an LMDB built under ``temporary_path`` is renamed into place with ``publish``;
``atomic_lmdb`` does both for an LMDB written record by record. A full disk is reported naming the
file and the space it needed (``DiskFullError``).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import shutil
from collections.abc import Iterator
from typing import IO, Any

import lmdb

from imagefolder_lmdb.reader import check_lmdb_file

#: Suffix of every temporary output. A leftover from a killed run carries it and is never a result.
TMP_SUFFIX = ".incomplete"


# --------------------------------------------------------------------------------------------------
# Atomic outputs.
# --------------------------------------------------------------------------------------------------


def temporary_path(final: str) -> str:
    """The name an output is built under before it is renamed to ``final``."""
    return final + TMP_SUFFIX


def remove_path(path: str) -> None:
    """Remove a file or folder if it exists (leftovers of an interrupted run)."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)


def fsync_path(path: str) -> None:
    """Flush a file's data, or a folder's entries, to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def publish(temporary: str, final: str) -> None:
    """Rename a finished temporary output (a file or a folder) into place, durably: its data first,
    then the rename, then the folder that records the rename."""
    fsync_path(temporary)
    os.replace(temporary, final)
    fsync_path(os.path.dirname(os.path.abspath(final)))


@contextlib.contextmanager
def atomic_file(final: str, mode: str = "w", **open_args: Any) -> Iterator[IO[Any]]:
    """``final`` opened for writing (``open``'s ``mode`` and arguments), whole or not at all: the block
    writes a temporary file beside it, which is published (flushed, renamed, the folder flushed)
    when the block ends without an error. On any error the temporary is removed and ``final`` is
    as it was. The temporary's name holds the process id, so two processes finalising the same
    path never write into one file."""
    os.makedirs(os.path.dirname(os.path.abspath(final)), exist_ok=True)
    temporary = f"{final}.{os.getpid()}{TMP_SUFFIX}"
    try:
        with open(temporary, mode, **open_args) as stream:
            yield stream
        publish(temporary, final)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.remove(temporary)
        if isinstance(exc, OSError) and exc.filename is None:
            exc.filename = final  # a failed write names no file: say which output it was
        raise


def write_json_atomic(path: str, document: Any) -> None:
    with atomic_file(path, encoding="utf-8") as stream:
        json.dump(document, stream, indent=1, sort_keys=True, ensure_ascii=False)
        stream.write("\n")


# --------------------------------------------------------------------------------------------------
# Writing LMDB files: sorted appends, batched commits, a map that grows, clear disk-full errors.
# --------------------------------------------------------------------------------------------------


class DiskFullError(OSError):
    """No space left while writing an output; names the file and what it needed."""

    def __init__(self, message: str) -> None:
        super().__init__(errno.ENOSPC, message)

    def __str__(self) -> str:
        return str(self.strerror)


def free_bytes(path: str) -> int:
    """Free space on the filesystem that holds ``path`` (which need not exist yet)."""
    return shutil.disk_usage(os.path.dirname(os.path.abspath(path))).free


def mount_point(path: str) -> str:
    """The mount point of the file system that holds ``path`` (which need not exist yet)."""
    folder = os.path.dirname(os.path.abspath(path))
    while not os.path.ismount(folder):
        folder = os.path.dirname(folder)
    return folder


def disk_full_message(path: str, needed_bytes: int) -> str:
    free = free_bytes(path)
    return (
        f"no space left on the device holding {path.removesuffix(TMP_SUFFIX)} (the file system mounted at "
        f"{mount_point(path)}) while writing it: about {megabytes(needed_bytes)} needed there, {megabytes(free)} "
        "free. Free some space (or point `work`/`results` elsewhere) and run the same command again."
    )


def megabytes(count: int) -> str:
    """A size in words: ``8 KB``, ``4.8 MB``, ``12 MB``, ``1,400 MB``."""
    if count < 1e6:
        return f"{count / 1e3:,.0f} KB"
    return f"{count / 1e6:.1f} MB" if count < 1e7 else f"{count / 1e6:,.0f} MB"


def check_free_space(path: str, needed_bytes: int) -> None:
    """Fail early, before any writing, when the disk clearly cannot hold the output."""
    if free_bytes(path) < needed_bytes:
        raise DiskFullError(disk_full_message(path, needed_bytes))


#: glibc ``mallopt`` parameters (malloc.h): M_TRIM_THRESHOLD and M_MMAP_THRESHOLD.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


def keep_freed_memory_for_reuse() -> None:
    """Stop glibc from handing batch buffers back to the kernel after every commit.

    A writer holds up to ``BATCH_BYTES`` of ~100 KB values, frees them at commit and allocates the
    next batch. With glibc's defaults the freed top of the heap is trimmed and big blocks are
    mmap'd, so every batch page-faults its memory in again: measured here, merge ran 1.4-1.6x
    faster with these limits raised. Memory stays bounded by the largest batch. No-op off glibc.
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return
    libc.mallopt(_M_TRIM_THRESHOLD, 512 << 20)
    libc.mallopt(_M_MMAP_THRESHOLD, 32 << 20)


class LMDBWriter:
    """Append records in key order to a new single-file LMDB, committing in batches.

    The map starts at ``4 × expected_bytes`` (address space only: without ``writemap`` the file
    grows with the data, not with the map) and doubles whenever a batch does not fit, so
    ``MDB_MAP_FULL`` never reaches the user. ``lock=False``: one writer, and no ``-lock`` file
    left beside the output.
    """

    BATCH_BYTES = 64 << 20

    def __init__(self, path: str, expected_bytes: int, adds_bytes: int | None = None) -> None:
        self.path = path
        self.expected_bytes = expected_bytes
        # what writing adds to the file, for disk-full messages: all of it, unless the file exists
        self.adds_bytes = expected_bytes if adds_bytes is None else adds_bytes
        map_size = max(1 << 30, 4 * expected_bytes)
        keep_freed_memory_for_reuse()
        if os.path.exists(path):
            check_lmdb_file(path)  # write_meta writes into the merged file: never map a short one
        self.env = lmdb.open(
            path,
            subdir=False,
            map_size=map_size,
            lock=False,
            readahead=False,
            meminit=False,
            max_dbs=0,
        )
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
            self.env.close()


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


def open_lmdb_readonly(path: str) -> lmdb.Environment:
    """A part or merged LMDB written by this workflow, opened for a sequential scan (after
    checking that it is whole: LMDB would map a short file and crash on its missing pages)."""
    check_lmdb_file(path)
    return lmdb.open(path, subdir=False, readonly=True, lock=False, readahead=True, max_dbs=0)


def count_records(env: lmdb.Environment) -> int:
    return int(env.stat()["entries"])
