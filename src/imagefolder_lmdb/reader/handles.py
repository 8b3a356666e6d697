"""Opening a file read-only, and the per-process table of open files: one LMDB environment, one
descriptor and one PageGuard per file and process (``shared_env``, ``shared_fd``), closed before
every fork (``close_all_envs``); the reader slots of ``lock=True`` files (``ReadersFullError``). A
data file of a split of revisions read by offset holds the descriptor only (reader/data_files.py)."""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import lmdb

from imagefolder_lmdb.reader.file_checks import (
    GuardedTxn,
    LmdbReadTxn,
    PageGuard,
    check_lmdb_file,
    data_file,
    read_lmdb_header,
)
from imagefolder_lmdb.reader.format import FormatError
from imagefolder_lmdb.reader.identity import LocalFileToken, local_token


class ReadersFullError(RuntimeError):
    """Every reader slot of a ``lock=True`` environment is taken; the message says how to size it."""

    # printed under the name it is imported by, as numpy's errors are, not the defining module
    __module__ = "imagefolder_lmdb.reader"


def _lock_file(path: str) -> str:
    return os.path.join(path, "lock.mdb") if os.path.isdir(path) else path + "-lock"


def _readers_in_this_job() -> tuple[int, int]:
    """(DataLoader workers of this process's loader, ranks on this machine), as far as known here."""
    import torch.distributed
    from torch.utils.data import get_worker_info

    info = get_worker_info()
    workers = info.num_workers if info is not None else 0
    ranks = int(os.environ.get("LOCAL_WORLD_SIZE", "0"))
    if not ranks and torch.distributed.is_available() and torch.distributed.is_initialized():
        ranks = torch.distributed.get_world_size()
    return workers, ranks or int(os.environ.get("WORLD_SIZE", "1"))


def readers_full_message(path: str, slots: int | None) -> str:
    """Why a lock=True reader found no free slot, and what to change; ``slots``: the table size."""
    workers, ranks = _readers_in_this_job()
    needed = (workers + 1) * ranks
    return (
        f"{path}: all {slots or 'the'} LMDB reader slots are taken. With lock=True every process that reads "
        f"the file on this machine holds a slot while it reads: each DataLoader worker of each rank, "
        f"plus each rank's main process; here {workers} workers x {ranks} ranks, so at least "
        f"(workers + 1) x ranks = {needed} (more if several loaders read it at once). Pass "
        f"LMDBDataset(..., lock=True, max_readers=N) with a larger N in every process: the table in "
        f"{_lock_file(path)} is sized by the first process that opens the file while no other has it "
        "open, and later ones share it whatever they ask. Or keep the default lock=False: the file is "
        "never written, and without a lock LMDB keeps no reader table and has no reader limit."
    )


#: LMDB's own default reader table size, used with ``lock=True`` when no ``max_readers`` is given.
DEFAULT_MAX_READERS = 126


def open_env_readonly(path: str, max_readers: int | None = None, lock: bool = False) -> lmdb.Environment:
    """Open a dataset for reading with the settings that suit random access by many processes.

    ``readahead=False``: random reads must not pull in neighbouring pages; ``meminit=False``:
    nothing is written. The file's size is checked against its header first (check_lmdb_file).

    Args:
        path (str): the file (or a folder holding ``data.mdb``, as legacy files often are).
        max_readers (int, optional): the reader table's size with ``lock=True`` (default 126);
            ignored without it, as LMDB then keeps no reader table.
        lock (bool): False (default): the file never changes after it is written, so no ``-lock``
            file is created and read-only filesystems work. True: the ``-lock`` file and its table.

    Returns:
        lmdb.Environment: the open, read-only environment.

    Raises:
        FileNotFoundError: nothing at ``path``.
        TruncatedFileError: an incomplete copy.
        FormatError: not an LMDB file, or one LMDB cannot open.
        ReadersFullError, ValueError: ``lock=True`` and no reader slot free; open under another name.
    """
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such file")
    check_lmdb_file(path)  # before LMDB maps it: a short file would raise SIGBUS on first touch
    subdir = os.path.isdir(path)  # legacy datasets are often directories holding data.mdb
    try:
        return lmdb.open(
            path,
            subdir=subdir,
            readonly=True,
            lock=lock,
            readahead=False,
            meminit=False,
            max_readers=max_readers or DEFAULT_MAX_READERS,
            max_dbs=0,
        )
    except lmdb.InvalidError as exc:
        raise FormatError(
            f"{path} is not an LMDB file ({exc}). Point LMDBDataset at a results/<split>.lmdb written by the workflow."
        ) from exc
    except lmdb.ReadersFullError as exc:  # opening reads the main database, which needs a slot too
        raise ReadersFullError(readers_full_message(path, None)) from exc
    except lmdb.Error as exc:
        if "already open in this process" in str(exc):  # py-lmdb knows a file by its inode
            raise ValueError(
                f"{path} is a file this process already has open under another name (a hard link or a bind "
                f"mount); LMDB opens a file once per process: open it by one path everywhere."
            ) from exc
        raise FormatError(f"{path} cannot be opened as an LMDB file: {exc}") from exc


