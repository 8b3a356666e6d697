"""Where each value of a single-file LMDB lies, found by walking its B-tree with plain reads.

py-lmdb hands out values through the memory map and touches every 4 KB page of each one first,
which on a cold cache is one synchronous read per page. Knowing a value's file offset lets a
reader fetch it with one ``os.pread`` instead. This module finds those offsets without LMDB's
help and without reading any value: it reads the two meta pages, then the branch and leaf pages
of the main database (a small fraction of a file of image-sized values), never an overflow (value)
page.

The on-disk layout is LMDB 0.9's (libraries/liblmdb/mdb.c), 64-bit little-endian builds only:

- every page starts with a 16-byte header: pgno u64, pad u16, flags u16, then lower u16 and
  upper u16 (overflow pages: a u32 page count instead);
- meta pages 0 and 1: after the header, magic u32, version u32, address u64, mapsize u64, two
  48-byte MDB_db records (free list, main database), last_pg u64, txnid u64; the valid one is
  the one with the larger txnid; the page size is the free-list record's ``pad``;
- branch and leaf pages: ``(lower - 16) / 2`` node offsets (u16, from the page start) follow
  the header; a node is lo u16, hi u16, flags u16, ksize u16, the key, then the data. A branch
  node's child is ``lo | hi << 16 | flags << 32``. A leaf node's data size is ``lo | hi << 16``;
  with F_BIGDATA its data is the u64 number of the first overflow page and the value starts
  right after that page's header, otherwise the value is inline after the key.

Anything else (another magic or version, duplicate-sorted or named databases, a page whose stored
number is not where it was read) is refused with ValueError rather than guessed at.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field

import numpy as np

MAGIC = 0xBEEFC0DE
DATA_VERSION = 1
PAGE_HEADER = 16
NODE_HEADER = 8

P_BRANCH, P_LEAF, P_OVERFLOW, P_META, P_LEAF2 = 0x01, 0x02, 0x04, 0x08, 0x20
F_BIGDATA, F_SUBDATA, F_DUPDATA = 0x01, 0x02, 0x04
MDB_DUPSORT = 0x04
P_INVALID = 2**64 - 1

#: The fields of MDB_db after its u32 pad: flags u16, depth u16, then five u64 counts/pgnos.
_DB = struct.Struct("<IHHQQQQQ")
#: magic, version, address, mapsize (after the page header); then two MDB_db; then last_pg, txnid.
_META_HEAD = struct.Struct("<IIQQ")
_META_TAIL = struct.Struct("<QQ")


@dataclass(frozen=True)
class Database:
    """One MDB_db record of a meta page."""

    pad: int
    flags: int
    depth: int
    branch_pages: int
    leaf_pages: int
    overflow_pages: int
    entries: int
    root: int


@dataclass(frozen=True)
class MetaPage:
    """What a meta page says about the state of the file."""

    page_size: int
    main: Database
    last_pgno: int
    txnid: int


@dataclass
class Nodes:
    """The leaf nodes a walk found whose key is a record key, in key order."""

    index: np.ndarray  # int64: the record number parsed from the key
    offset: np.ndarray  # uint64: file offset of the value's first byte
    length: np.ndarray  # uint32: value size in bytes
    leaf: np.ndarray  # uint64: number of the leaf page holding the node
    inline: np.ndarray  # bool: the value sits in the leaf page itself (moves when the leaf is rewritten)


@dataclass
class Walk:
    """The result of walking a file's main database."""

    meta: MetaPage
    records: Nodes
    #: leaf pages that hold at least one key that is not a record key (meta keys, here)
    other_key_leaves: set[int] = field(default_factory=set)
    other_keys: int = 0


def _read_page(fd: int, pgno: int, page_size: int) -> bytes:
    page = os.pread(fd, page_size, pgno * page_size)
    if len(page) != page_size:
        raise ValueError(f"page {pgno} lies past the end of the file: the file is truncated")
    return page


