"""Record locations (meta/locations): every record read by offset is byte-equal to what LMDB holds,
for every shape of B-tree, and a file the offsets do not fit is detected and read through LMDB.

The datasets here are written directly with the workflow's writer (LMDBWriter + encode_meta +
add_locations, as write_meta does), which takes milliseconds; tests/workflow/test_record_locations.py
checks the workflow's own output.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import lmdb
import numpy as np
import pytest
import torch

from imagefolder_lmdb.reader import (
    LOCATION_DTYPE,
    META_KEYS,
    STORAGE_CODES,
    LMDBDataset,
    LMDBReader,
    LocationsWarning,
    close_all_envs,
    encode_document,
    encode_meta,
    lmdb_pages,
    locations_checksum,
    records_located,
    shared_env,
)
from imagefolder_lmdb.steps import write_meta
from imagefolder_lmdb.writing import record_locations as add_locations_module
from imagefolder_lmdb.writing.lmdb_writer import LMDBWriter
from imagefolder_lmdb.writing.record_locations import add_locations_to_file
from support.commands import run_script
from support.datasets import (
    PAGES_STAY_CACHED,
    assert_offsets_give_lmdb_bytes,
    assert_reader_reads_every_record,
    every_key_and_value,
    meta_for,
    random_values,
    stored_records,
    write_dataset,
)
from support.images import jpeg_bytes, png_bytes
from support.legacy import pickled, write_legacy

pytestmark = [
    pytest.mark.usefixtures("fresh_envs"),  # each test opens its files afresh
]


# -- every shape of tree ----------------------------------------------------------------------------


def test_values_inside_leaf_pages(tmp_path: Path) -> None:
    sizes = np.random.default_rng(1).integers(100, 1001, 2000).tolist()
    write_dataset(tmp_path / "d.lmdb", random_values(sizes))
    walk = lmdb_pages.walk(tmp_path / "d.lmdb")
    assert walk.records.inline.all(), "these values are small enough to sit in leaf pages"
    located = assert_offsets_give_lmdb_bytes(tmp_path / "d.lmdb")
    # only the records sharing a leaf page with meta keys are left to LMDB: at most a page's worth
    assert 2000 - 4096 // 100 <= located < 2000
    assert_reader_reads_every_record(tmp_path / "d.lmdb", by_offset=True)


def test_values_over_a_megabyte(tmp_path: Path) -> None:
    values = random_values([1_500_000, 3_000_017, 5, 2_000_000, 1 << 20])
    write_dataset(tmp_path / "d.lmdb", values)
    records = lmdb_pages.walk(tmp_path / "d.lmdb").records
    assert not records.inline[[0, 1, 3, 4]].any() and records.inline[2]
    assert assert_offsets_give_lmdb_bytes(tmp_path / "d.lmdb") >= 4
    assert_reader_reads_every_record(tmp_path / "d.lmdb", by_offset=True)


def test_reencoded_and_stored_as_is_records_decode_alike_both_ways(tmp_path: Path) -> None:
    values = [jpeg_bytes(0), jpeg_bytes(1, (600, 500)), png_bytes(2), jpeg_bytes(3, (700, 400)), png_bytes(4)]
    codes = [STORAGE_CODES[c] for c in ("passthrough", "reencoded:cmyk", "stored-as-is", "reencoded:always")]
    codes.append(STORAGE_CODES["stored-as-is"])
    write_dataset(tmp_path / "d.lmdb", values, storage=codes)
    assert assert_offsets_give_lmdb_bytes(tmp_path / "d.lmdb") >= 3
    for decode in ("tensor", "pil", "bytes"):
        fast = LMDBDataset(tmp_path / "d.lmdb", decode=decode)
        slow = LMDBDataset(tmp_path / "d.lmdb", decode=decode)
        slow._offsets = None  # the LMDB path, as for a file without locations
        assert fast.reads_by_offset and not slow.reads_by_offset
        both = zip(fast.__getitems__(range(5)), slow.__getitems__(range(5)), strict=True)
        for (got, target), (want, want_target) in both:
            assert target == want_target
            if decode == "tensor":
                assert got.dtype == torch.uint8 and got.shape[0] == 3 and torch.equal(got, want)
            elif decode == "pil":
                assert got.mode == "RGB" and np.array_equal(np.asarray(got), np.asarray(want))
            else:
                assert type(got) is bytes and got == want


@pytest.mark.parametrize("size", [80_000, 10])
def test_one_record(tmp_path: Path, size: int) -> None:
    write_dataset(tmp_path / "d.lmdb", random_values([size]))
    located = assert_offsets_give_lmdb_bytes(tmp_path / "d.lmdb")
    # a tiny value shares the only leaf with the meta keys, so it is left to LMDB
    assert located == (1 if size > 4096 else 0)
    assert_reader_reads_every_record(tmp_path / "d.lmdb", by_offset=bool(located))


def test_a_hundred_thousand_tiny_records_in_a_deep_tree(tmp_path: Path) -> None:
    values = [b"%d" % (i * 7919) for i in range(100_000)]
    write_dataset(tmp_path / "d.lmdb", values)
    with lmdb.open(str(tmp_path / "d.lmdb"), subdir=False, readonly=True, lock=False) as env:
        assert env.stat()["depth"] >= 3
    assert assert_offsets_give_lmdb_bytes(tmp_path / "d.lmdb") >= 100_000 - 4096 // 8
    assert_reader_reads_every_record(tmp_path / "d.lmdb", by_offset=True)


def test_a_batch_mixing_located_and_unlocated_records_opens_one_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    values = random_values([50_000, 3_000, 20, 30, 40])  # the small ones share the meta leaf
    write_dataset(tmp_path / "d.lmdb", values)
    ds = LMDBReader(tmp_path / "d.lmdb", decode="bytes")
    assert ds._offsets is not None and (ds._offsets[:2] != 0).all() and not ds._offsets[2:].any()
    opened = []
    original = LMDBReader._transaction
    monkeypatch.setattr(LMDBReader, "_transaction", lambda self: opened.append(1) or original(self))
    order = [4, 0, 2, 1, 3, 0]
    assert [data for data, _ in ds.__getitems__(order)] == [values[i] for i in order]
    assert len(opened) == 1


def test_locations_are_deterministic(tmp_path: Path) -> None:
    values = random_values([70_000, 500, 90_000, 3] * 10)
    write_dataset(tmp_path / "a.lmdb", values)
    write_dataset(tmp_path / "b.lmdb", values)
    assert every_key_and_value(tmp_path / "a.lmdb") == every_key_and_value(tmp_path / "b.lmdb")


@pytest.mark.parametrize("cached", [False, True])
def test_a_cold_batch_is_hinted_at_once_and_a_cached_one_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cached: bool
) -> None:
    values = random_values([60_000, 90_000, 45_000] * 4)
    write_dataset(tmp_path / "d.lmdb", values)
    ds = LMDBReader(tmp_path / "d.lmdb", decode="bytes")
    hinted: list[tuple[int, int]] = []
    monkeypatch.setattr(records_located, "_cached", lambda fd, offset: cached)
    monkeypatch.setattr(os, "posix_fadvise", lambda fd, offset, length, advice: hinted.append((offset, length)))
    order = [5, 0, 11, 3]
    assert [data for data, _ in ds.__getitems__(order)] == [values[i] for i in order]
    expected = [(ds._offsets.item(i), ds._lengths.item(i)) for i in order]
    assert hinted == ([] if cached else expected)


EVICTION_TRIES = 25


def drop_from_page_cache(path: Path) -> None:
    """The file's pages out of the page cache (no root needed); skips where they stay (tmpfs)."""
    offsets = stored_records(path)[1]["offset"]
    fd = os.open(path, os.O_RDONLY)
    try:
        evict_or_skip(fd, int(offsets[offsets != 0][0]))
    finally:
        os.close(fd)