def begin_read(env: lmdb.Environment, path: str) -> lmdb.Transaction:
    """A read transaction of ``env`` whose values are buffers into LMDB's memory, valid until it ends.

    With lock=True a slot of the reader table is taken; when none is free, the slots of processes
    that died (killed workers) are reclaimed once before giving up with a clear error.
    """
    try:
        return env.begin(buffers=True)
    except lmdb.ReadersFullError:
        env.reader_check()
        try:
            return env.begin(buffers=True)
        except lmdb.ReadersFullError as exc:
            raise ReadersFullError(readers_full_message(path, env.max_readers())) from exc


# py-lmdb refuses to open one path twice in a process, and a forked child inherits the parent's
# "already open" state. So environments live in one per-process table shared by every dataset
# instance, and the table is emptied right before any fork: the parent reopens lazily afterwards
# and the child opens its own. Under spawn/forkserver the child starts with an empty table anyway.
# The plain file descriptors that the fast path preads from live beside them and follow the same
# rules, so a child never shares a descriptor it did not open.


@dataclass(frozen=True)
class _EnvOptions:
    lock: bool
    max_readers: int | None


_ENVS: dict[str, tuple[lmdb.Environment, _EnvOptions]] = {}
_ENVS_LOCK = threading.Lock()
#: file key -> (read-only descriptor, (st_dev, st_ino) of the file it reads)
_FDS: dict[str, tuple[int, tuple[int, int]]] = {}
#: file key -> the PageGuard of the file's pages (with a descriptor of its own)
_GUARDS: dict[str, PageGuard] = {}
#: file key -> the storage token of the file its environment opened (reader/identity.py)
_TOKENS: dict[str, LocalFileToken] = {}
#: Replaced by a new object whenever a descriptor of _FDS is closed or forgotten, and in a new process:
#: a reader that keeps descriptor numbers of its own (a split's data files: reader/revision_records.py)
#: uses them while it holds the object found here, and looks them up again otherwise; a copy of a
#: reader sent to another process holds another object (a copy), so it never uses the sender's numbers.
DESCRIPTORS_GENERATION: list[object] = [object()]


def _next_generation() -> None:
    DESCRIPTORS_GENERATION[0] = object()


def _env_key(path: str) -> str:
    """One key per file however it is named. A relative path is resolved afresh (the working folder
    may have changed); an absolute one once, since every read looks its environment up (a dataset
    passes the real path it resolved when it was made)."""
    return _absolute_key(path) if os.path.isabs(path) else os.path.realpath(path)


#: Room for every data file of a split of many (issue 60: at 64, a split of 256 files resolved a path
#: afresh, an lstat per folder of it, at nearly every read: ds[i] at 0.4-0.6x one file's rate).
@functools.lru_cache(maxsize=1 << 16)
def _absolute_key(path: str) -> str:
    return os.path.realpath(path)


def shared_env(path: str, lock: bool = False, max_readers: int | None = None) -> lmdb.Environment:
    """This process's environment of ``path``, opened on first use (open_env_readonly).

    Every user of one file in one process shares it, so all must ask for the same ``lock`` and
    ``max_readers`` (LMDB fixes them when the file is opened).

    Args:
        path (str): the file; other names of the same file share its environment.
        lock (bool): open with LMDB's lock file and reader table.
        max_readers (int, optional): the reader table's size, with ``lock=True``.

    Returns:
        lmdb.Environment: read-only, shared by every reader of the file in this process.

    Raises:
        ValueError: the file is already open here with other ``lock`` or ``max_readers``, or
            under another name.
        FileNotFoundError, TruncatedFileError, FormatError, ReadersFullError: as open_env_readonly.
    """
    key = _env_key(path)
    wanted = _EnvOptions(lock, max_readers)
    with _ENVS_LOCK:
        entry = _ENVS.get(key)
        if entry is None:
            entry = _ENVS[key] = (open_env_readonly(path, max_readers=max_readers, lock=lock), wanted)
            _TOKENS[key] = local_token(path)  # the file LMDB just opened (a replacement a moment later: caught)
        env, options = entry
    if options != wanted:
        raise ValueError(
            f"{path} is already open in this process with lock={options.lock}, max_readers={options.max_readers}; "
            f"LMDB opens a file once per process, so every reader of it here must use the same settings "
            f"(asked for lock={lock}, max_readers={max_readers}). Call close_all_envs() first to switch."
        )
    return env


