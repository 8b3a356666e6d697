"""Where each value of a single-file LMDB lies, found by walking its B-tree with plain reads.

py-lmdb hands out values through the memory map and touches every 4 KB page of each one first,
which on a cold cache is one synchronous read per page. Knowing a value's file offset lets a
reader fetch it with one ``os.pread`` instead. This module finds those offsets without LMDB's
help and without reading any value: it reads the two meta pages, then the branch and leaf pages
of the main database (a small fraction of a file of image-sized values), never an overflow (value)
page.

The on-disk layout is LMDB 0.9's, as ``imagefolder_lmdb.reader.lmdb_layout`` describes it (its one home,
shared with the reader's file checks).

Anything else (another magic or version, duplicate-sorted or named databases, a page whose stored
number is not where it was read) is refused with ValueError rather than guessed at. Every page is
checked before its nodes are followed (the file's size against the meta page, page numbers inside
the file and each visited once, node offsets and keys inside their page, values inside their page
or the file), since the file may be a damaged copy.

``check`` (verify, add_locations; in lmdb_check.py) checks the whole file before LMDB may read it:
also the order of every key, the free list's tree and the pages it lists, the overflow headers of
the values that are not records (of every value, on request), and that no page is used twice.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from imagefolder_lmdb.reader.lmdb_layout import (
    F_BIGDATA,
    MDB_DUPSORT,
    NODE_HEADER,
    P_BRANCH,
    P_INVALID,
    P_LEAF,
    PAGE_FIELDS,
    PAGE_HEADER,
    Database,
    meta_problem,
    unpack_meta,
)
from imagefolder_lmdb.reader.lmdb_leaves import BATCH_PAGES, BatchFailed, LeafBatch, batch_records, leaf_batch


@dataclass(frozen=True)
class MetaPage:
    """What a meta page says about the state of the file."""

    page_size: int
    main: Database
    last_pgno: int
    txnid: int
    free: Database | None = None  # the free-list database (pages freed by earlier transactions)


@dataclass
class Nodes:
    """The leaf nodes a walk found whose key is a record key, in key order."""

    index: np.ndarray  # int64: the record number parsed from the key
    offset: np.ndarray  # uint64: file offset of the value's first byte
    length: np.ndarray  # uint32: value size in bytes
    leaf: np.ndarray  # uint64: number of the leaf page holding the node
    inline: np.ndarray  # bool: the value sits in the leaf page itself (moves when the leaf is rewritten)


@dataclass
class Tree:
    """The pages of one database's B-tree, found by a walk."""

    pages: list[int] = field(default_factory=list)  # its branch and leaf pages
    #: per leaf page: the first overflow page and the page count of each value stored on them
    runs: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)


@dataclass
class Walk:
    """The result of walking a file's main database."""

    meta: MetaPage
    records: Nodes
    #: leaf pages that hold at least one key that is not a record key (meta keys, here)
    other_key_leaves: set[int] = field(default_factory=set)
    other_keys: int = 0
    tree: Tree = field(default_factory=Tree)


def _read_page(fd: int, pgno: int, page_size: int) -> bytes:
    page = os.pread(fd, page_size, pgno * page_size)
    if len(page) != page_size:
        raise ValueError(f"page {pgno} lies past the end of the file: the file is truncated")
    return page


def _meta_page(page: bytes, pgno: int) -> MetaPage:
    problem = meta_problem(page, pgno)
    if problem is not None:
        raise ValueError(problem)
    fields = unpack_meta(page)
    free = fields.free
    return MetaPage(page_size=free.pad, main=fields.main, last_pgno=fields.last_pgno, txnid=fields.txnid, free=free)


def read_meta(fd: int) -> MetaPage:
    """The current meta page of an open LMDB file: of pages 0 and 1, the one with the larger txnid."""
    first = _meta_page(os.pread(fd, 4096, 0).ljust(4096, b"\0"), 0)
    second = _meta_page(_read_page(fd, 1, _plausible(first.page_size)), 1)
    return max(first, second, key=lambda meta: meta.txnid)


