"""A part or merged LMDB written by this workflow, opened to be read through, and its record count; a small
LMDB of a few keys (a pointer, a meta copy) written whole under a temporary name and renamed."""

from __future__ import annotations

import lmdb

from imagefolder_lmdb.reader import check_lmdb_file
from imagefolder_lmdb.writing.atomic import publish, remove_path, temporary_path


def open_lmdb_readonly(path: str) -> lmdb.Environment:
    """A part or merged LMDB written by this workflow, opened for a sequential scan (after
    checking that it is whole: LMDB would map a short file and crash on its missing pages)."""
    check_lmdb_file(path)
    return lmdb.open(path, subdir=False, readonly=True, lock=False, readahead=True, max_dbs=0)


def count_records(env: lmdb.Environment) -> int:
    return int(env.stat()["entries"])


def write_lmdb_values(path: str, stored: dict[bytes, bytes]) -> None:
    """A small single-file LMDB of ``stored`` at ``path``, written under a temporary name and renamed."""
    temporary = temporary_path(path)
    remove_path(temporary)
    size = sum(len(key) + len(value) for key, value in stored.items())
    env = lmdb.open(temporary, subdir=False, map_size=max(1 << 24, 4 * size), lock=False, max_dbs=0)
    try:
        with env.begin(write=True) as txn:
            for key, value in sorted(stored.items()):
                txn.put(key, value)
        env.sync(True)
    except BaseException:
        env.close()
        remove_path(temporary)
        raise
    env.close()
    publish(temporary, path)
