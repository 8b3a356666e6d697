# SPDX-License-Identifier: MIT
"""Opening a remote file: its meta and its record locations, by ranged reads, never a walk of the tree.

Rounds of requests (each round's requests go out at once):
1. bytes 0..8 KiB: both LMDB meta pages (page size 4096; another page size costs one more), and
   the object's ETag and size, to which every later read is pinned;
2. one round per level of the B-tree (depth 3 for ImageNet's 1.28 M records), fetching only the
   pages whose key range reaches the meta keys (``meta/...`` sort after every record key): one or
   two pages a level;
3. the meta values on their overflow pages, neighbours merged into one request.
The few records stored inline in the leaf that holds the meta keys (a write of the meta moves them,
so meta/locations leaves them at offset 0) are found in the leaves already fetched. The format is
unchanged: any file with record locations opens this way.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from imagefolder_lmdb.reader import lmdb_pages
from imagefolder_lmdb.reader.file_checks import TruncatedFileError
from imagefolder_lmdb.reader.format import META_KEYS, FormatError, Meta, decode_meta, record_key
from imagefolder_lmdb.reader.record_locations import locations_checksum, locations_layout_problem
from imagefolder_lmdb.reader.tree_descent import META_PREFIX, Level, Wanted, holding, next_level, reaches_meta

from . import client
from .records import merged_spans
from .urls import RemoteSettings

_HEAD = 8192


def _add_locations_hint(url: str) -> str:
    return (
        f"Record them in a local copy with `imagefolder-lmdb add-locations FILE.lmdb` (`python "
        f"scripts/add_locations.py FILE.lmdb`) and upload that copy again to {url}"
    )


@dataclass
class RemoteFile:
    """What opening a remote file found: its version, its meta, and where every record lies."""

    url: str
    etag: str | None
    size: int
    meta: Meta
    offsets: np.ndarray  # uint64 per record
    lengths: np.ndarray  # uint32 per record
    requests: int  # ranged GETs that opening took


class _Pages:
    """The object's pages, fetched a round at a time and kept."""

    def __init__(self, url: str, etag: str | None, page_size: int, settings: RemoteSettings) -> None:
        self.url, self.etag, self.page_size, self.settings = url, etag, page_size, settings
        self.pages: dict[int, bytes] = {}
        self.requests = 0

    def spans(self, spans: list[tuple[int, int]]) -> list[bytes]:
        """The bytes of each span, fetched in one round with neighbours merged."""
        requests, pieces = merged_spans(spans, self.settings)
        self.requests += len(requests)
        fetched = client.fetch(self.url, requests, self.etag, self.settings).parts
        return [fetched[request][start:end] for request, start, end in pieces]

    def get(self, numbers: list[int]) -> dict[int, bytes]:
        missing = sorted(set(numbers) - set(self.pages))
        size = self.page_size
        for number, page in zip(missing, self.spans([(n * size, (n + 1) * size) for n in missing]), strict=True):
            self.pages[number] = page
        return {number: self.pages[number] for number in numbers}


def _descend(pages: _Pages, meta: lmdb_pages.MetaPage, wanted: Wanted) -> list[lmdb_pages.LeafEntry]:
    """The entries of every leaf whose key range [low, high) ``wanted`` accepts, one round a level."""
    if meta.main.root == lmdb_pages.P_INVALID:
        raise FormatError(f"{pages.url}: an empty LMDB (no keys): not an imagefolder-lmdb dataset")
    level: Level = [(meta.main.root, None, None)]
    leaves: list[lmdb_pages.LeafEntry] = []
    for _ in range(max(1, meta.main.depth)):
        fetched = pages.get([pgno for pgno, _, _ in level])
        level = next_level(level, fetched.__getitem__, meta, wanted, leaves)
        if not level:
            return leaves
    raise FormatError(f"{pages.url}: its B-tree is deeper than its meta page says: the file is damaged")


