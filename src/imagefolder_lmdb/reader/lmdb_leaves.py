"""A B-tree walk's leaf pages checked and read many at a time (lmdb_pages.walk_tree's fast path).

Checking a leaf page alone costs ~25 small numpy calls; a file of tiny records has a leaf page for
every few records (ImageNet's count of 8x8 JPEGs: ~215,000 of them, walked twice by write_meta and
once by verify: most of those steps' time, issue 60). Here the same checks run once over up to
``BATCH_PAGES`` pages, the pages stacked as rows and every node of them in flat arrays. When any
check fails, the pages are checked again one by one (lmdb_pages' own path), so a damaged file gets
the very error, for the very page, a walk page by page gives.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from imagefolder_lmdb.reader.lmdb_layout import F_BIGDATA, NODE_HEADER, PAGE_HEADER

#: Leaf pages checked together (16 MB of 4 KB pages): few numpy calls, bounded memory.
BATCH_PAGES = 4096
U16 = np.uint64(16)


class BatchFailed(Exception):
    """Some page of the batch fails a check: check them one by one for the exact error."""


@dataclass
class LeafBatch:
    """Leaf pages and every node of them, in page order then node order."""

    pgnos: np.ndarray  # uint64 per page
    raw: np.ndarray  # uint8, one row per page
    starts: np.ndarray  # int64 per page and one more: where each page's nodes begin in the flat arrays
    page_of: np.ndarray  # int64 per node: its page's row
    ptrs: np.ndarray  # int64: the node's offset in its page
    ksize: np.ndarray  # int64
    length: np.ndarray  # uint64
    big: np.ndarray  # bool
    data_at: np.ndarray  # int64
    first_overflow: np.ndarray  # uint64, 0 for an inline value


def leaf_batch(pages: list[bytes], pgnos: list[int], counts: list[int], page_size: int, last_pgno: int) -> LeafBatch:
    """The nodes of ``pages`` (leaf pages whose headers are checked; ``counts``: their node counts),
    checked as lmdb_pages' ``_node_fields`` and ``_leaf_nodes`` check one page; BatchFailed if any fails."""
    raw = np.frombuffer(b"".join(pages), dtype=np.uint8).reshape(len(pages), page_size)
    words = raw.view("<u2")
    count = np.asarray(counts, dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(count)])
    page_of = np.repeat(np.arange(len(pages), dtype=np.int64), count)
    slot = np.arange(int(starts[-1]), dtype=np.int64) - starts[page_of]
    ptrs = words[page_of, PAGE_HEADER // 2 + slot].astype(np.int64)
    upper = words[page_of, 7].astype(np.int64)
    if np.any(ptrs % 2) or np.any(ptrs < upper) or np.any(ptrs > page_size - NODE_HEADER):
        raise BatchFailed
    at = ptrs // 2
    ksize = words[page_of, at + 3].astype(np.int64)
    flags = words[page_of, at + 2]
    if np.any(ptrs + NODE_HEADER + ksize > page_size) or np.any(flags & ~np.uint16(F_BIGDATA)):
        raise BatchFailed
    big = (flags & F_BIGDATA).astype(bool)
    length = words[page_of, at].astype(np.uint64) | (words[page_of, at + 1].astype(np.uint64) << U16)
    data_at = ptrs + NODE_HEADER + ksize
    first = np.zeros(len(ptrs), dtype=np.uint64)
    if np.any(big & (data_at + 8 > page_size)):
        raise BatchFailed
    if np.any(big):
        rows, cols = page_of[big][:, None], data_at[big][:, None] + np.arange(8)
        first[big] = raw[rows, cols].copy().view("<u8").ravel()
        pages_needed = (length[big] + np.uint64(PAGE_HEADER - 1)) // np.uint64(page_size) + np.uint64(1)
        last = first[big] + pages_needed - np.uint64(1)
        if np.any(first[big] < 2) or np.any(last > np.uint64(last_pgno)) or np.any(last < first[big]):
            raise BatchFailed
    if np.any(~big & (data_at.astype(np.uint64) + length > np.uint64(page_size))):
        raise BatchFailed
    pgno_array = np.asarray(pgnos, dtype=np.uint64)
    return LeafBatch(pgno_array, raw, starts, page_of, ptrs, ksize, length, big, data_at, first)


@dataclass
class BatchRecords:
    """The record nodes of a batch (lmdb_pages.Nodes' columns) and the pages holding other keys."""

    index: np.ndarray
    offset: np.ndarray
    length: np.ndarray
    leaf: np.ndarray
    inline: np.ndarray
    other_key_pages: np.ndarray  # uint64: pages holding at least one key that is not a record key
    other_keys: int


def batch_records(batch: LeafBatch, page_size: int, key_width: int) -> BatchRecords:
    """The nodes whose key is ``key_width`` ASCII digits, as lmdb_pages' ``_leaf_records`` finds them per page."""
    is_record = batch.ksize == key_width
    candidates = np.flatnonzero(is_record)
    rows = batch.page_of[candidates][:, None]
    cols = (batch.ptrs[candidates] + NODE_HEADER)[:, None] + np.arange(key_width)
    digits = batch.raw[rows, cols].astype(np.int64) - ord("0")
    is_digits = np.all((digits >= 0) & (digits <= 9), axis=1)
    is_record[candidates[~is_digits]] = False
    chosen = np.flatnonzero(is_record)
    index = digits[is_digits] @ (10 ** np.arange(key_width - 1, -1, -1, dtype=np.int64))
    big = batch.big[chosen]
    leaf = batch.pgnos[batch.page_of[chosen]]
    offset = leaf * np.uint64(page_size) + batch.data_at[chosen].astype(np.uint64)
    offset[big] = batch.first_overflow[chosen][big] * np.uint64(page_size) + np.uint64(PAGE_HEADER)
    others = np.bincount(batch.page_of[~is_record], minlength=len(batch.pgnos))
    return BatchRecords(
        index=index,
        offset=offset,
        length=batch.length[chosen].astype(np.uint32),
        leaf=leaf,
        inline=~big,
        other_key_pages=batch.pgnos[others > 0],
        other_keys=int(others.sum()),
    )