def evict_or_skip(fd: int, offset: int) -> None:
    """The file's pages out of the page cache, or the test skipped where they stay (tmpfs). Pages
    the kernel is still settling after the write (writeback, per-CPU lists) are not dropped by one
    call: a few tries, a moment apart."""
    os.fsync(fd)  # dirty pages cannot be dropped
    for _ in range(EVICTION_TRIES):
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        if not records_located._cached(fd, offset):
            return
        time.sleep(0.02)
    pytest.skip(PAGES_STAY_CACHED)


@pytest.mark.parametrize("decode", ["bytes", "pil", "tensor"])
def test_a_cold_batch_reads_what_a_warm_one_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, decode: str) -> None:
    values = [jpeg_bytes(i, (300 + 40 * i, 200 + 30 * i)) for i in range(6)] + [png_bytes(6), png_bytes(7, (400, 300))]
    codes = [STORAGE_CODES["passthrough"]] * 6 + [STORAGE_CODES["stored-as-is"]] * 2
    write_dataset(tmp_path / "d.lmdb", values, storage=codes)
    order = [7, 2, 0, 5, 6, 1, 4, 3, 2]
    warm = LMDBDataset(tmp_path / "d.lmdb", decode=decode).__getitems__(order)
    close_all_envs()
    drop_from_page_cache(tmp_path / "d.lmdb")
    hints: list[int] = []
    original = records_located._hint_rest
    monkeypatch.setattr(records_located, "_hint_rest", lambda *args, **kw: hints.append(1) or original(*args, **kw))
    cold = LMDBDataset(tmp_path / "d.lmdb", decode=decode)
    got = cold.__getitems__(order)
    assert cold.reads_by_offset and hints, "read by offset, the cold batch hinted"
    for (image, target), (want, want_target) in zip(got, warm, strict=True):
        assert target == want_target
        if decode == "tensor":
            assert torch.equal(image, want)
        elif decode == "pil":
            assert np.array_equal(np.asarray(image), np.asarray(want))
        else:
            assert type(image) is bytes and image == want


