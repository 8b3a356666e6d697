"""A converted file damaged as copies get damaged (issue 21): cut short by an interrupted copy, or
with its record locations (meta/locations) damaged for a few records while the spot-checked ones
stay right. Each test starts from the fault as a user meets it and checks the words every command
says, its exit status (never a signal) and what it leaves behind."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from dataset import LOCATION_DTYPE, LMDBReader, LocationsWarning, close_all_envs, spot_check_indices
from support import REPO
from support.commands import run_script
from support.datasets import stored_records
from support.fuzz import layout_of
from support.workflow import Converted

pytestmark = pytest.mark.usefixtures("fresh_envs")  # the tests open their files afresh

RECOPY = (
    "Copy it again from the original, and check the original first with `python scripts/verify.py "
    "ORIGINAL --full` (installed with pip: `imagefolder-lmdb verify ORIGINAL --full`)."
)


@pytest.fixture
def copied(converted: Converted, tmp_path: Path) -> Path:
    """The converted dataset copied alone into another folder, as onto a node's local disk."""
    path = tmp_path / "node" / "train.lmdb"
    path.parent.mkdir()
    shutil.copy(converted.lmdb, path)
    return path


def open_in_python(path: Path) -> subprocess.CompletedProcess[str]:
    """``LMDBDataset(path)`` and a read of every record, in a Python of its own (a signal would
    end only it), as a training script would start."""
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); from dataset import LMDBDataset\n"
        "ds = LMDBDataset(sys.argv[2]); print(len(ds), sum(len(ds.get_bytes(i)) for i in range(len(ds))))"
    )
    command = [sys.executable, "-c", code, str(REPO / "scripts"), str(path)]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, check=False, cwd="/")


def untouched(path: Path) -> tuple[bytes, int, list[str]]:
    """What a command must leave as it was: the bytes, the time, what lies beside the file."""
    return path.read_bytes(), path.stat().st_mtime_ns, sorted(p.name for p in path.parent.iterdir())


# -- a copy cut short -------------------------------------------------------------------------------


def test_a_copy_cut_short_is_refused_with_what_to_do_by_every_command(copied: Path) -> None:
    whole = copied.stat().st_size
    subprocess.run(["truncate", "-s", "-8K", str(copied)], check=True)  # an interrupted scp or rsync
    before = untouched(copied)
    message = (
        f"{copied} is shorter than it should be: its LMDB header says its pages run to {whole:,} bytes, "
        f"but the file holds {whole - 8192:,}: the last 8,192 bytes are missing. The copy is incomplete "
        f"(an interrupted scp or rsync, a full disk or quota). {RECOPY}"
    )

    reader = open_in_python(copied)
    assert reader.returncode == 1, reader  # an exception, not a signal (SIGBUS was -7)
    assert reader.stderr.strip().splitlines()[-1] == f"dataset.TruncatedFileError: {message}"

    verify = run_script("verify.py", copied, "--full")
    assert verify.returncode == 1
    assert verify.stdout.strip().splitlines() == [f"FAIL {copied}: {message}"]
    assert "Traceback" not in verify.stderr

    locate = run_script("add_locations.py", copied)
    assert locate.returncode == 1 and locate.stdout == ""
    assert locate.stderr.strip().splitlines() == [f"FAIL {copied}: {message}"]
    assert untouched(copied) == before, "nothing written, nothing created beside it"


# -- record locations damaged for a few records -----------------------------------------------------

#: Records whose locations the damage swaps; none of them is spot-checked when the file opens.
SWAPPED = (3, 4)


def damage_locations(path: Path) -> np.ndarray:
    """Swap the stored locations of two records inside the file, in place (same size, same inode),
    as damage of the meta/locations value would leave it; returns the locations as they were."""
    offset, length = layout_of(path).values[b"meta/locations"]
    locations = np.frombuffer(path.read_bytes()[offset : offset + length], dtype=LOCATION_DTYPE).copy()
    assert not set(SWAPPED) & set(spot_check_indices(locations["offset"])), "the spot checks must miss them"
    damaged = locations.copy()
    damaged[list(SWAPPED)] = locations[list(reversed(SWAPPED))]
    with path.open("r+b") as stream:
        stream.seek(offset)
        stream.write(damaged.tobytes())
    return locations


