"""A data file of a split of revisions opened by plain reads, never by LMDB (issue 60): its meta and the
place of every record found through one descriptor that is closed again, so that opening a split of a
thousand files holds no descriptor of them, and reading holds one per file read (``shared_fd``, opened
on the file's first read in each process; reader/revisions.py).

The pages on the way to the meta keys are checked as the remote reader checks them (lmdb_pages: page
numbers, node offsets, values inside the file), the record locations as every file's are
(``fitting_problem``: transaction, checksum, layout, a spread of records against their CRC-32). A file
whose locations are absent or do not fit gives None here: it is read through LMDB, as any other file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from imagefolder_lmdb.reader import lmdb_pages
from imagefolder_lmdb.reader.file_checks import check_lmdb_file
from imagefolder_lmdb.reader.format import META_KEYS, RECOPY_ADVICE, FormatError, Meta, decode_meta, record_key
from imagefolder_lmdb.reader.identity import LocalFileToken
from imagefolder_lmdb.reader.record_locations import fitting_problem
from imagefolder_lmdb.reader.tree_descent import META_PREFIX, Level, Wanted, holding, next_level, reaches_meta


@dataclass
class LocatedFile:
    """What opening a data file by plain reads found: its meta, every record's place, the file read."""

    meta: Meta
    offsets: np.ndarray  # uint64 per record, none 0 (records inline beside the meta found in the tree)
    lengths: np.ndarray  # uint32 per record
    token: LocalFileToken  # the file these belong to (its descriptor's fstat)


def fd_token(fd: int) -> LocalFileToken:
    """The storage token of the file open as ``fd`` (reader/identity.py's ``local_token``, by descriptor)."""
    info = os.fstat(fd)
    return LocalFileToken(info.st_dev, info.st_ino, info.st_size)


def read_located(path: str) -> LocatedFile | None:
    """The data file at ``path`` opened by plain reads; None where its records must be read through LMDB.

    Raises:
        FileNotFoundError: nothing at ``path``.
        TruncatedFileError, FormatError: an incomplete copy, not an LMDB, damaged pages or meta.
    """
    check_lmdb_file(path)  # the reader's one check of a file's size, as before LMDB maps one
    fd = os.open(path, os.O_RDONLY)
    try:
        return _located(fd, path)
    finally:
        os.close(fd)


def _located(fd: int, path: str) -> LocatedFile | None:
    try:
        head = lmdb_pages.read_meta(fd)
        pages = _PagesRead(fd, head)
        values = _meta_values(pages)
    except ValueError as exc:
        raise FormatError(f"{path}: its LMDB pages are damaged ({exc}). {RECOPY_ADVICE}") from exc
    if META_KEYS["json"] not in values:
        raise FormatError(f"{path} is an LMDB, but not a finished imagefolder-lmdb data file (no meta/json key)")
    meta = decode_meta(_FoundValues(values), path)  # get() is all decode_meta asks of a txn (format.ReadTxn)
    if meta.locations is None or "locations" not in meta.document:
        return None
    if fitting_problem(fd, meta, head.txnid, head.last_pgno, head.page_size) is not None:
        return None  # read through LMDB, which names the problem (records_located.v1_records)
    try:
        offsets, lengths = _every_location(pages, meta)
    except ValueError as exc:
        raise FormatError(f"{path}: {exc}. {RECOPY_ADVICE}") from exc
    return LocatedFile(meta, offsets, lengths, fd_token(fd))


class _PagesRead:
    """The file's branch and leaf pages, each read once (checked where it is used: lmdb_pages)."""

    def __init__(self, fd: int, head: lmdb_pages.MetaPage) -> None:
        self.fd, self.head = fd, head
        self.pages: dict[int, bytes] = {}

    def get(self, pgno: int) -> bytes:
        page = self.pages.get(pgno)
        if page is None:
            size = self.head.page_size
            if not 2 <= pgno <= self.head.last_pgno:
                raise ValueError(f"page {pgno} lies outside the file's pages")
            page = self.pages[pgno] = os.pread(self.fd, size, pgno * size)
            if len(page) != size:
                raise ValueError(f"page {pgno} lies past the end of the file")
        return page


def _descend(pages: _PagesRead, wanted: Wanted) -> list[lmdb_pages.LeafEntry]:
    """The entries of every leaf whose key range ``wanted`` accepts (the descent remote/opening.py takes, by pread)."""
    head = pages.head
    if head.main.root == lmdb_pages.P_INVALID:
        return []  # no key at all: no meta/json, which the caller names
    level: Level = [(head.main.root, None, None)]
    leaves: list[lmdb_pages.LeafEntry] = []
    for _ in range(max(1, head.main.depth)):
        level = next_level(level, pages.get, head, wanted, leaves)
        if not level:
            return leaves
    raise ValueError("its B-tree is deeper than its meta page says")


def _meta_values(pages: _PagesRead) -> dict[bytes, bytes]:
    """Every meta key's value: inline ones from their leaf, the others from their overflow pages."""
    size = pages.head.page_size
    values = {}
    for entry in _descend(pages, reaches_meta):
        if not entry.key.startswith(META_PREFIX):
            continue
        if entry.inline:
            values[entry.key] = pages.get(entry.offset // size)[entry.offset % size :][: entry.length]
        else:
            values[entry.key] = os.pread(pages.fd, entry.length, entry.offset)
            if len(values[entry.key]) != entry.length:
                raise ValueError(f"the value of {entry.key.decode()} runs past the end of the file")
    return values


class _FoundValues:
    """The meta values found, as decode_meta asks for them (``get(key)``)."""

    def __init__(self, values: dict[bytes, bytes]) -> None:
        self.values = values

    def get(self, key: bytes, default: bytes | None = None) -> bytes | None:
        return self.values.get(key, default)


def _every_location(pages: _PagesRead, meta: Meta) -> tuple[np.ndarray, np.ndarray]:
    """Every record's offset and length: meta/locations', and those it leaves at 0 (stored inline in a
    leaf the meta's writing moved) found in the tree."""
    assert meta.locations is not None
    offsets = np.array(meta.locations["offset"], dtype=np.uint64)
    lengths = np.array(meta.locations["length"], dtype=np.uint32)
    missing = np.flatnonzero(offsets == 0).tolist()
    if missing:
        keys = [record_key(index) for index in missing]
        found = {entry.key: entry for entry in _descend(pages, holding(keys))}
        for index, key in zip(missing, keys, strict=True):
            if key not in found:
                raise ValueError(f"record {index} is neither located nor in the B-tree: the file is damaged")
            offsets[index], lengths[index] = found[key].offset, found[key].length
    return offsets, lengths