def test_the_page_cache_probe(tmp_path: Path) -> None:
    write_dataset(tmp_path / "d.lmdb", random_values([60_000, 90_000]))
    offset = int(stored_records(tmp_path / "d.lmdb")[1]["offset"][1])
    fd = os.open(tmp_path / "d.lmdb", os.O_RDONLY)
    try:
        evict_or_skip(fd, offset)
        os.pread(fd, 100, offset)
        assert records_located._cached(fd, offset)
    finally:
        os.close(fd)


# -- never a wrong byte -----------------------------------------------------------------------------


def test_a_compacted_copy_is_detected_and_read_through_lmdb(tmp_path: Path) -> None:
    values = random_values([60_000, 250, 120_000, 7_000] * 20)
    write_dataset(tmp_path / "d.lmdb", values)
    with lmdb.open(str(tmp_path / "d.lmdb"), subdir=False, readonly=True, lock=False) as env:
        env.copy(str(tmp_path / "compact.lmdb"), compact=True)
    with pytest.warns(LocationsWarning, match=r"compact.*transaction 1.*add_locations\.py"):
        assert_reader_reads_every_record(tmp_path / "compact.lmdb", by_offset=False)
    _, locations, _ = stored_records(tmp_path / "compact.lmdb")
    fd = os.open(tmp_path / "compact.lmdb", os.O_RDONLY)
    try:
        located = np.flatnonzero(locations["offset"])
        moved = [os.pread(fd, int(locations[i]["length"]), int(locations[i]["offset"])) != values[i] for i in located]
    finally:
        os.close(fd)
    assert any(moved), "the compacted copy really moved records: trusting the offsets would read wrong bytes"


def test_a_plain_copy_keeps_the_fast_path(tmp_path: Path) -> None:
    values = random_values([60_000, 250] * 10)
    write_dataset(tmp_path / "d.lmdb", values)
    shutil.copyfile(tmp_path / "d.lmdb", tmp_path / "copy.lmdb")
    with warnings.catch_warnings():
        warnings.simplefilter("error", LocationsWarning)
        assert_reader_reads_every_record(tmp_path / "copy.lmdb", by_offset=True)


def rewrite_locations(path: Path, change: Callable[[np.ndarray], np.ndarray]) -> None:
    """Store ``change(locations)`` with a txnid and a checksum that match: what a buggy writer would
    leave (damage is caught by the checksum alone: test_damaged_locations_are_caught_by_their_checksum)."""
    with lmdb.open(str(path), subdir=False, lock=False, map_size=1 << 30) as env, env.begin(write=True) as txn:
        locations = change(np.frombuffer(txn.get(META_KEYS["locations"]), dtype=LOCATION_DTYPE).copy())
        document = json.loads(txn.get(META_KEYS["json"]))
        document["locations"].update(txnid=txn.id(), crc32=locations_checksum(locations))
        txn.put(META_KEYS["locations"], locations.tobytes())
        txn.put(META_KEYS["json"], encode_document(document))


def shifted(locations: np.ndarray) -> np.ndarray:
    located = locations["offset"] != 0
    locations["offset"][located] += 4096  # as if every page had moved by one
    return locations


def past_the_end(locations: np.ndarray) -> np.ndarray:
    locations["offset"][-1] = 1 << 40
    return locations


