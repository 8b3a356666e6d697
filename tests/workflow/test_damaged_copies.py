"""A converted file damaged as copies get damaged (issue 21): cut short by an interrupted copy, or
with its record locations (meta/locations) damaged for a few records while the spot-checked ones
stay right. Each test starts from the fault as a user meets it and checks the words every command
says, its exit status (never a signal) and what it leaves behind."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from imagefolder_lmdb.reader import LOCATION_DTYPE, LMDBReader, LocationsWarning, close_all_envs, spot_check_indices
from support import REPO
from support.commands import run_script
from support.datasets import copy_alone, stored_records
from support.fuzz import layout_of
from support.workflow import Converted

pytestmark = pytest.mark.usefixtures("fresh_envs")  # the tests open their files afresh

RECOPY = (
    "Copy it again from the original, and check the original first with `imagefolder-lmdb verify "
    "ORIGINAL --full` (in a checkout: `python scripts/verify.py ORIGINAL --full`)."
)


@pytest.fixture
def copied(converted: Converted, tmp_path: Path) -> Path:
    """The converted dataset copied alone into another folder, as onto a node's local disk."""
    return copy_alone(converted.lmdb, tmp_path / "node" / "train.lmdb")


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
    assert reader.stderr.strip().splitlines()[-1] == f"imagefolder_lmdb.reader.TruncatedFileError: {message}"

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


@dataclass
class Damaged:
    """A copy whose stored locations of SWAPPED were swapped, and what it held before."""

    path: Path
    records: list[bytes]  # every record as LMDB holds it (the damage changed none)
    clean: np.ndarray  # the locations as they were

    def where(self) -> tuple[str, str]:
        """How the commands describe record SWAPPED[0]: where it is recorded, where it lies."""
        first, second = SWAPPED
        offset, length = int(self.clean["offset"][second]), int(self.clean["length"][second])
        held = int(self.clean["offset"][first]), int(self.clean["length"][first])
        return (
            f"recorded at offset {offset:,}, length {length:,}",
            f"the file holds it at offset {held[0]:,}, length {held[1]:,}",
        )


@pytest.fixture
def damaged(copied: Path) -> Damaged:
    records, _, _ = stored_records(copied)
    return Damaged(copied, list(records.values()), damage_locations(copied))


def test_damaged_locations_are_not_used_and_the_reader_warns_once(damaged: Damaged) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = LMDBReader(damaged.path, decode="bytes")
        assert not ds.reads_by_offset
        assert [ds.get_bytes(i) for i in range(len(ds))] == damaged.records
        assert [data for data, _ in ds.__getitems__(list(range(len(ds))))] == damaged.records
    path = damaged.path
    assert [str(w.message) for w in caught if w.category is LocationsWarning] == [
        f"{path}: its record locations (meta/locations) do not match their checksum: they are damaged. It is "
        "read through LMDB, which gives the same bytes but is slower on a cold cache; `imagefolder-lmdb "
        f"add-locations {path}` (in a checkout: `python scripts/add_locations.py {path}`) "
        "writes them again for this file."
    ]


def test_verify_full_names_the_wrong_locations_not_changed_bytes(damaged: Damaged, tmp_path: Path) -> None:
    with pytest.warns(LocationsWarning):
        paths = [path for path, _ in LMDBReader(damaged.path).samples]
    close_all_envs()
    report = tmp_path / "report.json"
    verify = run_script("verify.py", damaged.path, "--full", "--report", report)
    assert verify.returncode == 1
    recorded, held = damaged.where()
    table = (
        f"meta/locations is damaged: the recorded locations of 2 of 40 records do not match the file (record "
        f"{SWAPPED[0]}: {recorded}; {held}); the reader does not use them: it reads every record through LMDB "
        f"(the same bytes, slower on a cold cache); `imagefolder-lmdb add-locations {damaged.path} --force` "
        "writes them again"
    )
    assert verify.stdout.strip().endswith(f"first problem: {table}")
    clean = damaged.clean
    assert json.loads(report.read_text())["problems"] == [table] + [
        f"record {index} ({paths[index]}): its recorded location is wrong: offset {int(clean['offset'][other]):,}, "
        f"length {int(clean['length'][other]):,} (meta/locations) do not hold the record LMDB holds; LMDB's own "
        "bytes of it are intact"
        for index, other in zip(SWAPPED, reversed(SWAPPED), strict=True)
    ]
    assert "stored bytes changed" not in verify.stdout + report.read_text()


@pytest.mark.parametrize("force", [False, True], ids=["plain", "force"])
def test_add_locations_says_what_it_finds_and_repairs(damaged: Damaged, force: bool) -> None:
    path = damaged.path
    result = run_script("add_locations.py", path, *(["--force"] if force else []))
    assert result.returncode == 0, result.stderr
    recorded, held = damaged.where()
    assert result.stdout.splitlines() == [
        f"{path}: the recorded locations of 2 of 40 records do not match the file (record {SWAPPED[0]}: "
        f"{recorded}; {held}); writing them again",
        f"OK {path}: 40 of 40 records located (the others are read through LMDB), LMDB transaction "
        f"{stored_records(path)[2]['locations']['txnid']}",
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error", LocationsWarning)
        ds = LMDBReader(path, decode="bytes")
        assert ds.reads_by_offset and [ds.get_bytes(i) for i in range(len(ds))] == damaged.records
    close_all_envs()
    assert run_script("verify.py", path, "--full").returncode == 0

    # once they match, plain add_locations writes nothing; --force writes them again anyway
    again = run_script("add_locations.py", path, *(["--force"] if force else []))
    if force:
        assert (
            again.stdout.splitlines()[0]
            == f"{path}: the recorded locations match the file; writing them again (--force)"
        )
    else:
        assert again.stdout.strip().endswith("; they were recorded already, nothing written (they match the file)")
