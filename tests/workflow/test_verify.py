"""`python scripts/verify.py PATH [--full]` on its own, as after copying a dataset elsewhere."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import lmdb
import pytest

from imagefolder_lmdb.reader import META_KEYS, LMDBDataset, close_all_envs, encode_document
from support.commands import run_script
from support.datasets import copy_alone
from support.workflow import Converted

#: A record in the middle of the file, stored byte for byte (checked below).
DAMAGED = 17


def run_verify(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The verify CLI with the venv's python, from an unrelated working directory."""
    return run_script("verify.py", path, *args)


@pytest.fixture
def copied(converted: Converted, tmp_path: Path) -> Path:
    """The converted dataset copied alone into another folder: new path, new inode, no run around it."""
    return copy_alone(converted.lmdb, tmp_path / "elsewhere" / "copied.lmdb")


def flip_one_byte_of_record(path: Path, index: int) -> None:
    """Flip one bit in the middle of record ``index``'s stored bytes, inside the LMDB file."""
    value = LMDBDataset(path).get_bytes(index)
    close_all_envs()
    blob = path.read_bytes()
    probe = value[len(value) // 2 : len(value) // 2 + 64]
    offset = blob.find(probe)
    assert offset >= 0 and blob.find(probe, offset + 1) == -1, "the record's bytes must occur once in the file"
    with path.open("r+b") as stream:  # in place: same inode, same size, one byte differs
        stream.seek(offset + 10)
        stream.write(bytes([blob[offset + 10] ^ 0x01]))


def test_verify_full_passes_on_a_copy_and_creates_nothing(copied: Path) -> None:
    result = run_verify(copied, "--full")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"OK {copied}: 40 images, 4 classes")
    assert "40 records checked (all)" in lines[0]
    assert [p.name for p in copied.parent.iterdir()] == ["copied.lmdb"], "no -lock or other file beside it"


def test_verify_full_names_a_record_with_one_flipped_byte(copied: Path) -> None:
    ds = LMDBDataset(copied)
    assert ds.storage_reason(DAMAGED) == "passthrough"
    relative = ds.samples[DAMAGED][0]
    flip_one_byte_of_record(copied, DAMAGED)

    result = run_verify(copied, "--full")
    assert result.returncode == 1
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"FAIL {copied}: 40 images")
    assert f"first problem: record {DAMAGED} ({relative}): checksum mismatch" in lines[0]


def test_verify_sample_misses_what_it_does_not_check(copied: Path) -> None:
    """Without --full only the sample is checked: the damaged record is found only if drawn."""
    flip_one_byte_of_record(copied, DAMAGED)
    assert run_verify(copied, "--sample", "0").returncode == 0
    assert run_verify(copied, "--sample", "40").returncode == 1


def test_verify_warns_about_locations_without_their_checksum(copied: Path, tmp_path: Path) -> None:
    """A file whose locations an earlier version wrote (no checksum) verifies, with a warning."""
    with lmdb.open(str(copied), subdir=False, lock=False, map_size=1 << 30) as env, env.begin(write=True) as txn:
        document = json.loads(txn.get(META_KEYS["json"]))
        del document["locations"]["crc32"]
        document["locations"]["txnid"] = txn.id()
        txn.put(META_KEYS["json"], encode_document(document))
    report = tmp_path / "report.json"
    assert run_verify(copied, "--full", "--report", str(report)).returncode == 0
    assert json.loads(report.read_text())["warnings"] == [
        "meta/locations: the recorded locations match the file but carry no checksum (an earlier version wrote "
        "them); the reader checks their layout and a few records only; `imagefolder-lmdb add-locations "
        f"{copied}` gives them one"
    ]