@pytest.mark.parametrize(("change", "reason"), [(shifted, "do not match its checksum"), (past_the_end, "past the end")])
def test_offsets_that_do_not_fit_are_caught_when_opened(
    tmp_path: Path, change: Callable[[np.ndarray], np.ndarray], reason: str
) -> None:
    values = random_values([60_000, 90_000, 45_000] * 10)
    write_dataset(tmp_path / "d.lmdb", values)
    rewrite_locations(tmp_path / "d.lmdb", change)
    with pytest.warns(LocationsWarning, match=reason):
        assert_reader_reads_every_record(tmp_path / "d.lmdb", by_offset=False)


def test_a_file_replaced_under_an_open_dataset_is_not_read_by_its_old_offsets(tmp_path: Path) -> None:
    values = random_values([60_000, 90_000, 45_000] * 10)
    write_dataset(tmp_path / "d.lmdb", values)
    ds = LMDBReader(tmp_path / "d.lmdb", decode="bytes")
    assert ds.get_bytes(0) == values[0] and ds.reads_by_offset
    shared_env(str(tmp_path / "d.lmdb")).copy(str(tmp_path / "compact.lmdb"), compact=True)
    close_all_envs()
    os.replace(tmp_path / "compact.lmdb", tmp_path / "d.lmdb")
    with pytest.warns(LocationsWarning, match="replaced"):
        assert [ds.get_bytes(i) for i in range(len(values))] == values
    assert not ds.reads_by_offset


def test_lock_true_reads_through_lmdb(tmp_path: Path) -> None:
    write_dataset(tmp_path / "d.lmdb", random_values([60_000, 90_000]))
    ds = LMDBReader(tmp_path / "d.lmdb", decode="bytes", lock=True)
    assert not ds.reads_by_offset and ds.get_bytes(1) == stored_records(tmp_path / "d.lmdb")[0][1]


def test_check_crc_reads_by_offset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    values = random_values([60_000, 90_000, 45_000])
    write_dataset(tmp_path / "d.lmdb", values)
    ds = LMDBReader(tmp_path / "d.lmdb")
    read = []
    original = records_located.pread_bytes
    monkeypatch.setattr(
        records_located, "pread_bytes", lambda fd, length, offset: read.append(offset) or original(fd, length, offset)
    )
    assert all(ds.check_crc(i) for i in range(3))
    assert read == ds._offsets.tolist(), "verify and check_crc read what training reads"


# -- older files ------------------------------------------------------------------------------------


def samples(path: Path) -> list[tuple[bytes, np.ndarray, int]]:
    raw, pil = LMDBDataset(path, decode="bytes"), LMDBDataset(path)
    return [(raw.get_bytes(i), np.asarray(pil[i][0]), pil[i][1]) for i in range(len(raw))]


def test_a_file_of_the_previous_version_reads_as_before_until_located(tmp_path: Path) -> None:
    path = tmp_path / "old.lmdb"
    values = [jpeg_bytes(i, (300 + 40 * i, 200)) for i in range(6)] + [png_bytes(6, (4, 4)), png_bytes(7, (5, 3))]
    write_dataset(path, values, storage=[0] * 6 + [8, 8], locate=False)
    assert stored_records(path)[1] is None, "the previous version wrote no meta/locations"
    before_walk = lmdb_pages.walk(path).records
    with warnings.catch_warnings():
        warnings.simplefilter("error", LocationsWarning)  # no offsets is not a problem to warn about
        assert_reader_reads_every_record(path, by_offset=False)
        before = samples(path)
    close_all_envs()

    result = run_script("add_locations.py", path)
    assert result.returncode == 0, result.stderr
    assert f"OK {path}: 6 of 8 records located" in result.stdout

    assert_offsets_give_lmdb_bytes(path)
    after_walk = lmdb_pages.walk(path).records
    overflow = ~before_walk.inline
    assert np.array_equal(after_walk.offset[overflow], before_walk.offset[overflow]), "no record was rewritten"
    assert_reader_reads_every_record(path, by_offset=True)
    after = samples(path)
    assert len(after) == len(before)
    for (raw, pixels, target), (raw_before, pixels_before, target_before) in zip(after, before, strict=True):
        assert raw == raw_before and target == target_before and np.array_equal(pixels, pixels_before)