_T = TypeVar("_T")


def _made_once(table: dict[str, _T], path: str, make: Callable[[], _T]) -> _T:
    """``table``'s entry for the file at ``path``, made by ``make`` on first use (under the lock;
    later lookups, every read's, take none)."""
    key = _env_key(path)
    entry = table.get(key)
    if entry is None:
        with _ENVS_LOCK:
            entry = table.get(key)
            if entry is None:
                entry = table[key] = make()
    return entry


def shared_fd(path: str) -> tuple[int, tuple[int, int]]:
    """This process's read-only descriptor of ``path``, opened on first use.

    Args:
        path (str): the file.

    Returns:
        tuple[int, tuple[int, int]]: the descriptor, and the identity ``(st_dev, st_ino)`` of the
        file it reads (record locations are valid for that file only).
    """

    def open_fd() -> tuple[int, tuple[int, int]]:
        fd = os.open(path, os.O_RDONLY)
        info = os.fstat(fd)
        return fd, (info.st_dev, info.st_ino)

    return _made_once(_FDS, path, open_fd)


def opened_fd(path: str) -> tuple[int, tuple[int, int]] | None:
    """This process's descriptor of ``path`` and the identity of its file, as shared_fd gives them; None:
    not open here (a split's data file checks the file at its first read in each process: revisions.py)."""
    return _FDS.get(_env_key(path))


def opened_token(path: str) -> LocalFileToken | None:
    """The storage token of the file this process's environment of ``path`` opened (None: not open)."""
    return _TOKENS.get(_env_key(path))


def shared_guard(path: str) -> PageGuard:
    """This process's PageGuard of the file at ``path``, made on first use."""

    def make_guard() -> PageGuard:
        fd = os.open(data_file(path), os.O_RDONLY)
        return PageGuard(fd, read_lmdb_header(fd, path), path)

    return _made_once(_GUARDS, path, make_guard)


def guarded(txn: lmdb.Transaction, path: str, lock: bool) -> LmdbReadTxn:
    """``txn`` with its ``get`` guarded (GuardedTxn), unless ``lock``: a writer may change such a
    file while it is read, and pages checked once could change under the guard."""
    return txn if lock else GuardedTxn(txn, shared_guard(path))


def forget_if_replaced(path: str) -> None:
    """Before a dataset opens ``path``: if this process has the file open and another file now lies
    at that path (converted again, ``--overwrite``), forget the old one's handles, so the new dataset
    reads the new file; a dataset still holding the old one finds the change at its next read
    (``FileChangedError``). Forgotten, not closed: another thread may be reading through them."""
    key = _env_key(path)
    with _ENVS_LOCK:
        opened, descriptor = _TOKENS.get(key), _FDS.get(key)  # a split's data file may have a descriptor only
        if opened is None and descriptor is None:
            return
        try:
            now = local_token(path)
        except OSError:  # gone: opening it names that
            replaced = True
        else:
            replaced = now != (opened or now) or (descriptor is not None and descriptor[1] != (now.device, now.inode))
        if replaced:
            for table in (_ENVS, _TOKENS, _FDS, _GUARDS):
                table.pop(key, None)
            _next_generation()


def close_all_envs() -> None:
    """Close every dataset file this process has open (environments, descriptors, page guards);
    datasets reopen them when next read. Runs by itself before each fork; call it after replacing
    a file that was open, or to open one again with other ``lock`` or ``max_readers``."""
    with _ENVS_LOCK:
        for env, _ in _ENVS.values():
            env.close()
        _ENVS.clear()
        _TOKENS.clear()
        _next_generation()  # before closing: a reader keeping descriptor numbers stops using them first
        for fd, _ in _FDS.values():
            os.close(fd)
        _FDS.clear()
        for guard in _GUARDS.values():
            os.close(guard.fd)
        _GUARDS.clear()


def _forget_envs_in_child() -> None:
    # The child's copies were closed before the fork; start from clean tables and a fresh lock.
    global _ENVS_LOCK
    _ENVS.clear()
    _TOKENS.clear()
    _FDS.clear()
    _GUARDS.clear()
    _next_generation()
    _ENVS_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=close_all_envs, after_in_child=_forget_envs_in_child)
