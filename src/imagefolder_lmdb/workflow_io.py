"""Helpers shared by the rule scripts: logging, atomic outputs, LMDB writing (the files the rules
pass to each other: src/imagefolder_lmdb/work_files.py).

Every output a script makes goes through here, so "a final path only ever holds a complete file"
is implemented once: write under a temporary name in the same folder, flush to disk, rename.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import logging
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any, TextIO

import lmdb

from imagefolder_lmdb.dataset import STORAGE_CODES, check_lmdb_file

log = logging.getLogger("imagefolder_lmdb")

#: Suffix of every temporary output. A leftover from a killed run carries it and is never a result.
TMP_SUFFIX = ".incomplete"


# --------------------------------------------------------------------------------------------------
# Logging: each rule's script writes everything to its log file.
# --------------------------------------------------------------------------------------------------


def log_to(path: str | None) -> TextIO:
    """Send stderr (tracebacks, tqdm) and the logger to ``path``; returns the open stream."""
    stream: TextIO = open(path, "w", buffering=1) if path else sys.stderr  # noqa: SIM115
    sys.stderr = stream
    logging.basicConfig(
        stream=stream,
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(message)s",
        force=True,
    )
    return stream


def run_rule(main: Callable[[Any, TextIO], None], smk: Any) -> None:
    """Run a rule script's ``main(snakemake, log_stream)`` with its log set up.

    The full traceback goes to the rule's log; the error message itself also goes to the
    terminal, so the user sees which file is at fault without opening the log.
    """
    log_path = smk.log[0] if smk.log else None
    stream = log_to(log_path)
    try:
        main(smk, stream)
    except Exception as exc:
        log.exception("%s failed", smk.rule)
        if not log_path:
            where = ""
        elif let_go_of_log(stream):
            where = f"\n(full log: {log_path})"
        else:
            where = f"\n(its log {log_path} could not be written: {explain_unwritten(log_path)})"
        print(f"ERROR in rule {smk.rule}: {explain(exc)}{where}", file=sys.__stderr__, flush=True)
        sys.exit(1)


def let_go_of_log(stream: TextIO) -> bool:
    """Flush the log; False where that fails (its disk is full too): what cannot be written is
    dropped, so that the script ends with its own status rather than 120 (Python's when flushing
    stderr fails at exit)."""
    try:
        stream.flush()
    except OSError:
        sys.stderr = sys.__stderr__
        with contextlib.suppress(OSError):
            stream.close()
        return False
    return True


def explain_unwritten(path: str) -> str:
    return f"no room on the file system mounted at {mount_point(path)}, {megabytes(free_bytes(path))} free"


def explain(exc: BaseException) -> str:
    """The message a user needs; a bare ENOSPC from any write becomes actionable."""
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC and not isinstance(exc, DiskFullError):
        written = exc.filename2 or exc.filename  # a copy names its source first, what it writes second
        named = isinstance(written, str) and written
        where = f" {written} (the file system mounted at {mount_point(written)})" if named else " an output"
        return (
            f"no space left on the disk while writing{where}. Free some space "
            "(or point `work`/`results` elsewhere) and run the same command again."
        )
    return str(exc)


#: Test hook for the crash tests: a script reaching the point named in HOLD_ENV creates the file
#: named in HOLD_MARKER_ENV and waits there to be killed, so a SIGKILL lands at a known moment.
#: Unset, it does nothing.
HOLD_ENV = "IMAGEFOLDER_LMDB_TEST_HOLD"
HOLD_MARKER_ENV = "IMAGEFOLDER_LMDB_TEST_HOLD_MARKER"


def hold_point(name: str) -> None:
    if os.environ.get(HOLD_ENV) != name:
        return
    with open(os.environ[HOLD_MARKER_ENV], "w"):
        pass
    while True:
        time.sleep(1)


def progress_kwargs(stream: TextIO) -> dict[str, Any]:
    """tqdm settings: live on a terminal, a line every few seconds in a log file."""
    interactive = stream.isatty()
    return {
        "file": stream,
        "mininterval": 0.5 if interactive else 5.0,
        "dynamic_ncols": interactive,
        "ascii": not interactive,
    }


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
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def publish(temporary: str, final: str) -> None:
    """Rename a finished temporary output into place, durably (data first, then the rename)."""
    if os.path.isfile(temporary):
        fsync_path(temporary)
    os.replace(temporary, final)
    fsync_path(os.path.dirname(os.path.abspath(final)))


def write_json_atomic(path: str, document: Any) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    temporary = temporary_path(path)
    with open(temporary, "w", encoding="utf-8") as stream:
        json.dump(document, stream, indent=1, sort_keys=True, ensure_ascii=False)
        stream.write("\n")
    publish(temporary, path)


def read_json(path: str) -> Any:
    with open(path, encoding="utf-8") as stream:
        return json.load(stream)


#: Storage codes whose stored value is the source file itself. encode_shard checks those images but
#: leaves their bytes out of its part; merge copies them from the source, checking each against the
#: CRC-32 taken when it was checked. So the bulk of a dataset is written once, not twice, and the
#: work folder never holds a second copy of it.
SOURCE_BYTES_CODES = frozenset({STORAGE_CODES["passthrough"], STORAGE_CODES["stored-as-is"]})


def kept_in_part(storage_code: int) -> bool:
    return storage_code not in SOURCE_BYTES_CODES


def shard_range(count: int, shards: int, shard: int) -> tuple[int, int]:
    """The contiguous slice of ``count`` images that shard ``shard`` of ``shards`` encodes."""
    return count * shard // shards, count * (shard + 1) // shards


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
        f"no space left on the disk holding {path.removesuffix(TMP_SUFFIX)} (the file system mounted at "
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