def test_damaged_locations_are_not_used_named_by_verify_and_repaired(copied: Path, tmp_path: Path) -> None:
    records, _, _ = stored_records(copied)
    clean = damage_locations(copied)
    forced = tmp_path / "forced.lmdb"
    shutil.copy(copied, forced)
    first, second = SWAPPED
    recorded = f"recorded at offset {int(clean['offset'][second]):,}, length {int(clean['length'][second]):,}"
    held = f"the file holds it at offset {int(clean['offset'][first]):,}, length {int(clean['length'][first]):,}"

    # the reader: one warning, every record LMDB's own bytes
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = LMDBReader(copied, decode="bytes")
        assert not ds.reads_by_offset
        assert [ds.get_bytes(i) for i in range(len(ds))] == list(records.values())
        assert [data for data, _ in ds.__getitems__(list(range(len(ds))))] == list(records.values())
        paths = [path for path, _ in ds.samples]
    assert [str(w.message) for w in caught if w.category is LocationsWarning] == [
        f"{copied}: its record locations (meta/locations) do not match their checksum: they are damaged. It is "
        "read through LMDB, which gives the same bytes but is slower on a cold cache; `python "
        f"scripts/add_locations.py {copied}` (installed with pip: `imagefolder-lmdb add-locations {copied}`) "
        "writes them again for this file."
    ]
    close_all_envs()

    # verify --full: the wrong locations, by record; not "the stored bytes changed"
    report = tmp_path / "report.json"
    verify = run_script("verify.py", copied, "--full", "--report", report)
    assert verify.returncode == 1
    table = (
        f"meta/locations is damaged: the recorded locations of 2 of 40 records do not match the file (record "
        f"{first}: {recorded}; {held}); the reader does not use them: it reads every record through LMDB (the "
        f"same bytes, slower on a cold cache); `python scripts/add_locations.py {copied} --force` writes them again"
    )
    assert verify.stdout.strip().endswith(f"first problem: {table}")
    problems = json.loads(report.read_text())["problems"]
    assert problems == [table] + [
        f"record {index} ({paths[index]}): its recorded location is wrong: offset "
        f"{int(clean['offset'][other]):,}, length {int(clean['length'][other]):,} (meta/locations) do not hold "
        "the record LMDB holds; LMDB's own bytes of it are intact"
        for index, other in zip(SWAPPED, reversed(SWAPPED), strict=True)
    ]
    assert "stored bytes changed" not in verify.stdout + report.read_text()
    close_all_envs()

    # add_locations says what it finds, and writes them again; so does --force
    plain = run_script("add_locations.py", copied)
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.splitlines()[0] == (
        f"{copied}: the recorded locations of 2 of 40 records do not match the file (record {first}: "
        f"{recorded}; {held}); writing them again"
    )
    assert plain.stdout.splitlines()[1].startswith(f"OK {copied}: 40 of 40 records located")
    force = run_script("add_locations.py", forced, "--force")
    assert force.returncode == 0, force.stderr
    assert force.stdout.splitlines()[0].startswith(f"{forced}: the recorded locations of 2 of 40 records")
    for path in (copied, forced):
        with warnings.catch_warnings():
            warnings.simplefilter("error", LocationsWarning)
            ds = LMDBReader(path, decode="bytes")
            assert ds.reads_by_offset and [ds.get_bytes(i) for i in range(len(ds))] == list(records.values())
        close_all_envs()
        assert run_script("verify.py", path, "--full").returncode == 0

    # once they match, plain add_locations writes nothing; --force writes them again anyway
    again = run_script("add_locations.py", copied)
    assert again.stdout.strip().endswith("; they were recorded already, nothing written (they match the file)")
    forced_again = run_script("add_locations.py", copied, "--force")
    assert forced_again.stdout.splitlines()[0] == (
        f"{copied}: the recorded locations match the file; writing them again (--force)"
    )
