"""A descent of an LMDB B-tree from its root to the leaves whose key ranges a caller wants: the meta
keys' leaves, or those holding some records. One level at a time, so that a local file reads its pages
by pread (reader/data_files.py) and a remote one fetches each level's pages in one round (remote/opening.py)."""

from __future__ import annotations

import bisect
from collections.abc import Callable

from imagefolder_lmdb.reader import lmdb_pages

#: Every meta key starts with it, and sorts after every record key.
META_PREFIX = b"meta/"
#: A key range [low, high) of the B-tree (None: unbounded), and whether a descent wants the leaves in it.
Wanted = Callable[[bytes | None, bytes | None], bool]
#: The pages of one level still to read: page number and the key range [low, high) it covers.
Level = list[tuple[int, bytes | None, bytes | None]]


def reaches_meta(low: bytes | None, high: bytes | None) -> bool:
    """Whether a key range [low, high) may hold a meta key."""
    return high is None or high > META_PREFIX


def holding(keys: list[bytes]) -> Wanted:
    """Whether a key range [low, high) holds one of ``keys`` (sorted)."""

    def wanted(low: bytes | None, high: bytes | None) -> bool:
        first = 0 if low is None else bisect.bisect_left(keys, low)
        return first < len(keys) and (high is None or keys[first] < high)

    return wanted


def next_level(
    level: Level,
    page_of: Callable[[int], bytes],
    meta: lmdb_pages.MetaPage,
    wanted: Wanted,
    leaves: list[lmdb_pages.LeafEntry],
) -> Level:
    """One step down: the entries of ``level``'s leaf pages added to ``leaves``, and the children of its
    branch pages whose key range ``wanted`` accepts returned, in order."""
    below: Level = []
    for pgno, low, high in level:
        page = page_of(pgno)
        if not lmdb_pages.is_branch(page, pgno, meta.page_size):
            leaves.extend(lmdb_pages.leaf_entries(page, pgno, meta))
            continue
        keys, children = lmdb_pages.branch_entries(page, pgno, meta.page_size)
        edges = [low, *keys[1:], high]
        below += [(child, edges[i], edges[i + 1]) for i, child in enumerate(children) if wanted(edges[i], edges[i + 1])]
    return below