def _page_header(page: bytes, pgno: int, page_size: int) -> tuple[int, int]:
    """(flags, number of nodes) of a branch or leaf page, after checking it is where it claims."""
    stored_pgno, flags, lower, upper = PAGE_FIELDS.unpack_from(page)
    if stored_pgno != pgno:
        raise ValueError(f"page {pgno} says it is page {stored_pgno}: the file is damaged or not a plain copy")
    if flags not in (P_BRANCH, P_LEAF):  # on disk exactly one of them (LMDB clears P_DIRTY first)
        raise ValueError(f"page {pgno} has flags {flags:#x}, expected a branch or leaf page")
    if not PAGE_HEADER <= lower <= upper <= page_size or lower % 2:
        raise ValueError(f"page {pgno} has a damaged header")
    return flags, (lower - PAGE_HEADER) // 2


def _node_fields(page: bytes, count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per node of a page: its offset, lo, hi, flags and key size (LMDB keeps nodes 2-byte aligned,
    between the page's ``upper`` bound and its end)."""
    words = np.frombuffer(page, dtype="<u2")
    ptrs = words[PAGE_HEADER // 2 : PAGE_HEADER // 2 + count].astype(np.int64)
    upper = int(words[7])
    if np.any(ptrs % 2) or np.any(ptrs < upper) or np.any(ptrs > len(page) - NODE_HEADER):
        raise ValueError("a node offset points outside its page")
    at = ptrs // 2
    ksize = words[at + 3].astype(np.int64)
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


def overflow_pages(length: np.ndarray, page_size: int) -> np.ndarray:
    """How many overflow pages LMDB gives a value of ``length`` bytes (OVPAGES in mdb.c)."""
    return (length.astype(np.uint64) + np.uint64(PAGE_HEADER - 1)) // np.uint64(page_size) + np.uint64(1)


@dataclass
class LeafNodes:
    """Every node of one leaf page, checked to keep its data inside the page or the file."""

    ptrs: np.ndarray  # int64: the node's offset in its page
    ksize: np.ndarray  # int64: key size
    length: np.ndarray  # uint64: data size
    big: np.ndarray  # bool: the data is on overflow pages (F_BIGDATA)
    data_at: np.ndarray  # int64: offset of the data (inline) or of the overflow page number, in the page
    first_overflow: np.ndarray  # uint64: the first overflow page of a big node, 0 for an inline one


def _leaf_nodes(page: bytes, count: int, pgno: int, meta: MetaPage) -> LeafNodes:
    """The nodes of leaf page ``pgno``: inline data inside the page, overflow runs inside the pages
    the meta page counts (LMDB would follow either past the end of the file)."""
    ptrs, lo, hi, flags, ksize = _node_fields(page, count)
    if np.any(flags & ~np.uint16(F_BIGDATA)):
        raise ValueError(f"leaf page {pgno} holds a sub-database or duplicate data; not supported")
    size = meta.page_size
    big = (flags & F_BIGDATA).astype(bool)
    length = lo | (hi << np.uint64(16))
    data_at = ptrs + NODE_HEADER + ksize
    first = np.zeros(count, dtype=np.uint64)
    if np.any(big & (data_at + 8 > size)):
        raise ValueError(f"leaf page {pgno}: an overflow page number runs past the end of its page")
    if np.any(big):
        first[big] = _gather(np.frombuffer(page, dtype=np.uint8), data_at[big], 8).copy().view("<u8").ravel()
        last = first[big] + overflow_pages(length[big], size) - np.uint64(1)
        if np.any(first[big] < 2) or np.any(last > np.uint64(meta.last_pgno)) or np.any(last < first[big]):
            raise ValueError(f"leaf page {pgno}: a value's overflow pages lie outside the file's pages")
    if np.any(~big & (data_at.astype(np.uint64) + length > np.uint64(size))):
        raise ValueError(f"leaf page {pgno}: an inline value runs past the end of its page")
    return LeafNodes(ptrs, ksize, length, big, data_at, first)


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


#: Called with each leaf page of a tree walk: its number, its bytes and its checked nodes.
OnLeaf = Callable[[int, bytes, "LeafNodes"], None]
#: Called with many checked leaf pages of a tree walk at once (lmdb_leaves.py).
OnLeaves = Callable[[LeafBatch], None]


class KeyOrder:
    """Checks that a tree's keys are in the order LMDB's searches rely on: ascending within each
    page, and inside the range its parent's keys give it (else a search misses keys that are there)."""

    def __init__(self, root: int, sort_key: Callable[[bytes], Any]) -> None:
        self.sort_key = sort_key
        self.bounds: dict[int, tuple[Any, Any]] = {root: (None, None)}  # pgno -> [low, high)

    def _keys(self, page: bytes, ptrs: np.ndarray, ksize: np.ndarray) -> list[Any]:
        at = (ptrs + NODE_HEADER).tolist()
        return [self.sort_key(page[start : start + size]) for start, size in zip(at, ksize.tolist(), strict=True)]

    def _check(self, pgno: int, keys: list[Any]) -> tuple[Any, Any]:
        low, high = self.bounds.pop(pgno)
        inside = not keys or ((low is None or keys[0] >= low) and (high is None or keys[-1] < high))
        if not inside or any(a >= b for a, b in itertools.pairwise(keys)):
            raise ValueError(f"page {pgno}: its keys are out of order: the file is damaged")
        return low, high

    def branch(self, pgno: int, page: bytes, count: int, children: list[int]) -> None:
        ptrs, _, _, _, ksize = _node_fields(page, count)
        keys = self._keys(page, ptrs[1:], ksize[1:])  # LMDB never compares a branch page's first key
        low, high = self._check(pgno, keys)
        edges = [low, *keys, high]
        for slot, child in enumerate(children):
            self.bounds[child] = (edges[slot], edges[slot + 1])

    def leaf(self, pgno: int, page: bytes, nodes: LeafNodes) -> None:
        self._check(pgno, self._keys(page, nodes.ptrs, nodes.ksize))


def walk_tree(
    fd: int,
    meta: MetaPage,
    db: Database,
    name: str,
    on_leaf: OnLeaf,
    order: KeyOrder | None,
    on_leaves: OnLeaves | None = None,
) -> Tree:
    """Walk one database's B-tree level by level with plain reads, checking every page before its
    nodes are followed (and the order of its keys, given ``order``), and the totals against the
    meta page's record of the database. ``on_leaves``: instead of ``on_leaf``, the leaf pages are
    checked and handed over many at a time (lmdb_leaves.py; the same checks, the same errors)."""
    tree = Tree()
    if db.root == P_INVALID:
        return tree
    level, depth, branches, leaves = [db.root], 0, 0, 0
    seen: set[int] = set()
    leaf_pages: LeafPages = (
        PendingLeaves(meta, order, tree, on_leaves)
        if on_leaves is not None
        else OneLeafAtATime(meta, order, tree, on_leaf)
    )
    while level:
        depth += 1
        if depth > db.depth:
            raise ValueError(f"the {name} is deeper than the {db.depth} levels its meta page says")
        _advise(fd, level, meta.page_size)
        below: list[int] = []
        for pgno in level:
            if not 2 <= pgno <= meta.last_pgno or pgno in seen:
                leaf_pages.flush()  # an earlier page's error comes first, as in a walk page by page
                raise ValueError(f"the {name} points to page {pgno}, which is not one of its own pages")
            seen.add(pgno)
            page, flags, count = _checked_page(fd, pgno, meta.page_size, leaf_pages)
            if flags & P_BRANCH:
                branches += 1
                below.extend(_branch_children(pgno, page, count, name, order))
            else:
                leaves += 1
                leaf_pages.add(pgno, page, count)
        leaf_pages.flush()
        level = below
    tree.pages = sorted(seen)
    _check_totals(name, db, (depth, branches, leaves, leaf_pages.entries), leaf_pages.overflow)
    return tree


def _branch_children(pgno: int, page: bytes, count: int, name: str, order: KeyOrder | None) -> list[int]:
    if count < 2 and name == "main database":  # LMDB asserts this never happens (abort)
        raise ValueError(f"branch page {pgno} of the {name} has {count} keys")
    children = _children(page, count)
    if order is not None:
        order.branch(pgno, page, count, children)
    return children


def _check_totals(name: str, db: Database, found: tuple[int, int, int, int], overflow: int) -> None:
    """(depth, branch pages, leaf pages, entries) as the meta page says. A value's overflow run may be
    longer than its size needs (LMDB reuses a run for a smaller value), so the sizes give a lower
    bound of the meta page's count; check_fd reads the headers."""
    expected = (db.depth, db.branch_pages, db.leaf_pages, db.entries)
    if found != expected or overflow > db.overflow_pages:
        raise ValueError(
            f"walked the {name}: (depth, branch pages, leaf pages, entries) = {found} and at least {overflow} "
            f"overflow pages, the meta page says {expected} and {db.overflow_pages}"
        )


class OneLeafAtATime:
    """Each leaf page checked and handed to ``on_leaf`` as it is read."""

    def __init__(self, meta: MetaPage, order: KeyOrder | None, tree: Tree, on_leaf: OnLeaf) -> None:
        self.meta, self.order, self.tree, self.on_leaf = meta, order, tree, on_leaf
        self.entries = self.overflow = 0

    def add(self, pgno: int, page: bytes, count: int) -> None:
        nodes = _leaf_nodes(page, count, pgno, self.meta)
        if self.order is not None:
            self.order.leaf(pgno, page, nodes)
        runs = overflow_pages(nodes.length[nodes.big], self.meta.page_size)
        self.entries += count
        self.overflow += int(runs.sum())
        self.tree.runs.append((nodes.first_overflow[nodes.big], runs))
        self.on_leaf(pgno, page, nodes)

    def flush(self) -> None:
        """Nothing waits."""


def _checked_page(fd: int, pgno: int, page_size: int, pending: LeafPages) -> tuple[bytes, int, int]:
    """Page ``pgno``, its flags and node count; before its own error, the pending leaves' (the order
    of a walk page by page)."""
    try:
        page = _read_page(fd, pgno, page_size)
        return (page, *_page_header(page, pgno, page_size))
    except ValueError:
        pending.flush()
        raise


class PendingLeaves:
    """Leaf pages read but not yet checked: checked and handed over together (lmdb_leaves.py)."""

    def __init__(self, meta: MetaPage, order: KeyOrder | None, tree: Tree, on_leaves: OnLeaves) -> None:
        self.meta, self.order, self.tree, self.on_leaves = meta, order, tree, on_leaves
        self.pages: list[tuple[int, bytes, int]] = []
        self.entries = self.overflow = 0

    def add(self, pgno: int, page: bytes, count: int) -> None:
        self.pages.append((pgno, page, count))
        if len(self.pages) >= BATCH_PAGES:
            self.flush()

    def flush(self) -> None:
        if not self.pages:
            return
        pgnos, pages, counts = (list(column) for column in zip(*self.pages, strict=True))
        try:
            batch = leaf_batch(pages, pgnos, counts, self.meta.page_size, self.meta.last_pgno)
        except BatchFailed:
            self._one_by_one()
            raise ValueError(f"leaf pages {pgnos[0]}..{pgnos[-1]} do not check out") from None  # not reached
        if self.order is not None:
            for row, (pgno, page) in enumerate(zip(pgnos, pages, strict=True)):
                self.order.leaf(pgno, page, _page_nodes(batch, row))
        self.pages = []
        runs = overflow_pages(batch.length[batch.big], self.meta.page_size)
        self.entries += len(batch.ptrs)
        self.overflow += int(runs.sum())
        self.tree.runs.append((batch.first_overflow[batch.big], runs))
        self.on_leaves(batch)

    def _one_by_one(self) -> None:
        """Each page checked alone, as a walk page by page does: raises the first page's error."""
        for pgno, page, count in self.pages:
            nodes = _leaf_nodes(page, count, pgno, self.meta)
            if self.order is not None:
                self.order.leaf(pgno, page, nodes)


LeafPages = OneLeafAtATime | PendingLeaves


def _page_nodes(batch: LeafBatch, row: int) -> LeafNodes:
    """The nodes of the batch's page ``row``, as _leaf_nodes gives them."""
    span = slice(int(batch.starts[row]), int(batch.starts[row + 1]))
    columns = (batch.ptrs, batch.ksize, batch.length, batch.big, batch.data_at, batch.first_overflow)
    return LeafNodes(*(column[span] for column in columns))


def _check_size(fd: int, meta: MetaPage) -> None:
    size, needed = os.fstat(fd).st_size, (meta.last_pgno + 1) * meta.page_size
    if size < needed:
        raise ValueError(f"the file holds {size:,} bytes, its meta page says {needed:,}: it is truncated")


def walk_fd(fd: int, key_width: int = 8, ordered: bool = False) -> Walk:
    """Walk the main database of the LMDB file open as ``fd``; record keys are ``key_width``
    ASCII digits. Checks each page and the totals against the meta page, so a misread cannot pass;
    ``ordered``: also the order of every key (a Python loop over them, for checks of a whole file)."""
    meta = read_meta(fd)
    if meta.main.flags & MDB_DUPSORT:
        raise ValueError("the main database is duplicate-sorted (MDB_DUPSORT); not supported")
    _check_size(fd, meta)
    walk = Walk(meta=meta, records=_concat([]))
    parts: list[Nodes] = []

    def on_leaves(batch: LeafBatch) -> None:
        found = batch_records(batch, meta.page_size, key_width)
        parts.append(Nodes(found.index, found.offset, found.length, found.leaf, found.inline))
        walk.other_key_leaves.update(found.other_key_pages.tolist())
        walk.other_keys += found.other_keys

    order = KeyOrder(meta.main.root, bytes) if ordered else None  # LMDB's default order: memcmp
    walk.tree = walk_tree(fd, meta, meta.main, "main database", _no_leaf, order, on_leaves)
    walk.records = _concat(parts)
    return walk


def _no_leaf(pgno: int, page: bytes, nodes: LeafNodes) -> None:
    """walk_fd's leaves go to its ``on_leaves`` instead."""


def walk(path: str | os.PathLike[str], key_width: int = 8) -> Walk:
    """Walk the main database of the single-file LMDB at ``path`` (see walk_fd)."""
    if os.path.isdir(path):
        raise ValueError(f"{path} is a directory: only single-file (subdir=False) LMDBs are walked")
    fd = os.open(path, os.O_RDONLY)
    try:
        return walk_fd(fd, key_width)
    finally:
        os.close(fd)


# -- pages as bytes, for readers without a file descriptor (imagefolder_lmdb.remote: ranged GETs) --


@dataclass(frozen=True)
class LeafEntry:
    """One node of a leaf page: its key, and where its value lies in the file."""

    key: bytes
    offset: int  # the value's first byte in the file
    length: int
    inline: bool  # the value sits in the leaf page itself


def page_size_of(first_page: bytes) -> int:
    """The page size meta page 0 records (its first 4096 bytes suffice), checked for plausibility."""
    return _plausible(_meta_page(first_page[:4096].ljust(4096, b"\0"), 0).page_size)


def _plausible(page_size: int) -> int:
    """``page_size``, a power of two of at least 512, or ValueError (read_meta and page_size_of)."""
    if page_size < 512 or page_size & (page_size - 1):
        raise ValueError(f"implausible LMDB page size {page_size}")
    return page_size


def current_meta(page0: bytes, page1: bytes) -> MetaPage:
    """The current meta page, from the bytes of pages 0 and 1: the one with the larger txnid."""
    return max(_meta_page(page0, 0), _meta_page(page1, 1), key=lambda meta: meta.txnid)


def is_branch(page: bytes, pgno: int, page_size: int) -> bool:
    """Whether page ``pgno`` (its bytes) is a branch page; False for a leaf; ValueError for anything else."""
    return _page_header(page, pgno, page_size)[0] == P_BRANCH


def branch_entries(page: bytes, pgno: int, page_size: int) -> tuple[list[bytes], list[int]]:
    """The keys and child page numbers of branch page ``pgno`` (the first key is unused by LMDB)."""
    _, count = _page_header(page, pgno, page_size)
    ptrs, _, _, _, ksize = _node_fields(page, count)
    keys = [
        page[start + NODE_HEADER : start + NODE_HEADER + size]
        for start, size in zip(ptrs.tolist(), ksize.tolist(), strict=True)
    ]
    return keys, _children(page, count)


def leaf_entries(page: bytes, pgno: int, meta: MetaPage) -> list[LeafEntry]:
    """Every node of leaf page ``pgno`` with its value's place in the file, checked as a walk checks it."""
    _, count = _page_header(page, pgno, meta.page_size)
    nodes = _leaf_nodes(page, count, pgno, meta)
    entries = []
    for slot in range(count):
        start, size = int(nodes.ptrs[slot]) + NODE_HEADER, int(nodes.ksize[slot])
        big = bool(nodes.big[slot])
        offset = (
            int(nodes.first_overflow[slot]) * meta.page_size + PAGE_HEADER
            if big
            else pgno * meta.page_size + int(nodes.data_at[slot])
        )
        entries.append(LeafEntry(page[start : start + size], offset, int(nodes.length[slot]), not big))
    return entries
