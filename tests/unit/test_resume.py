"""The pieces behind reruns and merging, without a run: the source listing's stamp follows names
(what Snakemake compares to decide a re-listing), and merge's read-ahead keeps index order within
its byte bound."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from imagefolder_lmdb.steps import merge


def test_listing_stamp_follows_names_and_files_not_folder_times(tmp_path: Path) -> None:
    from imagefolder_lmdb.work.folder_listing import listing_stamp

    source, cache = tmp_path / "source", tmp_path / "stamps.json"
    (source / "cat").mkdir(parents=True)
    (source / "cat" / "a.jpg").write_bytes(b"a")
    (source / "n01.tar").write_bytes(b"tar")
    old = time.time() - 60  # settled: the listing gets cached
    os.utime(source / "cat", (old, old))
    first = listing_stamp(str(source), str(cache))
    assert json.loads(cache.read_text()), "the settled folder's listing is cached"
    assert listing_stamp(str(source), str(cache)) == first

    (source / "cat" / "b.tmp").write_bytes(b"a2")
    (source / "cat" / "b.tmp").replace(source / "cat" / "a.jpg")  # same names, another file (issue 31)
    replaced = listing_stamp(str(source), str(cache))
    assert replaced != first
    (source / "cat" / "b.jpg").write_bytes(b"b")
    added = listing_stamp(str(source), str(cache))
    assert added != replaced
    (source / "cat" / "b.jpg").unlink()  # the folder's time moves, what it holds is as before
    assert listing_stamp(str(source), str(cache)) == replaced
    (source / "n01.tar").write_bytes(b"another tar")  # a class tar replaced under its name
    assert listing_stamp(str(source), str(cache)) != replaced


def test_merge_reads_ahead_in_order_and_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """The merge's reading threads may finish out of order and must not run ahead without bound:
    records still reach the writer in index order, with at most READ_AHEAD_BYTES in flight."""
    monkeypatch.setattr(merge, "READ_AHEAD_BYTES", 10)  # three 4-byte images in flight at most
    submitted: list[int] = []

    def slow_when_even(number: int) -> bytes:
        time.sleep(0.01 if number % 2 == 0 else 0.0)  # odd reads overtake even ones
        return number.to_bytes(2, "big")

    with ThreadPoolExecutor(4) as pool:

        def values() -> Iterator[merge.Pending]:
            for number in range(40):
                submitted.append(number)
                yield 4, pool.submit(slow_when_even, number)

        for written, data in enumerate(merge.in_order(values())):
            assert int.from_bytes(data, "big") == written
            assert len(submitted) - written <= 3
    assert len(submitted) == 40