def test_add_locations_again_after_a_compacting_copy(tmp_path: Path) -> None:
    values = random_values([60_000, 250, 120_000] * 5)
    write_dataset(tmp_path / "d.lmdb", values)
    with lmdb.open(str(tmp_path / "d.lmdb"), subdir=False, readonly=True, lock=False) as env:
        env.copy(str(tmp_path / "compact.lmdb"), compact=True)
    outcome = add_locations_to_file(str(tmp_path / "compact.lmdb"))
    located, written = outcome.located, outcome.written
    assert outcome.finding is not None and "compacting copy" in outcome.finding.text
    assert written and located.records == 15 and located.located >= 10
    assert_offsets_give_lmdb_bytes(tmp_path / "compact.lmdb")
    assert_reader_reads_every_record(tmp_path / "compact.lmdb", by_offset=True)
    before = every_key_and_value(tmp_path / "compact.lmdb")
    result = run_script("add_locations.py", tmp_path / "compact.lmdb")
    assert result.returncode == 0 and "recorded already, nothing written" in result.stdout
    assert f"LMDB transaction {located.txnid};" in result.stdout
    assert every_key_and_value(tmp_path / "compact.lmdb") == before


def test_a_rerun_after_an_interrupted_write_meta_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    """write_meta writes into a hard link of the merged file: a rerun after a kill meets the meta
    and locations of the killed attempt, and must not add transactions (the locations' identity)."""
    values = random_values([60_000, 250, 120_000] * 5)
    write_dataset(tmp_path / "d.lmdb", values)
    before, txnid = every_key_and_value(tmp_path / "d.lmdb"), stored_records(tmp_path / "d.lmdb")[2]["locations"]
    meta = meta_for(values)
    meta.document["created"] = "a later attempt"
    again = encode_meta(meta)
    del again[META_KEYS["locations"]]
    writer = LMDBWriter(str(tmp_path / "d.lmdb"), expected_bytes=1 << 20)
    assert write_meta.same_meta_stored(writer.env, again)
    assert add_locations_module.current_locations(writer.env, str(tmp_path / "d.lmdb")) is not None
    meta.labels = meta.labels + 1  # a different meta is written again, and located again
    changed = encode_meta(meta)
    del changed[META_KEYS["locations"]]
    assert not write_meta.same_meta_stored(writer.env, changed)
    writer.close()
    assert every_key_and_value(tmp_path / "d.lmdb") == before
    assert stored_records(tmp_path / "d.lmdb")[2]["locations"] == txnid


def test_a_legacy_pickle_file_reads_as_before_and_is_refused_by_the_command(tmp_path: Path) -> None:
    items = [(jpeg_bytes(i), i % 3) for i in range(12)]
    write_legacy(tmp_path / "legacy.lmdb", pickled(items), keys=False)
    ds = LMDBReader(tmp_path / "legacy.lmdb", decode="bytes", allow_pickle=True)
    assert ds.is_legacy and not ds.reads_by_offset
    assert [ds[i] for i in range(12)] == items
    close_all_envs()
    result = run_script("add_locations.py", tmp_path / "legacy.lmdb", tmp_path / "missing.lmdb")
    assert result.returncode == 1
    assert "FAIL" in result.stderr and "legacy" in result.stderr and "missing.lmdb: no such file" in result.stderr


def test_command_line_help() -> None:
    result = run_script("add_locations.py", "--help")
    assert result.returncode == 0 and "FILE.lmdb" in result.stdout and "docs/FORMAT.md" in result.stdout


# -- the page walker refuses what it does not know --------------------------------------------------


def test_the_walker_refuses_what_it_does_not_know(tmp_path: Path) -> None:
    (tmp_path / "not.lmdb").write_bytes(b"\xff\xd8 not a database" * 1000)
    with pytest.raises(ValueError, match="not an LMDB file"):
        lmdb_pages.walk(tmp_path / "not.lmdb")

    with lmdb.open(str(tmp_path / "dup.lmdb"), subdir=False, max_dbs=2) as env:
        db = env.open_db(b"dups", dupsort=True)
        with env.begin(write=True) as txn:
            txn.put(b"k", b"1", db=db)
            txn.put(b"k", b"2", db=db)
    with pytest.raises(ValueError, match="sub-database"):
        lmdb_pages.walk(tmp_path / "dup.lmdb")

    write_dataset(tmp_path / "d.lmdb", random_values([300] * 2000))
    leaf = int(lmdb_pages.walk(tmp_path / "d.lmdb").records.leaf[0])
    with open(tmp_path / "d.lmdb", "r+b") as stream:
        stream.seek(leaf * 4096)
        stream.write((leaf + 1).to_bytes(8, "little"))  # the page now claims another number
    with pytest.raises(ValueError, match=f"page {leaf} says it is page {leaf + 1}"):
        lmdb_pages.walk(tmp_path / "d.lmdb")
