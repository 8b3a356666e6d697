# SPDX-License-Identifier: MIT
"""What the reader calls for a URL: the remote file opened, as the reader's record source and index."""

from __future__ import annotations

import os
import warnings
from typing import Any

from imagefolder_lmdb.extras import installed, missing_extra

from .cache import RecordCache
from .opening import open_remote, read_values
from .records import RemoteRecords
from .revisions import CacheSettings, open_remote_revision, pointer_of
from .urls import RemoteSettings, check_url

#: The cache's default limit on the bytes it keeps (``cache_bytes``).
DEFAULT_CACHE_BYTES = 64 << 30


def open_remote_records(
    url: str,
    max_in_flight: int,
    cache_dir: str | os.PathLike[str] | None,
    cache_bytes: int,
    revision: int | None = None,
) -> Any:
    """The reader's ``Opened`` for the dataset at ``url``: its meta, and RemoteRecords to read it; for
    a split of revisions, revision ``revision`` (None: the current one) read from its data files."""
    from imagefolder_lmdb.reader.records import Opened

    if not installed("obstore"):  # the extra's one dependency, asked for before any request
        raise ImportError(missing_extra(f"cannot read {url}: reading a URL", "obstore"))
    if max_in_flight < 1:
        raise ValueError(f"max_in_flight must be at least 1, not {max_in_flight}")
    check_url(url)  # a mistyped scheme is named here, before any request
    settings = RemoteSettings(max_in_flight=max_in_flight)
    found = read_values(url, settings)
    pointer = pointer_of(found)
    if pointer is not None:  # a split of revisions (issue 58): its data files, by content id
        kept = CacheSettings(None if cache_dir is None else os.fspath(cache_dir), cache_bytes)
        return open_remote_revision(found, pointer, revision, settings, kept)
    if revision is not None:
        raise ValueError(
            f"revision={revision}: {url} is a single split file, not a split of revisions (it never changed "
            "since its conversion); open it without revision="
        )
    remote = open_remote(url, settings, found)
    if remote.etag is None:
        _warn_no_etag(url)
    meta = remote.meta
    cache = RecordCache(os.fspath(cache_dir), url, remote.etag, cache_bytes) if cache_dir is not None else None
    records = RemoteRecords(url, remote.etag, remote.offsets, remote.lengths, meta.crc32, meta.storage, settings, cache)
    records.size = remote.size
    return Opened(records, meta.document, meta.classes, meta.paths, meta.targets(), meta)


_warned: set[str] = set()


def _warn_no_etag(url: str) -> None:
    """Once per URL and process: without an ETag a replaced object cannot be refused by If-Match (each
    record's CRC-32 still guards every read)."""
    if url not in _warned:
        _warned.add(url)
        warnings.warn(
            f"{url}: the server sends no ETag, so reads cannot be pinned to this version of the object; every "
            "record is still checked against its CRC-32 (a replaced object is refused when a record differs)",
            RemoteWarning,
            stacklevel=4,
        )


class RemoteWarning(UserWarning):
    """Something about a remote object worth knowing that does not stop reading it."""