def _meta_page(page: bytes, pgno: int) -> MetaPage:
    stored_pgno, _, flags = struct.unpack_from("<QHH", page)
    magic, version, _, _ = _META_HEAD.unpack_from(page, PAGE_HEADER)
    if magic != MAGIC:
        if struct.unpack_from(">I", page, PAGE_HEADER)[0] == MAGIC:
            raise ValueError("a big-endian LMDB file; only little-endian files are supported")
        if struct.unpack_from("<I", page, 12)[0] == MAGIC:
            raise ValueError("an LMDB file of a 32-bit build; only 64-bit files are supported")
        raise ValueError("not an LMDB file (no LMDB magic number in its meta page)")
    if version != DATA_VERSION:
        raise ValueError(f"LMDB data format version {version}; only version {DATA_VERSION} (LMDB 0.9) is supported")
    if stored_pgno != pgno or not flags & P_META:
        raise ValueError(f"meta page {pgno} is damaged")
    start = PAGE_HEADER + _META_HEAD.size
    free = Database(*_DB.unpack_from(page, start))
    main = Database(*_DB.unpack_from(page, start + _DB.size))
    last_pgno, txnid = _META_TAIL.unpack_from(page, start + 2 * _DB.size)
    return MetaPage(page_size=free.pad, main=main, last_pgno=last_pgno, txnid=txnid)


def read_meta(fd: int) -> MetaPage:
    """The current meta page of an open LMDB file: of pages 0 and 1, the one with the larger txnid."""
    first = _meta_page(os.pread(fd, 4096, 0).ljust(4096, b"\0"), 0)
    page_size = first.page_size
    if page_size < 512 or page_size & (page_size - 1):
        raise ValueError(f"implausible LMDB page size {page_size}")
    second = _meta_page(_read_page(fd, 1, page_size), 1)
    return max(first, second, key=lambda meta: meta.txnid)


def _page_header(page: bytes, pgno: int, page_size: int) -> tuple[int, int]:
    """(flags, number of nodes) of a branch or leaf page, after checking it is where it claims."""
    stored_pgno, _, flags, lower, upper = struct.unpack_from("<QHHHH", page)
    if stored_pgno != pgno:
        raise ValueError(f"page {pgno} says it is page {stored_pgno}: the file is damaged or not a plain copy")
    if flags & (P_LEAF2 | P_OVERFLOW | P_META) or not flags & (P_BRANCH | P_LEAF):
        raise ValueError(f"page {pgno} has flags {flags:#x}, expected a branch or leaf page")
    if not PAGE_HEADER <= lower <= upper <= page_size or lower % 2:
        raise ValueError(f"page {pgno} has a damaged header")
    return flags, (lower - PAGE_HEADER) // 2


