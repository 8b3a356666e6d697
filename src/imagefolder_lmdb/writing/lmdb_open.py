"""A part or merged LMDB written by this workflow, opened to be read through, and its record count."""

from __future__ import annotations

import lmdb

from imagefolder_lmdb.reader import check_lmdb_file


def open_lmdb_readonly(path: str) -> lmdb.Environment:
    """A part or merged LMDB written by this workflow, opened for a sequential scan (after
    checking that it is whole: LMDB would map a short file and crash on its missing pages)."""
    check_lmdb_file(path)
    return lmdb.open(path, subdir=False, readonly=True, lock=False, readahead=True, max_dbs=0)


def count_records(env: lmdb.Environment) -> int:
    return int(env.stat()["entries"])
