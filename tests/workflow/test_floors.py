"""The requirements' floors: the reader's and the package's tests pass in a venv of the oldest
releases pyproject.toml admits (requirements-floors.txt: lmdb, numpy, Pillow, tqdm, PyYAML), installed over
the project's venv; the datasets they read are converted as a user would, by the workflow in its own
venv (the pins of requirements.txt). torch and torchvision stay at the pins (requirements-floors.txt
says why)."""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from support import BIN, REPO
from support.datasets import PAGES_STAY_CACHED
from support.package import fresh_venv, install_exact

pytestmark = pytest.mark.slow  # builds a venv at the floors: make test runs it, -m "not slow" leaves it out

FLOORS = REPO / "requirements-floors.txt"
#: The reader's tests, the package's (the wheel installed, reading and verifying) and verify's.
AT_THE_FLOORS = [
    "tests/unit/test_reader.py",
    "tests/unit/test_damaged_files.py",
    "tests/unit/test_record_locations.py",
    "tests/unit/test_verify.py",
    "tests/unit/test_checksum.py",
    "tests/workflow/test_reader.py",
    "tests/workflow/test_package.py::test_installed_package_reads_a_dataset",
    "tests/workflow/test_package.py::test_installed_command_verifies_and_converts",
]
#: Not at the floors, and why. DataLoader's start methods test multiprocessing, not these libraries
#: (fork runs). py-lmdb 1.x keeps a finished read transaction for reuse, and with it the reader slot
#: of a lock=True file, until the file is closed: a process holds its slot between reads, so a second
#: process finds none of a table of one (py-lmdb 2.0 frees it).
DESELECTED = "not spawn and not forkserver and not test_max_readers_exceeded_gives_a_clear_error"


def floors() -> dict[str, Version]:
    lines = [line.split("#")[0].strip() for line in FLOORS.read_text().splitlines()]
    pins = [Requirement(line) for line in lines if line]
    return {pin.name.lower(): Version(next(iter(pin.specifier)).version) for pin in pins}


def test_floors_are_the_declared_ones() -> None:
    declared = [
        Requirement(line) for line in tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    ]
    lowest = {r.name.lower(): Version(s.version) for r in declared for s in r.specifier if s.operator == ">="}
    tested = floors()
    assert {name: lowest[name] for name in tested} == tested, "pyproject.toml's floors are the tested releases"
    assert set(lowest) == set(tested), "every floor tested (torch, an extra since issue 53, is not a base requirement)"


def test_reader_and_package_tests_pass_at_the_floors(tmp_path: Path) -> None:
    python = fresh_venv(tmp_path / "floors")
    install_exact(python, FLOORS)
    probe = "import json, lmdb, numpy, PIL, tqdm; print(json.dumps([m.__version__ for m in (lmdb, numpy, PIL, tqdm)]))"
    versions = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, check=True).stdout
    assert [Version(v) for v in json.loads(versions)] == [floors()[n] for n in ("lmdb", "numpy", "pillow", "tqdm")]

    environment = {**os.environ, "IMAGEFOLDER_LMDB_WORKFLOW_BIN": str(BIN), "PYTHONPATH": str(REPO / "src")}
    command = [str(python), "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", f"--basetemp={tmp_path / 'run'}"]
    command += ["-k", DESELECTED, *AT_THE_FLOORS]
    result = subprocess.run(
        command, cwd=REPO, env=environment, capture_output=True, text=True, timeout=1800, check=False
    )
    assert result.returncode == 0, result.stdout[-8000:] + result.stderr[-3000:]
    assert " passed" in result.stdout.splitlines()[-1]
    assert not unexpected_skips(result.stdout), result.stdout[-8000:]


def unexpected_skips(report: str) -> list[str]:
    """The skip lines of a ``pytest -rs`` report but those of a page cache that keeps a file's pages
    (a machine's state, not the floors: the same tests skip alike in the project's venv)."""
    skips = [line for line in report.splitlines() if line.startswith("SKIPPED")]
    return [line for line in skips if PAGES_STAY_CACHED not in line]
