"""Damaged files, written here in milliseconds (tests/workflow/test_damaged_copies.py and
test_fuzz.py damage the workflow's own output): a file shorter than its header says, damaged meta
pages, branch and leaf pages, meta arrays and record locations. Every check runs where a signal
would end only a forked child (support.fuzz.in_child), so a regression fails the test instead of
killing the test run."""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lmdb
import numpy as np
import pytest

from imagefolder_lmdb.reader import (
    LOCATION_DTYPE,
    META_KEYS,
    LMDBReader,
    TruncatedFileError,
    close_all_envs,
    encode_document,
    lmdb_check,
    lmdb_pages,
    locations_checksum,
    record_key,
)
from imagefolder_lmdb.reader.document import read_document
from imagefolder_lmdb.reader.format import RECOPY_ADVICE
from imagefolder_lmdb.writing.record_locations import add_locations_to_file
from support.commands import run_script
from support.datasets import random_values, write_dataset
from support.fuzz import in_child, layout_of
from support.legacy import pickled, write_legacy

pytestmark = pytest.mark.usefixtures("fresh_envs")

#: 300 records, most on overflow pages, every fifth small enough to lie inside a leaf page: a tree
#: with a branch page above its leaves.
SIZES = [300 if i % 5 == 0 else 3000 + 7 * i for i in range(300)]


@pytest.fixture
def written(tmp_path: Path) -> Path:
    path = tmp_path / "d.lmdb"
    write_dataset(path, random_values(SIZES))
    return path


def opened(path: Path, by_offset: bool = True) -> Callable[[], dict[str, Any]]:
    """Open ``path`` with the reader and read every record (``by_offset=False``: through LMDB),
    reporting what happened."""

    def job() -> dict[str, Any]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                ds = LMDBReader(path, decode="bytes")
                if not by_offset:
                    ds._offsets = None
                values = [ds.get_bytes(i) for i in range(len(ds))]
            except Exception as exc:  # noqa: BLE001 - the message is what the test checks
                return {"error": f"{type(exc).__name__}: {exc}"}
        return {
            "values": [v.hex() for v in values],
            "by_offset": ds.reads_by_offset,
            "warnings": [str(w.message) for w in caught],
        }

    return job


def patch(path: Path, offset: int, data: bytes) -> None:
    with path.open("r+b") as stream:
        stream.seek(offset)
        stream.write(data)


