"""reader/lmdb_leaves.py: leaf pages checked many at a time find what a walk page by page finds,
and a damaged page gets the same error."""

from __future__ import annotations

import os
from pathlib import Path

import lmdb
import numpy as np
import pytest

from imagefolder_lmdb.reader import lmdb_pages
from imagefolder_lmdb.reader.lmdb_layout import PAGE_HEADER


def small_and_big_records(path: Path) -> None:
    """Records of 300 bytes (inline: a leaf page per few) and of 9,000 (overflow), and meta keys."""
    env = lmdb.open(str(path), subdir=False, map_size=1 << 26, lock=False)
    with env.begin(write=True) as txn:
        for index in range(400):
            txn.put(b"%08d" % index, bytes([index % 251]) * (9000 if index % 7 == 0 else 300))
        txn.put(b"meta/json", b"{}")
        txn.put(b"meta/labels", b"\0" * 20)
    env.close()


def page_by_page(path: Path) -> tuple[np.ndarray, np.ndarray, set[int]]:
    """Record index -> (offset, length), and the leaf pages holding other keys, from leaf_entries."""
    fd = os.open(path, os.O_RDONLY)
    meta = lmdb_pages.read_meta(fd)
    offsets, lengths, others = np.zeros(400, np.uint64), np.zeros(400, np.uint32), set()
    for pgno in lmdb_pages.walk(path).tree.pages:
        page = os.pread(fd, meta.page_size, pgno * meta.page_size)
        if lmdb_pages.is_branch(page, pgno, meta.page_size):
            continue
        for entry in lmdb_pages.leaf_entries(page, pgno, meta):
            if entry.key.startswith(b"meta/"):
                others.add(pgno)
            else:
                offsets[int(entry.key)], lengths[int(entry.key)] = entry.offset, entry.length
    os.close(fd)
    return offsets, lengths, others


@pytest.mark.parametrize("batch", [1, 3, 4096])
def test_batches_find_what_each_page_holds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch: int) -> None:
    small_and_big_records(tmp_path / "d.lmdb")
    offsets, lengths, others = page_by_page(tmp_path / "d.lmdb")
    monkeypatch.setattr(lmdb_pages, "BATCH_PAGES", batch)
    walked = lmdb_pages.walk(tmp_path / "d.lmdb")
    assert walked.records.index.tolist() == list(range(400))
    assert np.array_equal(walked.records.offset, offsets) and np.array_equal(walked.records.length, lengths)
    assert walked.other_key_leaves == others and walked.other_keys == 2
    assert walked.records.inline.tolist() == [index % 7 != 0 for index in range(400)]


def test_a_damaged_leaf_gets_the_error_of_its_page(tmp_path: Path) -> None:
    small_and_big_records(tmp_path / "d.lmdb")
    leaf = int(lmdb_pages.walk(tmp_path / "d.lmdb").records.leaf[200])
    data = bytearray((tmp_path / "d.lmdb").read_bytes())
    page_size = 4096
    data[leaf * page_size + PAGE_HEADER] = 0xFF  # its first node's offset: odd, outside the page
    (tmp_path / "d.lmdb").write_bytes(data)
    fd = os.open(tmp_path / "d.lmdb", os.O_RDONLY)
    meta = lmdb_pages.read_meta(fd)
    page = os.pread(fd, page_size, leaf * page_size)
    os.close(fd)
    with pytest.raises(ValueError) as alone:
        lmdb_pages.leaf_entries(page, leaf, meta)
    with pytest.raises(ValueError) as walked:
        lmdb_pages.walk(tmp_path / "d.lmdb")
    assert str(walked.value) == str(alone.value)
