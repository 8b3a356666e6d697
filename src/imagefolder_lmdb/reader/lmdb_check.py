"""The whole of a single-file LMDB checked with plain reads before LMDB may read it (verify,
add_locations): the main database's walk (lmdb_pages.py) with the order of every key, the free
list's tree and the pages it lists, the overflow headers of the values that are not records (of
every value, on request), and that no page is used twice. Raises ValueError naming the first problem.
"""

from __future__ import annotations

import os
import struct

import numpy as np

from imagefolder_lmdb.reader.lmdb_layout import P_OVERFLOW, PAGE_HEADER
from imagefolder_lmdb.reader.lmdb_pages import KeyOrder, LeafNodes, MetaPage, Tree, Walk, walk_fd, walk_tree


def _free_list(fd: int, meta: MetaPage) -> tuple[Tree, np.ndarray]:
    """Walk the free-list database (keys: transaction ids; values: a u64 count, then that many page
    numbers); returns its tree and the pages it lists, each checked to lie inside the file."""
    listed: list[np.ndarray] = []
    if meta.free is None:
        raise ValueError("the meta page names no free-list database")
    free = meta.free

    def on_leaf(pgno: int, page: bytes, nodes: LeafNodes) -> None:
        for slot in range(len(nodes.ptrs)):
            value = _free_value(fd, page, nodes, slot, meta.page_size)
            # LMDB may reserve a record longer than the list it then holds (mdb_freelist_save)
            count = int(value[0]) if len(value) else -1
            pages = value[1 : 1 + count]
            if not 0 <= count < len(value) or np.any(pages < 2) or np.any(pages > meta.last_pgno):
                raise ValueError(f"free-list page {pgno}: a list of free pages is damaged")
            listed.append(pages)

    # its keys are transaction ids compared as native (little-endian) integers: MDB_INTEGERKEY
    order = KeyOrder(free.root, lambda key: int.from_bytes(key, "little"))
    tree = walk_tree(fd, meta, free, "free list", on_leaf, order)
    return tree, np.concatenate(listed) if listed else np.zeros(0, dtype=np.uint64)


def _free_value(fd: int, page: bytes, nodes: LeafNodes, slot: int, page_size: int) -> np.ndarray:
    """One free-list value as u64 words (inline, or read from its overflow pages)."""
    length = int(nodes.length[slot])
    if length % 8:
        raise ValueError("a free-list value is not a list of 8-byte page numbers")
    if nodes.big[slot]:
        raw = os.pread(fd, length, int(nodes.first_overflow[slot]) * page_size + PAGE_HEADER)
    else:
        at = int(nodes.data_at[slot])
        raw = page[at : at + length]
    return np.frombuffer(raw, dtype="<u8")


def _run_lengths(fd: int, meta: MetaPage, first: np.ndarray, least: np.ndarray, name: str) -> np.ndarray:
    """The page counts overflow headers give for the runs starting at ``first``, each checked: the
    page says it is that page and an overflow page, and its run holds its value inside the file."""
    counts = least.copy()
    for slot, pgno in enumerate(first.tolist()):
        header = os.pread(fd, PAGE_HEADER, pgno * meta.page_size)
        stored, _, flags, pages = struct.unpack("<QHHI", header)
        if stored != pgno or flags != P_OVERFLOW or pages < least[slot] or pgno + pages - 1 > meta.last_pgno:
            raise ValueError(f"overflow page {pgno} of the {name} has a damaged header")
        counts[slot] = pages
    return counts


def _runs(tree: Tree) -> tuple[np.ndarray, np.ndarray]:
    """(first page, least page count) of every value of a tree that lies on overflow pages."""
    if not tree.runs:
        return np.zeros(0, np.uint64), np.zeros(0, np.uint64)
    return np.concatenate([f for f, _ in tree.runs]), np.concatenate([c for _, c in tree.runs])


def _claims(parts: list[tuple[np.ndarray, np.ndarray, str]]) -> None:
    """No page may be claimed twice: ``parts`` are (first pages, page counts, whose) runs."""
    starts = np.concatenate([first for first, _, _ in parts])
    counts = np.concatenate([count for _, count, _ in parts])
    owners = np.concatenate([np.full(len(first), k) for k, (first, _, _) in enumerate(parts)])
    order = np.argsort(starts, kind="stable")
    ends = starts[order] + counts[order]
    clash = np.flatnonzero(starts[order][1:] < ends[:-1])
    if clash.size:
        a, b = order[clash[0]], order[clash[0] + 1]
        raise ValueError(f"page {int(starts[b])} is used twice: by {parts[owners[a]][2]} and by {parts[owners[b]][2]}")


def check_fd(fd: int, key_width: int = 8, every_value: bool = False) -> Walk:
    """walk_fd, plus what the rest of LMDB reads: the free list's tree and the pages it lists, and
    the overflow headers of the values that are not records (of every value with ``every_value``).
    No page may be used twice (by two trees, two values, a tree and a value or the free list):
    damage that would make LMDB return one value's bytes for another's, or reuse a page in use.
    Raises ValueError naming the first problem."""
    walk = walk_fd(fd, key_width, ordered=True)
    meta = walk.meta
    assert meta.free is not None
    free_tree, free_pages = _free_list(fd, meta)
    first, least = _runs(walk.tree)
    records = np.isin(first, (walk.records.offset[~walk.records.inline] - PAGE_HEADER) // meta.page_size)
    read = np.ones(len(first), bool) if every_value else ~records
    counts = least.copy()
    counts[read] = _run_lengths(fd, meta, first[read], least[read], "main database")
    if every_value and int(counts.sum()) != meta.main.overflow_pages:
        raise ValueError(
            f"the values' overflow runs hold {int(counts.sum())} pages, the meta page says {meta.main.overflow_pages}"
        )
    free_first, free_least = _runs(free_tree)
    free_counts = _run_lengths(fd, meta, free_first, free_least, "free list")
    if int(free_counts.sum()) != meta.free.overflow_pages:
        raise ValueError(
            f"the free list's overflow runs hold {int(free_counts.sum())} pages, "
            f"its meta page says {meta.free.overflow_pages}"
        )
    one = np.ones
    _claims(
        [
            (np.array([0], np.uint64), np.array([2], np.uint64), "the meta pages"),
            (np.array(walk.tree.pages, np.uint64), one(len(walk.tree.pages), np.uint64), "the main database's tree"),
            (first[records], counts[records], "a record's value"),
            (first[~records], counts[~records], "a meta value"),
            (np.array(free_tree.pages, np.uint64), one(len(free_tree.pages), np.uint64), "the free list's tree"),
            (free_first, free_counts, "the free list's values"),
            (free_pages.astype(np.uint64), one(len(free_pages), np.uint64), "the free list (a free page)"),
        ]
    )
    return walk


def check(path: str | os.PathLike[str], key_width: int = 8, every_value: bool = False) -> Walk:
    """check_fd on the single-file LMDB at ``path``."""
    if os.path.isdir(path):
        raise ValueError(f"{path} is a directory: only single-file (subdir=False) LMDBs are walked")
    fd = os.open(path, os.O_RDONLY)
    try:
        return check_fd(fd, key_width, every_value)
    finally:
        os.close(fd)