def _meta_values(pages: _Pages, meta: lmdb_pages.MetaPage) -> dict[bytes, bytes]:
    entries = [entry for entry in _descend(pages, meta, reaches_meta) if entry.key.startswith(META_PREFIX)]
    values = {
        # an empty value may sit at its page's very end: its offset is then the next page's first byte
        entry.key: pages.pages[entry.offset // meta.page_size][entry.offset % meta.page_size :][: entry.length]
        if entry.length
        else b""
        for entry in entries
        if entry.inline
    }
    big = [entry for entry in entries if not entry.inline]
    for entry, value in zip(big, pages.spans([(e.offset, e.offset + e.length) for e in big]), strict=True):
        values[entry.key] = value
    return values


def _check_locations(url: str, meta: Meta, head: lmdb_pages.MetaPage, size: int) -> None:
    """Refuse record locations that are absent or do not fit this object (no LMDB to fall back on here)."""
    recorded = meta.document.get("locations")
    if meta.locations is None or not isinstance(recorded, dict):
        raise FormatError(
            f"{url} has no record locations (meta/locations), which reading from a URL needs. "
            + _add_locations_hint(url)
        )
    problem = None
    if recorded.get("txnid") != head.txnid:
        taken = recorded.get("txnid")
        problem = f"they were taken at LMDB transaction {taken}, but the file is at {head.txnid} (a compacting copy?)"
    elif len(meta.locations) != meta.length or (
        "crc32" in recorded and recorded["crc32"] != locations_checksum(meta.locations)
    ):
        problem = "meta/locations is damaged (its size or checksum does not match)"
    else:
        problem = locations_layout_problem(
            meta.locations, head.page_size, min(size, (head.last_pgno + 1) * head.page_size)
        )
    if problem is not None:
        raise FormatError(f"{url}: its record locations do not fit it: {problem}. " + _add_locations_hint(url))


def _unlocated(url: str, meta: Meta, pages: _Pages, head: lmdb_pages.MetaPage) -> tuple[np.ndarray, np.ndarray]:
    """The locations of every record, those left at 0 (inline beside the meta) found in the tree."""
    assert meta.locations is not None
    offsets = np.array(meta.locations["offset"], dtype=np.uint64)
    lengths = np.array(meta.locations["length"], dtype=np.uint32)
    missing = np.flatnonzero(offsets == 0)
    if len(missing):
        keys = [record_key(int(i)) for i in missing]
        found = {entry.key: entry for entry in _descend(pages, head, holding(keys))}
        for index, key in zip(missing.tolist(), keys, strict=True):
            if key not in found:
                raise FormatError(f"{url}: record {index} is neither located nor in the B-tree: the file is damaged")
            offsets[index], lengths[index] = found[key].offset, found[key].length
    return offsets, lengths


@dataclass
class RemoteMeta:
    """An object's meta, read by ranged reads, with what opening its records needs next."""

    url: str
    etag: str | None
    size: int
    meta: Meta
    head: lmdb_pages.MetaPage
    pages: _Pages


@dataclass
class RemoteValues:
    """Every ``meta/...`` key of the LMDB object at ``url`` and its value, read by ranged reads pinned
    to ``etag``: a split file's meta, or a pointer's revisions (remote/revisions.py)."""

    url: str
    etag: str | None
    size: int
    head: lmdb_pages.MetaPage
    pages: _Pages
    values: dict[bytes, bytes]

    def get(self, key: bytes, default: bytes | None = None) -> bytes | None:
        """A value as a read transaction gives it (decode_meta and decode_revision ask only this)."""
        return self.values.get(key, default)


def read_values(url: str, settings: RemoteSettings) -> RemoteValues:
    """The meta keys of the LMDB object at ``url``, by rounds 1-3 of the module's docstring."""
    first = client.fetch(url, [(0, _HEAD)], None, settings)
    head_bytes, etag, size = first.parts[0], first.etag, first.size
    try:
        page_size = lmdb_pages.page_size_of(head_bytes)
        pages = _Pages(url, etag, page_size, settings)
        pages.requests = 1
        page1 = head_bytes[page_size : 2 * page_size] if 2 * page_size <= _HEAD else pages.get([1])[1]
        head = lmdb_pages.current_meta(head_bytes[:page_size], page1)
    except ValueError as exc:
        raise FormatError(f"{url}: not an LMDB file of this format ({exc})") from exc
    needed = (head.last_pgno + 1) * page_size
    if size < needed:
        raise TruncatedFileError(
            f"{url} holds {size:,} bytes, but its LMDB header needs {needed:,}: an incomplete upload. Upload it again"
        )
    try:
        values = _meta_values(pages, head)
    except ValueError as exc:
        raise FormatError(
            f"{url}: its LMDB pages are damaged ({exc}); check the original with `verify --full`"
        ) from exc
    if META_KEYS["json"] not in values:
        raise FormatError(f"{url} is an LMDB, but not a finished imagefolder-lmdb dataset (no meta/json key)")
    return RemoteValues(url, etag, size, head, pages, values)


def read_meta(url: str, settings: RemoteSettings, found: RemoteValues | None = None) -> RemoteMeta:
    """The meta of the file at ``url`` (``found``: its keys, read already); its record locations are
    not checked (publish/upload.py reads an object's meta this way: one made before locations were
    recorded is still ours)."""
    found = found or read_values(url, settings)
    meta = decode_meta(found, url)  # get() is all decode_meta asks of a txn (format.ReadTxn)
    return RemoteMeta(url, found.etag, found.size, meta, found.head, found.pages)


def open_remote(url: str, settings: RemoteSettings, values: RemoteValues | None = None) -> RemoteFile:
    """Fetch and check the meta and record locations of the file at ``url`` (see the module's docstring;
    ``values``: its meta keys, read already)."""
    found = read_meta(url, settings, values)
    _check_locations(url, found.meta, found.head, found.size)
    offsets, lengths = _unlocated(url, found.meta, found.pages, found.head)
    return RemoteFile(url, found.etag, found.size, found.meta, offsets, lengths, found.pages.requests)