def rewrite_document(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """Store ``change(meta/json)`` in a transaction of its own, its locations taken anew."""
    with lmdb.open(str(path), subdir=False, lock=False, map_size=1 << 30) as env, env.begin(write=True) as txn:
        document = json.loads(txn.get(META_KEYS["json"]))
        document["locations"]["txnid"] = txn.id()
        change(document)
        txn.put(META_KEYS["json"], encode_document(document))


# -- the size, before LMDB maps the file ------------------------------------------------------------


@pytest.mark.parametrize("keep", [0, 100, 4096, 4200])
def test_a_file_cut_inside_its_meta_pages(written: Path, keep: int) -> None:
    os.truncate(written, keep)
    result = in_child(opened(written))
    assert result["error"].startswith(
        f"TruncatedFileError: {written} is shorter than it should be: it holds {keep:,} bytes"
    )
    assert "not even LMDB's two meta pages" in result["error"]
    assert "Copy it again from the original" in result["error"]


def test_a_file_one_byte_short(written: Path) -> None:
    size = written.stat().st_size
    os.truncate(written, size - 1)
    assert in_child(opened(written))["error"] == (
        f"TruncatedFileError: {written} is shorter than it should be: its LMDB header says its pages run to "
        f"{size:,} bytes, but the file holds {size - 1:,}: the last 1 byte is missing. The copy is incomplete "
        "(an interrupted scp or rsync, a full disk or quota). Copy it again from the original, and check the "
        "original first with `imagefolder-lmdb verify ORIGINAL --full` (in a checkout: `python scripts/verify.py "
        "ORIGINAL --full`)."
    )


@pytest.mark.parametrize("keep", [8192, -4096])
def test_info_names_a_file_cut_short_rather_than_crash(written: Path, keep: int) -> None:
    # `imagefolder-lmdb info` opened the file with LMDB directly: a missing page was SIGBUS, no word.
    os.truncate(written, keep if keep > 0 else written.stat().st_size + keep)
    command = [sys.executable, "-m", "imagefolder_lmdb.commands.info", str(written)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 1, (result.returncode, result.stderr)
    assert f"imagefolder-lmdb info: {written} is shorter than it should be" in result.stderr


@pytest.mark.parametrize("keep", [0, 8192, -4096])
def test_the_meta_document_alone_of_a_file_cut_short_is_none_not_a_crash(written: Path, keep: int) -> None:
    # `classes: FILE.lmdb`, what OUTDIR holds, the summary and the upload read the document alone:
    # they opened the file with a bare lmdb.open, and a missing page was SIGBUS.
    assert in_child(lambda: {"document": read_document(str(written))})["document"]["length"] == len(SIZES)
    os.truncate(written, keep if keep >= 0 else written.stat().st_size + keep)
    assert in_child(lambda: {"document": read_document(str(written))}) == {"document": None}


@pytest.mark.parametrize(
    ("offset", "damage", "problem"),
    [
        (4096 + 16, b"\0\0\0\0", "LMDB meta page 1 is damaged (no LMDB magic number)"),
        (4096 + 20, struct.pack("<I", 2), "LMDB data format version 2; only version 1 (LMDB 0.9) is read"),
        (4096, struct.pack("<Q", 7), "LMDB meta page 1 is damaged"),
        (4096 + 16, struct.pack(">I", 0xBEEFC0DE), "a big-endian LMDB file; only little-endian files are supported"),
        (4096 + 16 + 24, struct.pack("<I", 1000), "LMDB meta page 1 is damaged (page size 1000)"),
    ],
)
def test_the_reader_and_the_page_walk_find_one_meta_page_damage_in_the_same_words(
    written: Path, offset: int, damage: bytes, problem: str
) -> None:
    # one check of a meta page (reader/lmdb_layout.meta_problem), each worded into its own error
    patch(written, offset, damage)
    assert in_child(opened(written))["error"] == f"FormatError: {written}: {problem}. {RECOPY_ADVICE}"
    with pytest.raises(ValueError, match=re.escape(problem)):
        lmdb_pages.walk(written)


def test_a_legacy_directory_cut_short_is_refused_naming_the_directory(tmp_path: Path) -> None:
    folder = tmp_path / "legacy.lmdb"
    write_legacy(folder, pickled([(os.urandom(5000), i % 2) for i in range(20)]), subdir=True)
    os.truncate(folder / "data.mdb", (folder / "data.mdb").stat().st_size - 8192)

    def job() -> dict[str, Any]:
        try:
            LMDBReader(folder, allow_pickle=True)
        except TruncatedFileError as exc:
            return {"error": str(exc)}
        return {}

    assert in_child(job)["error"].startswith(f"{folder} is shorter than it should be")


def test_convert_legacy_refuses_an_input_cut_short(tmp_path: Path) -> None:
    source = tmp_path / "legacy.lmdb"
    write_legacy(source, pickled([(os.urandom(5000), i % 2) for i in range(20)]))
    os.truncate(source, source.stat().st_size - 8192)
    result = run_script("convert_legacy.py", source, tmp_path / "out.lmdb")
    assert result.returncode == 1 and f"FAIL {source}: {source} is shorter than it should be" in result.stderr
    assert not (tmp_path / "out.lmdb").exists() and not list(tmp_path.glob("out.lmdb*"))


# -- LMDB's own pages, checked on the way to each key -----------------------------------------------


def meta_leaf(path: Path) -> int:
    return max(lmdb_pages.walk(path).other_key_leaves)


def node_at(path: Path, key: bytes) -> int:
    """The file offset of the leaf node holding ``key``."""
    walk = lmdb_pages.walk(path)
    blob = path.read_bytes()
    for pgno in walk.tree.pages:
        page = blob[pgno * 4096 : (pgno + 1) * 4096]
        flags, count = lmdb_pages._page_header(page, pgno, 4096)
        ptrs, *_, ksize = lmdb_pages._node_fields(page, count)
        for ptr, size in zip(ptrs.tolist(), ksize.tolist(), strict=True):
            if flags & lmdb_pages.P_LEAF and page[ptr + 8 : ptr + 8 + size] == key:
                return pgno * 4096 + ptr
    raise KeyError(key)


@pytest.mark.parametrize(
    ("where", "at", "data", "found"),
    [
        ("meta leaf", 18, struct.pack("<H", 0xFFF0), "a node offset outside the page"),  # its second node
        ("root", 18, struct.pack("<H", 0xFFF0), "a node offset outside the page"),
        ("meta leaf", 10, struct.pack("<H", 0x05), "not the branch or leaf page it should be"),  # its flags
    ],
)
def test_a_damaged_page_on_the_way_to_the_meta_is_refused_not_followed(
    written: Path, where: str, at: int, data: bytes, found: str
) -> None:
    pgno = meta_leaf(written) if where == "meta leaf" else lmdb_pages.walk(written).meta.main.root
    patch(written, pgno * 4096 + at, data)
    error = in_child(opened(written))["error"]
    assert error.startswith(f"FormatError: {written}: its LMDB page {pgno} is damaged ({found}).")


def test_the_meta_document_alone_behind_a_damaged_page_is_none_not_followed(written: Path) -> None:
    patch(written, meta_leaf(written) * 4096 + 18, struct.pack("<H", 0xFFF0))
    assert in_child(lambda: {"document": read_document(str(written))}) == {"document": None}


@pytest.mark.parametrize("index", [0, 1, 299], ids=["inline", "overflow", "in-the-meta-leaf"])
def test_a_damaged_value_size_is_refused_not_followed(written: Path, index: int) -> None:
    clean = in_child(opened(written))["values"]
    patch(written, node_at(written, record_key(index)) + 2, struct.pack("<H", 0x7FFF))  # the size: ~2 GB
    pattern = r"FormatError: .*: its LMDB page \d+ is damaged \(a value('s overflow pages outside| past the end)"
    through_lmdb = in_child(opened(written, by_offset=False))
    assert re.match(pattern, through_lmdb.get("error", "")), through_lmdb
    if index == 299:  # its leaf holds the meta: opening reads it
        assert re.match(pattern, in_child(opened(written)).get("error", ""))
    else:  # reads by offset never follow the damaged leaf
        assert in_child(opened(written)) == {"values": clean, "by_offset": True, "warnings": []}


# -- meta arrays ------------------------------------------------------------------------------------


def test_a_damaged_label_is_refused_by_its_checksum(written: Path) -> None:
    offset, _ = layout_of(written).values[b"meta/labels"]
    patch(written, offset + 4 * 7, struct.pack("<i", 0))  # record 7's label 1 -> 0: still a class
    assert in_child(opened(written))["error"] == (
        f"FormatError: {written}: meta/labels does not match its checksum: the file is damaged. Copy it again "
        "from the original, and check the original first with `imagefolder-lmdb verify ORIGINAL --full` "
        "(in a checkout: `python scripts/verify.py ORIGINAL --full`)."
    )


def test_a_damaged_class_name_is_refused_by_its_checksum(written: Path) -> None:
    offset, length = layout_of(written).values[b"meta/json"]
    document = written.read_bytes()[offset : offset + length]
    name = document.index(b'"classes": [\n  "a"') + len(b'"classes": [\n  "')
    patch(written, offset + name, b"c")  # class "a" -> "c": the JSON stays valid, the order sorted
    assert in_child(opened(written))["error"] == (
        f"FormatError: {written}: meta/json's classes do not match their checksum: the file is damaged. Copy it "
        "again from the original, and check the original first with `imagefolder-lmdb verify ORIGINAL --full` "
        "(in a checkout: `python scripts/verify.py ORIGINAL --full`)."
    )
    verified = run_script("verify.py", written)
    assert (
        verified.returncode == 1
        and "meta/json's classes do not match their checksum" in verified.stdout + verified.stderr
    )


def test_a_file_without_meta_checksums_reads_and_refuses_labels_outside_its_classes(written: Path) -> None:
    rewrite_document(written, lambda document: document.pop("checksums"))
    assert len(in_child(opened(written))["values"]) == len(SIZES)
    offset, _ = layout_of(written).values[b"meta/labels"]
    patch(written, offset + 4 * 7, struct.pack("<i", 9))
    assert "meta/labels holds labels outside 0..1 (its 2 classes)" in in_child(opened(written))["error"]


# -- record locations -------------------------------------------------------------------------------


def stored_locations(path: Path) -> tuple[int, np.ndarray]:
    offset, length = layout_of(path).values[b"meta/locations"]
    return offset, np.frombuffer(path.read_bytes()[offset : offset + length], dtype=LOCATION_DTYPE).copy()


def test_one_damaged_byte_of_the_locations_is_caught_by_their_checksum(written: Path) -> None:
    values = in_child(opened(written))["values"]
    offset, _ = stored_locations(written)
    patch(written, offset + 12 * 3 + 1, b"\x7f")  # record 3's offset: the spot checks miss record 3
    result = in_child(opened(written))
    assert result["values"] == values and not result["by_offset"]
    assert result["warnings"] == [
        f"{written}: its record locations (meta/locations) do not match their checksum: they are damaged. It is "
        "read through LMDB, which gives the same bytes but is slower on a cold cache; `imagefolder-lmdb "
        f"add-locations {written}` (in a checkout: `python scripts/add_locations.py {written}`) "
        "writes them again for this file."
    ]


@pytest.mark.parametrize(
    ("change", "found"),
    [
        (lambda loc: loc.__setitem__(5, loc[6]), "and record 6's recorded location .* overlap: they are damaged"),
        (lambda loc: loc["offset"].__setitem__(5, 4096), "record 5's recorded location .* lies in LMDB's meta pages"),
        # record 201 (4,407 bytes) on overflow pages, moved by a byte: it would cross a page boundary
        (lambda loc: loc["offset"].__setitem__(201, loc["offset"][201] + 1), "record 201's .* neither inside one"),
    ],
)
def test_a_file_without_the_locations_checksum_gets_the_layout_checks(
    written: Path, change: Callable[[np.ndarray], None], found: str
) -> None:
    """Older files: their locations carry no checksum; a damaged entry still never reads another
    record's bytes: it overlaps another, or has no LMDB value's shape."""
    rewrite_document(written, lambda document: document["locations"].pop("crc32"))
    assert in_child(opened(written))["by_offset"], "an intact table of an older file is used"
    offset, locations = stored_locations(written)
    change(locations)
    patch(written, offset, locations.tobytes())
    result = in_child(opened(written))
    assert not result["by_offset"] and len(result["warnings"]) == 1
    assert re.search(found, result["warnings"][0]), result["warnings"]


def test_add_locations_gives_an_older_file_its_checksum(written: Path) -> None:
    rewrite_document(written, lambda document: document["locations"].pop("crc32"))
    outcome = add_locations_to_file(str(written))
    assert outcome.written and outcome.finding is not None and outcome.finding.kind == "no-checksum"
    assert outcome.finding.text == (
        "the recorded locations match the file but carry no checksum (an earlier version wrote them)"
    )
    with lmdb.open(str(written), subdir=False, readonly=True, lock=False) as env, env.begin() as txn:
        entry = json.loads(txn.get(META_KEYS["json"]))["locations"]
        stored = np.frombuffer(txn.get(META_KEYS["locations"]), LOCATION_DTYPE)
        assert entry["crc32"] == locations_checksum(stored)
    close_all_envs()
    assert not add_locations_to_file(str(written)).written


# -- the whole-file check of verify and add_locations -----------------------------------------------


def test_two_records_on_the_same_overflow_pages_are_found(written: Path) -> None:
    walk = lmdb_pages.walk(written)
    first_page = (int(walk.records.offset[1]) - 16) // 4096  # record 1 lies on overflow pages
    patch(written, node_at(written, record_key(2)) + 16, struct.pack("<Q", first_page))  # record 2's pages
    with pytest.raises(ValueError, match=f"page {first_page} is used twice: by a record's value and by a record's"):
        lmdb_check.check(written)


def test_keys_out_of_order_are_found(written: Path) -> None:
    walk = lmdb_pages.walk(written)
    leaf = int(walk.records.leaf[10])
    page = written.read_bytes()[leaf * 4096 : (leaf + 1) * 4096]
    ptr = struct.unpack_from("<H", page, 16)[0]
    patch(written, leaf * 4096 + ptr + 8, b"99999999")  # the leaf's first key now sorts last
    with pytest.raises(ValueError, match=f"page {leaf}: its keys are out of order"):
        lmdb_check.check(written)


def test_a_damaged_overflow_header_is_found_with_every_value(written: Path) -> None:
    walk = lmdb_pages.walk(written)
    first = (int(walk.records.offset[~walk.records.inline][3]) - 16) // 4096
    patch(written, first * 4096 + 10, struct.pack("<H", 0x05))
    lmdb_check.check(written)  # the headers of record values are read only when asked to
    with pytest.raises(ValueError, match=f"overflow page {first} of the main database has a damaged header"):
        lmdb_check.check(written, every_value=True)


def test_verify_reports_damaged_pages_without_touching_them(written: Path, tmp_path: Path) -> None:
    pgno = lmdb_pages.walk(written).meta.main.root
    patch(written, pgno * 4096 + 18, struct.pack("<H", 0xFFF0))
    result = run_script("verify.py", written, "--full")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stdout.strip() == (
        f"FAIL {written}: {written}: its LMDB pages are damaged (a node offset points outside its page); LMDB "
        "would read wrong records or crash on it, so nothing of it was read. Copy it again from the original, "
        "and check the original first with `imagefolder-lmdb verify ORIGINAL --full`"
    )


# -- record values: every read checked against its CRC-32 (issue 41) ---------------------------------


def flip_record(path: Path, index: int, count: int = 64) -> None:
    """Flip ``count`` bytes in the middle of record ``index``'s stored value, as a bad copy would."""
    offset, length = layout_of(path).values[record_key(index)]
    start = offset + max(0, length // 2 - count // 2)
    with path.open("r+b") as stream:
        stream.seek(start)
        chunk = stream.read(min(count, length))
        stream.seek(start)
        stream.write(bytes(b ^ 0xFF for b in chunk))


def read_record(path: Path, index: int, by_offset: bool, how: str, **options: Any) -> Callable[[], dict[str, Any]]:
    """Read record ``index`` one way (``get_bytes``, ``ds[i]``, a batch around it), reporting the bytes or
    the error."""

    def job() -> dict[str, Any]:
        ds = LMDBReader(path, decode="bytes", **options)
        if not by_offset:
            ds._offsets = None
        try:
            if how == "get_bytes":
                data = ds.get_bytes(index)
            elif how == "item":
                data = ds[index][0]
            else:
                data = ds.__getitems__([index - 1, index, index + 1])[1][0]
        except Exception as exc:  # noqa: BLE001 - the message is what the test checks
            return {"error": f"{type(exc).__name__}: {exc}", "by_offset": ds.reads_by_offset}
        return {"value": data.hex(), "by_offset": ds.reads_by_offset, "check_crc": ds.check_crc(index)}

    return job


@pytest.mark.parametrize("index", [7, 10])  # on overflow pages; inside a leaf page
@pytest.mark.parametrize("by_offset", [True, False])
@pytest.mark.parametrize("how", ["get_bytes", "item", "batch"])
def test_a_damaged_record_is_refused_on_every_read_path(written: Path, index: int, by_offset: bool, how: str) -> None:
    flip_record(written, index, 64 if index % 5 else 16)
    result = in_child(read_record(written, index, by_offset, how))
    assert result["by_offset"] is by_offset
    assert result["error"] == (
        f"DamagedRecordError: {written}: record {index} does not match its CRC-32 (meta/crc32): its stored bytes "
        "changed since it was written (a damaged copy or disk). Check the file with `imagefolder-lmdb verify "
        f"{written} --full` (in a checkout: `python scripts/verify.py {written} --full`) and copy it again from an "
        "original that passes; crc_check=False turns this check off."
    )


@pytest.mark.parametrize("by_offset", [True, False])
def test_crc_check_false_reads_the_damaged_bytes_as_stored(written: Path, by_offset: bool) -> None:
    clean = LMDBReader(written, decode="bytes").get_bytes(7)
    close_all_envs()
    flip_record(written, 7)
    result = in_child(read_record(written, 7, by_offset, "batch", crc_check=False))
    stored = bytes.fromhex(result["value"])
    assert len(stored) == len(clean) and stored != clean and result["check_crc"] is False
    neighbour = in_child(read_record(written, 8, by_offset, "item"))  # the check on: a sound record reads
    assert "value" in neighbour and neighbour["check_crc"] is True


def test_a_damaged_record_is_refused_as_an_image_and_as_a_tensor(tmp_path: Path) -> None:
    from support.images import jpeg_bytes

    path = tmp_path / "images.lmdb"
    write_dataset(path, [jpeg_bytes(i, (64, 48)) for i in range(6)])
    flip_record(path, 3, 40)
    for decode in ("pil", "tensor"):
        result = in_child(
            lambda decode=decode: {"shape": list(np.asarray(LMDBReader(path, decode=decode)[3][0]).shape)}
        )
        assert result["crashed"].startswith(f"DamagedRecordError: {path}: record 3 does not match its CRC-32")
