"""Damage a converted file in seeded random ways and see what the reader and ``verify --full`` make
of each: a truncation anywhere, a byte flipped inside a record's value or a meta value, a byte
flipped inside LMDB's own structure (meta pages, branch and leaf pages, overflow headers, the
free list).

    python tests/support/fuzz.py FILE.lmdb RESULTS.jsonl --seed 0 --truncations 200 --value-flips 200
                                 [--structure-flips 200]

One process handles every case: it writes the damaged copy, then forks a child for the reader
without its CRC-32 check (open the copy with ``crc_check=False``, read every record through the
default path, both batched and one by one), one for the reader as users get it (every record read
checked against its CRC-32) and one for ``command.main([copy, "--full"])`` (verify), so that a signal ends
only its own case and is seen as one (a negative return code). One JSON line per case goes to
RESULTS; tests/workflow/test_fuzz.py judges them.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import signal
import struct
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lmdb

from imagefolder_lmdb.reader import LMDBReader, close_all_envs, lmdb_check, lmdb_pages, record_key
from imagefolder_lmdb.verify import command

#: A child that runs longer than this is killed (SIGALRM) and counted as a signal.
CASE_SECONDS = 60


@dataclass
class Layout:
    """Where things lie in a clean file: each key's value, and LMDB's own bytes."""

    size: int
    records: list[bytes]  # each record's value, in index order
    values: dict[bytes, tuple[int, int]] = field(default_factory=dict)  # key -> (offset, length)
    structure: list[tuple[int, int]] = field(default_factory=list)  # [start, end) byte ranges


def _node_ranges(layout: Layout, page: bytes, pgno: int, page_size: int, main: bool) -> None:
    """The node headers, keys and overflow references of one page (and, in the main database,
    where each value lies; free-list values are LMDB's own bytes)."""
    flags, count = lmdb_pages._page_header(page, pgno, page_size)
    base = pgno * page_size
    layout.structure.append((base, base + lmdb_pages.PAGE_HEADER + 2 * count))
    nodes = zip(*(array.tolist() for array in lmdb_pages._node_fields(page, count)), strict=True)
    for ptr, low, high, node_flags, key_size in nodes:
        key_end = ptr + lmdb_pages.NODE_HEADER + key_size
        if flags & lmdb_pages.P_BRANCH:
            layout.structure.append((base + ptr, base + key_end))
            continue
        if node_flags & lmdb_pages.F_BIGDATA:
            first = struct.unpack_from("<Q", page, key_end)[0] * page_size
            layout.structure += [(base + ptr, base + key_end + 8), (first, first + lmdb_pages.PAGE_HEADER)]
            offset = first + lmdb_pages.PAGE_HEADER
        else:
            layout.structure.append((base + ptr, base + key_end))
            offset = base + key_end
        if main:
            layout.values[page[ptr + lmdb_pages.NODE_HEADER : key_end]] = (offset, low | high << 16)
        else:  # a free list's page numbers are LMDB's own bytes
            layout.structure.append((offset, offset + (low | high << 16)))


def layout_of(path: Path) -> Layout:
    """The layout of a clean single-file dataset (checked whole first)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        walk = lmdb_check.check_fd(fd, every_value=True)
        free_tree, _ = lmdb_check._free_list(fd, walk.meta)
        size, page_size = os.fstat(fd).st_size, walk.meta.page_size
        with lmdb.open(str(path), subdir=False, readonly=True, lock=False) as env, env.begin() as txn:
            records = [bytes(txn.get(record_key(i))) for i in range(len(walk.records.index))]
        layout = Layout(size=size, records=records, structure=[(0, 152), (page_size, page_size + 152)])
        for pages, main in ((walk.tree.pages, True), (free_tree.pages, False)):
            for pgno in pages:
                _node_ranges(layout, lmdb_pages._read_page(fd, pgno, page_size), pgno, page_size, main)
    finally:
        os.close(fd)
    return layout


# -- the cases --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    kind: str  # "truncation", "record-flip", "meta-flip", "structure-flip"
    at: int  # the new size (truncation) or the flipped byte's offset
    mask: int = 0  # what the byte is XORed with
    record: int | None = None  # the record whose value holds the flipped byte
    key: str | None = None  # the meta key whose value holds it


def cases(layout: Layout, seed: int, truncations: int, value_flips: int, structure_flips: int) -> list[Case]:
    """Seeded cases: truncations anywhere; flips spread over record values and over meta values
    (half each); flips over LMDB's own bytes."""
    rng = random.Random(seed)
    chosen = [Case("truncation", rng.randrange(layout.size)) for _ in range(truncations)]
    records = [key for key in layout.values if not key.startswith(b"meta/")]
    metas = sorted(key for key in layout.values if key.startswith(b"meta/") and layout.values[key][1])
    for number in range(value_flips):
        key = rng.choice(records if number % 2 == 0 else metas)
        offset, length = layout.values[key]
        at = offset + rng.randrange(length)
        if key.startswith(b"meta/"):
            chosen.append(Case("meta-flip", at, rng.randrange(1, 256), key=key.decode()))
        else:
            chosen.append(Case("record-flip", at, rng.randrange(1, 256), record=int(key)))
    spans = [(start, end) for start, end in layout.structure if end > start]
    weights = [end - start for start, end in spans]
    for start, end in rng.choices(spans, weights=weights, k=structure_flips):
        chosen.append(Case("structure-flip", rng.randrange(start, end), rng.randrange(1, 256)))
    return chosen


def damaged(original: bytes, case: Case) -> bytes:
    if case.kind == "truncation":
        return original[: case.at]
    data = bytearray(original)
    data[case.at] ^= case.mask
    return bytes(data)


def expected_records(layout: Layout, case: Case) -> list[bytes]:
    """Every record as LMDB itself holds it in the damaged copy (what a reader may return)."""
    records = list(layout.records)
    if case.record is not None:
        offset = layout.values[record_key(case.record)][0]
        value = bytearray(records[case.record])
        value[case.at - offset] ^= case.mask
        records[case.record] = bytes(value)
    return records


# -- one child per run ------------------------------------------------------------------------------


def in_child(job: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``job()`` in a forked child; its result, or ``{"signal": n}`` if a signal ended it."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the parent's code
        os.close(read_end)
        signal.alarm(CASE_SECONDS)
        try:
            result = job()
        except BaseException as exc:  # noqa: BLE001 - reported, judged by the test
            result = {"crashed": f"{type(exc).__name__}: {exc}"}
        os.write(write_end, json.dumps(result).encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as stream:
        sent = stream.read()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return {"signal": os.WTERMSIG(status)}
    return json.loads(sent) if sent else {"crashed": f"exit status {os.waitstatus_to_exitcode(status)}, no result"}


def read_everything(path: Path, expected: list[bytes], originals: list[bytes]) -> dict[str, Any]:
    """Open the copy with ``crc_check=False`` (what LMDB and the offsets give, unchecked) and read every
    record through the default path, batched and one by one.
    ``wrong``: records that differ from ``expected`` (LMDB's own bytes where the damage lies in a
    value); ``wrong_by_offset``: those of them read by offset; ``other_records``: those that hold
    another record's bytes."""
    result: dict[str, Any] = {"stage": "open"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            ds = LMDBReader(path, decode="bytes", crc_check=False)
            result.update(stage="read", by_offset=ds.reads_by_offset, length=len(ds))
            batch = [data for data, _ in ds.__getitems__(list(range(len(ds))))]
            singles = [ds.get_bytes(i) for i in range(len(ds))]
            result["stage"] = "done"
            result.update(judged(ds, batch, singles, expected, originals))
        except Exception as exc:  # noqa: BLE001 - the message is what the test judges
            result["error"] = f"{type(exc).__name__}: {exc}"
    result["warnings"] = [f"{w.category.__name__}: {w.message}" for w in caught]
    return result


def read_checked(path: Path, originals: list[bytes]) -> dict[str, Any]:
    """Open the copy as users do (every record checked against its CRC-32) and read every record in
    one batch: ``wrong`` lists the records whose bytes differ from those written (there must be none)."""
    try:
        ds = LMDBReader(path, decode="bytes")
        batch = [data for data, _ in ds.__getitems__(list(range(len(ds))))]
    except Exception as exc:  # noqa: BLE001 - the message is what the test judges
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {
        "stage": "done",
        "wrong": [i for i, data in enumerate(batch) if i >= len(originals) or data != originals[i]],
    }


def judged(
    ds: LMDBReader, batch: list[bytes], singles: list[bytes], expected: list[bytes], originals: list[bytes]
) -> dict[str, list[int]]:
    wrong = [i for i in range(len(ds)) if i >= len(expected) or batch[i] != expected[i] or singles[i] != expected[i]]
    offsets = ds._offsets
    owner = {value: index for index, value in enumerate(originals)}
    return {
        "wrong": wrong,
        "wrong_by_offset": [i for i in wrong if offsets is not None and offsets[i]],
        "other_records": [i for i in wrong if owner.get(batch[i], i) != i or owner.get(singles[i], i) != i],
    }


def run_verify(path: Path, layout: Layout) -> dict[str, Any]:
    """``verify --full`` on the copy; when it passes, LMDB's own view of every key and value is
    compared with the clean file's (a pass must mean the file reads as written)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = command.main([str(path), "--full"])
    result: dict[str, Any] = {"rc": code, "output": out.getvalue().strip()}
    if code == 0:
        close_all_envs()  # verify's own environment of the copy
        with lmdb.open(str(path), subdir=False, readonly=True, lock=False) as env, env.begin() as txn:
            records = [bytes(txn.get(record_key(i)) or b"") for i in range(len(layout.records))]
        result["records_as_written"] = records == layout.records
    return result


def run_case(original: bytes, layout: Layout, case: Case, copy: Path) -> dict[str, Any]:
    copy.write_bytes(damaged(original, case))
    expected = expected_records(layout, case)
    return {
        "case": case.__dict__,
        "reader": in_child(lambda: read_everything(copy, expected, layout.records)),
        "checked": in_child(lambda: read_checked(copy, layout.records)),
        "verify": in_child(lambda: run_verify(copy, layout)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("results", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--truncations", type=int, default=200)
    parser.add_argument("--value-flips", type=int, default=200)
    parser.add_argument("--structure-flips", type=int, default=0)
    args = parser.parse_args(argv)
    layout = layout_of(args.file)
    original = args.file.read_bytes()
    copy = args.results.with_suffix(".case.lmdb")
    chosen = cases(layout, args.seed, args.truncations, args.value_flips, args.structure_flips)
    with args.results.open("w") as stream:
        for case in chosen:
            stream.write(json.dumps(run_case(original, layout, case, copy)) + "\n")
    copy.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
