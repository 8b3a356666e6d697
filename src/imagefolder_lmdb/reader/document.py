"""A dataset file's meta document (``meta/json``) read on its own, for the commands that only ask
what a file holds (the class list it lends, what OUTDIR already holds, the summary, the upload).

Opened as the reader opens a file: its size checked against its header first and the pages on the
way to the key checked before LMDB follows them, so a short copy or a damaged page is "not a
dataset" here, never a crash (SIGBUS). Nothing is kept open: the file may be replaced next.
"""

from __future__ import annotations

import os
from typing import Any

import lmdb

from imagefolder_lmdb.reader.file_checks import PageGuard, read_lmdb_header
from imagefolder_lmdb.reader.format import META_KEYS, FormatError
from imagefolder_lmdb.reader.handles import open_env_readonly
from imagefolder_lmdb.reader.meta_checks import parse_document

#: What a file that is not a readable dataset raises on the way to its document.
_NOT_A_DATASET = (OSError, FormatError, ValueError, lmdb.Error)


def read_document(path: str) -> dict[str, Any] | None:
    """The meta document of the dataset file ``path``; None for anything that is not one (a folder,
    a missing, short or damaged file, an LMDB file without imagefolder-lmdb's meta, a meta/json that
    is no JSON object: reader/meta_checks.py's parse, its entries' types left to the reader)."""
    if not os.path.isfile(path):
        return None
    try:
        env = open_env_readonly(path)
    except _NOT_A_DATASET:
        return None
    try:
        _check_way_to(path, META_KEYS["json"])
        with env.begin() as txn:
            raw = txn.get(META_KEYS["json"])
        return None if raw is None else parse_document(raw)  # a nesting bomb, a JSON list: None, not a crash
    except _NOT_A_DATASET:
        return None
    finally:
        env.close()


def _check_way_to(path: str, key: bytes) -> None:
    """FormatError unless LMDB can look ``key`` up in ``path`` without leaving checked pages (a guard of
    its own, closed here: the shared one of reader/handles.py would outlive a file replaced later)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        PageGuard(fd, read_lmdb_header(fd, path), path).check_key(key)
    finally:
        os.close(fd)