def _node_fields(page: bytes, count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per node of a page: its offset, lo, hi, flags and key size (LMDB keeps nodes 2-byte aligned)."""
    words = np.frombuffer(page, dtype="<u2")
    ptrs = words[PAGE_HEADER // 2 : PAGE_HEADER // 2 + count].astype(np.int64)
    if np.any(ptrs % 2) or np.any(ptrs < PAGE_HEADER) or np.any(ptrs > len(page) - NODE_HEADER):
        raise ValueError("a node offset points outside its page")
    at = ptrs // 2
    ksize = words[at + 3]
    if np.any(ptrs + NODE_HEADER + ksize > len(page)):
        raise ValueError("a key runs past the end of its page")
    return ptrs, words[at].astype(np.uint64), words[at + 1].astype(np.uint64), words[at + 2], ksize


def _children(page: bytes, count: int) -> list[int]:
    """The child page numbers of a branch page, in key order."""
    _, lo, hi, flags, _ = _node_fields(page, count)
    return (lo | (hi << np.uint64(16)) | (flags.astype(np.uint64) << np.uint64(32))).tolist()


def _gather(page: np.ndarray, starts: np.ndarray, width: int) -> np.ndarray:
    """``width`` bytes at each of ``starts``, as rows."""
    return page[starts[:, None] + np.arange(width)]


def _leaf_records(page: bytes, count: int, pgno: int, page_size: int, key_width: int) -> tuple[Nodes, int]:
    """The record nodes of one leaf page, and how many of its keys are not record keys."""
    ptrs, lo, hi, flags, ksize = _node_fields(page, count)
    if np.any(flags & ~np.uint16(F_BIGDATA)):
        raise ValueError(f"leaf page {pgno} holds a sub-database or duplicate data; not supported")
    raw = np.frombuffer(page, dtype=np.uint8)
    is_record = ksize == key_width
    candidates = np.flatnonzero(is_record)
    digits = _gather(raw, ptrs[candidates] + NODE_HEADER, key_width).astype(np.int64) - ord("0")
    is_digits = np.all((digits >= 0) & (digits <= 9), axis=1)
    is_record[candidates[~is_digits]] = False
    chosen = np.flatnonzero(is_record)
    index = digits[is_digits] @ (10 ** np.arange(key_width - 1, -1, -1, dtype=np.int64))
    data_at = ptrs[chosen] + NODE_HEADER + key_width
    big = (flags[chosen] & F_BIGDATA).astype(bool)
    length = (lo[chosen] | (hi[chosen] << np.uint64(16))).astype(np.uint64)
    offset = np.uint64(pgno * page_size) + data_at.astype(np.uint64)
    if np.any(big):
        overflow = _gather(raw, data_at[big], 8).copy().view("<u8").ravel()
        offset[big] = overflow * np.uint64(page_size) + np.uint64(PAGE_HEADER)
    if np.any(~big & (data_at.astype(np.uint64) + length > np.uint64(page_size))):
        raise ValueError(f"leaf page {pgno}: an inline value runs past the end of its page")
    nodes = Nodes(
        index=index,
        offset=offset,
        length=length.astype(np.uint32),
        leaf=np.full(len(chosen), pgno, dtype=np.uint64),
        inline=~big,
    )
    return nodes, count - len(chosen)


def _advise(fd: int, pages: list[int], page_size: int) -> None:
    """Ask the kernel for a whole level's pages at once: one deep queue instead of one read each."""
    if hasattr(os, "posix_fadvise"):
        for pgno in pages:
            os.posix_fadvise(fd, pgno * page_size, page_size, os.POSIX_FADV_WILLNEED)


def _concat(parts: list[Nodes]) -> Nodes:
    if not parts:
        empty = np.zeros(0, dtype=np.uint64)
        return Nodes(np.zeros(0, np.int64), empty, np.zeros(0, np.uint32), empty, np.zeros(0, bool))
    return Nodes(*(np.concatenate([getattr(p, name) for p in parts]) for name in Nodes.__dataclass_fields__))


def walk_fd(fd: int, key_width: int = 8) -> Walk:
    """Walk the main database of the LMDB file open as ``fd``; record keys are ``key_width``
    ASCII digits. Checks the page counts against the meta page, so a misread cannot pass."""
    meta = read_meta(fd)
    main, size = meta.main, meta.page_size
    if main.flags & MDB_DUPSORT:
        raise ValueError("the main database is duplicate-sorted (MDB_DUPSORT); not supported")
    walk = Walk(meta=meta, records=_concat([]))
    if main.root == P_INVALID:
        return walk
    level, depth, branches, leaves, parts = [main.root], 0, 0, 0, []
    while level:
        depth += 1
        _advise(fd, level, size)
        below: list[int] = []
        for pgno in level:
            if pgno > meta.last_pgno:
                raise ValueError(f"page {pgno} lies beyond the last page {meta.last_pgno}")
            page = _read_page(fd, pgno, size)
            flags, count = _page_header(page, pgno, size)
            if flags & P_BRANCH:
                branches += 1
                below.extend(_children(page, count))
                continue
            leaves += 1
            nodes, others = _leaf_records(page, count, pgno, size, key_width)
            parts.append(nodes)
            if others:
                walk.other_key_leaves.add(pgno)
                walk.other_keys += others
        level = below
    walk.records = _concat(parts)
    found = (depth, branches, leaves, len(walk.records.index) + walk.other_keys)
    expected = (main.depth, main.branch_pages, main.leaf_pages, main.entries)
    if found != expected:
        raise ValueError(f"walked (depth, branch pages, leaf pages, entries) = {found}, the meta page says {expected}")
    return walk


def walk(path: str | os.PathLike[str], key_width: int = 8) -> Walk:
    """Walk the main database of the single-file LMDB at ``path`` (see walk_fd)."""
    if os.path.isdir(path):
        raise ValueError(f"{path} is a directory: only single-file (subdir=False) LMDBs are walked")
    fd = os.open(path, os.O_RDONLY)
    try:
        return walk_fd(fd, key_width)
    finally:
        os.close(fd)
