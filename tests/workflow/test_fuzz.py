"""Seeded damage of a small converted file (issue 21): 200 truncations anywhere, 200 byte flips in
record values and meta values, 100 byte flips in LMDB's own bytes (meta pages, branch and leaf
pages, overflow headers, the free list). For each, opening the file and reading every record
through the default path, and ``verify --full``, end in LMDB's own bytes or a Python exception or
warning with a message: never a signal, never another record's bytes; with the reader's CRC-32
check (the default), never any bytes but those written (tests/support/fuzz.py runs
the cases, a forked child per run, in one process of its own). Where LMDB's own bytes are damaged
(a record's size in its leaf page), the reader may return them only for records it reads through
LMDB: what it reads by offset is always the record as written."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from support import REPO
from support.images import jpeg_bytes
from support.workflow import Converted, convert

pytestmark = pytest.mark.slow  # a minute or more: make test runs it, -m "not slow" leaves it out

SEED = 21
TRUNCATIONS, VALUE_FLIPS, STRUCTURE_FLIPS = 200, 200, 100


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Converted:
    """200 small JPEGs in 4 classes, converted: enough records for a branch page above the leaves;
    one in seven so small that its value lies inside a leaf page, the others on overflow pages."""
    tree = tmp_path_factory.mktemp("fuzz") / "train"
    for index in range(200):
        folder = tree / f"class{index % 4}"
        folder.mkdir(parents=True, exist_ok=True)
        size = (8, 6) if index % 7 == 0 else (40 + index % 50, 30 + index % 40)
        (folder / f"img{index:03d}.JPEG").write_bytes(jpeg_bytes(index, size))
    converted = convert(tree.parent / "run", tree, shards=2)
    converted.run.check()
    return converted


@pytest.fixture(scope="module")
def results(small: Converted) -> list[dict[str, Any]]:
    out = small.workdir / "fuzz.jsonl"
    command = [sys.executable, str(REPO / "tests" / "support" / "fuzz.py"), str(small.lmdb), str(out)]
    command += ["--seed", str(SEED), "--truncations", str(TRUNCATIONS), "--value-flips", str(VALUE_FLIPS)]
    command += ["--structure-flips", str(STRUCTURE_FLIPS)]
    finished = subprocess.run(command, capture_output=True, text=True, timeout=1800, check=False)
    assert finished.returncode == 0, finished.stderr[-4000:]
    return [json.loads(line) for line in out.read_text().splitlines()]


def problems_of(row: dict[str, Any]) -> list[str]:
    """What is wrong with one case's outcome (empty if it is as it must be)."""
    case, reader, verify = row["case"], row["reader"], row["verify"]
    found = [f"{run} ended by signal {result['signal']}" for run, result in row.items() if "signal" in result]
    found += [f"{run} crashed: {result['crashed']}" for run, result in row.items() if "crashed" in result]
    if found:
        return found
    if reader.get("other_records") or reader.get("wrong_by_offset"):
        found.append(f"the reader returned wrong bytes for records {reader['wrong']}")
    if reader.get("wrong") and case["kind"] != "structure-flip":  # else LMDB's own bytes may differ
        found.append(f"the reader did not return LMDB's own bytes for records {reader['wrong']}")
    if "error" in reader and ": " not in reader["error"]:
        found.append(f"the reader failed without a message: {reader['error']!r}")
    if verify["rc"] not in (0, 1) or not verify["output"].startswith(("OK ", "FAIL ")):
        found.append(f"verify said {verify['output']!r} with status {verify['rc']}")
    if verify["rc"] == 0 and not verify["records_as_written"]:
        found.append("verify passed a file whose records do not read as written")
    named = "is shorter than it should be" in reader.get("error", "") + verify["output"]
    if case["kind"] == "truncation" and not named:
        found.append(f"a truncation not named as one: {reader.get('error')!r} / {verify['output']!r}")
    if case["kind"] == "record-flip" and f"record {case['record']} (" not in verify["output"]:
        found.append(f"verify did not name the damaged record {case['record']}: {verify['output']!r}")
    checked = row["checked"]
    if checked.get("wrong"):  # with the CRC-32 check, a record reads as written or not at all
        found.append(f"the checked reader returned wrong bytes for records {checked['wrong']}")
    return found


def test_damage_never_ends_in_a_signal_or_another_records_bytes(results: list[dict[str, Any]]) -> None:
    assert len(results) == TRUNCATIONS + VALUE_FLIPS + STRUCTURE_FLIPS
    failures = [(row["case"], problem) for row in results for problem in problems_of(row)]
    assert not failures, f"{len(failures)} problems, the first: {failures[:5]}"


def test_every_damaged_record_value_is_reported_and_refused_by_the_reader(results: list[dict[str, Any]]) -> None:
    flips = [row for row in results if row["case"]["kind"] == "record-flip"]
    assert len(flips) == VALUE_FLIPS // 2
    assert all(row["verify"]["rc"] == 1 and "checksum mismatch" in row["verify"]["output"] for row in flips)
    # crc_check=False: read as LMDB holds it; the default: refused, naming the record and the fix
    assert all(row["reader"]["stage"] == "done" and not row["reader"]["wrong"] for row in flips)
    unnamed = [
        (row["case"]["record"], row["checked"])
        for row in flips
        if not row["checked"].get("error", "").startswith("DamagedRecordError: ")
        or f": record {row['case']['record']} does not match its CRC-32" not in row["checked"]["error"]
        or "--full" not in row["checked"]["error"]
    ]
    assert not unnamed, unnamed[:3]


def test_structure_damage_is_reported_by_verify_before_lmdb_reads_it(results: list[dict[str, Any]]) -> None:
    flips = [row for row in results if row["case"]["kind"] == "structure-flip"]
    reported = [row for row in flips if row["verify"]["rc"] == 1]
    assert len(reported) > len(flips) // 2, "most flips of LMDB's own bytes are damage"
    said = [row["verify"]["output"] for row in reported]
    assert sum("its LMDB pages are damaged" in line for line in said) > len(reported) // 2, said[:5]
