"""A meta copy of a published split file (issue 58, point 7): what a change needs of the file, not its records.

A split published as one file and changed on a machine that has no copy of it (another machine, or the
local cache cleared) is changed on its meta alone: ``publish/sync.py`` reads the object's meta keys by
ranged reads (a few pages, never the records) and writes them here as a small LMDB file at the local
``OUT/train.lmdb``, with two keys of its own:
- ``meta/published_copy``: JSON ``{"url", "etag", "size"}`` of the object it copies;
- ``meta/published_lengths``: each record's stored size (uint32), read from the object's pages.
Its content id is the object's (reader/identity.py: the meta's checksums), so the change's pointer
names the published file, and publishing moves that file into the data folder by a server-side copy
(publish/revisions.py). A meta copy is never uploaded, never read for records (the local reader finds
none: "record N is missing"), and is removed where the run converts the split whole after all.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass

import lmdb
import numpy as np

from imagefolder_lmdb.reader.handles import open_env_readonly
from imagefolder_lmdb.reader.keys import PUBLISHED_COPY_KEY, PUBLISHED_LENGTHS_KEY
from imagefolder_lmdb.reader.revisions import opened_env
from imagefolder_lmdb.writing.lmdb_open import write_lmdb_values

#: The keys only a meta copy holds (the format's keys: reader/keys.py).
PUBLISHED_COPY, PUBLISHED_LENGTHS = PUBLISHED_COPY_KEY, PUBLISHED_LENGTHS_KEY


@dataclass(frozen=True)
class PublishedCopy:
    """The object a meta copy copies: where, its ETag when copied, its size."""

    url: str
    etag: str | None
    size: int


def write_meta_copy(path: str, values: Mapping[bytes, bytes], copied: PublishedCopy, lengths: np.ndarray) -> None:
    """The meta keys ``values`` of the object ``copied`` written at ``path`` (renamed into place whole)."""
    marker = json.dumps({"url": copied.url, "etag": copied.etag, "size": copied.size}).encode()
    stored = {**values, PUBLISHED_COPY: marker, PUBLISHED_LENGTHS: np.asarray(lengths, "<u4").tobytes()}
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    write_lmdb_values(path, stored)  # a kill before its rename leaves the temporary: removed by the next one


def published_copy(path: str) -> PublishedCopy | None:
    """What the file at ``path`` copies, if it is a meta copy (None: a dataset file, a pointer, nothing)."""
    if not os.path.isfile(path):
        return None
    try:
        raw = _marker(path)
    except (lmdb.Error, OSError, ValueError):  # not an LMDB of ours: no meta copy
        return None
    return None if raw is None else _decoded(raw)


def _marker(path: str) -> bytes | None:
    """The marker's value, read in an environment of its own, closed after (the file may be replaced or
    read by name later in this process); where this process has it open already, through that one."""
    try:
        env = open_env_readonly(path)
    except ValueError:  # LMDB opens a file once per process: open here already (reader/handles.py)
        return _value(opened_env(path))
    try:
        return _value(env)
    finally:
        env.close()


def _value(env: lmdb.Environment) -> bytes | None:
    with env.begin() as txn:
        raw = txn.get(PUBLISHED_COPY)
        return None if raw is None else bytes(raw)


def _decoded(raw: bytes) -> PublishedCopy | None:
    try:
        found = json.loads(raw)
        return PublishedCopy(str(found["url"]), found.get("etag"), int(found["size"]))
    except (ValueError, KeyError, TypeError):
        return None


def copied_lengths(env: lmdb.Environment, length: int) -> np.ndarray | None:
    """Each record's stored size as a meta copy recorded it (None: not a meta copy)."""
    with env.begin() as txn:
        raw = txn.get(PUBLISHED_LENGTHS)
    if raw is None or len(raw) != 4 * length:
        return None
    return np.frombuffer(bytes(raw), "<u4").astype(np.int64)


def refuse_upload(path: str) -> None:
    """ValueError if ``path`` is a meta copy: its records are not in it, so it must never be uploaded."""
    copied = published_copy(path)
    if copied is not None:
        raise ValueError(
            f"{path}: a copy of the meta of {copied.url} (no records): not uploaded; the published file "
            "is moved into place by a server-side copy, or, if it is gone, convert again with --overwrite"
        )


def remove_meta_copy(dataset: str) -> bool:
    """A meta copy at ``dataset`` removed (the split is converted whole: it holds no record to verify or to
    upload); whether there was one."""
    if published_copy(dataset) is None:
        return False
    os.remove(dataset)
    return True
