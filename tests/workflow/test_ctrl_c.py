"""Ctrl-C in every command, at every moment, is one line (issue 57): exit status 130, that command's
own words, never a traceback. Each signal lands at a hold point (writing/hold_points.py): "starting"
while the command still imports (run/early_interrupt.py answers, by the command's name), and each
command's point of COMMAND_POINTS mid-work (its own handling, or cli.py's dispatch for info). Each
command is started as a terminal starts it (support/interrupting.py: SIGINT at its default, however
the suite was started) and sent the terminal's Ctrl-C: SIGINT to its process group.
convert's own moments, and its count after Ctrl-C: tests/workflow/test_interrupt.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from imagefolder_lmdb.run.early_interrupt import BEFORE_WORK
from imagefolder_lmdb.writing.hold_points import COMMAND_POINTS
from support.datasets import write_dataset
from support.images import jpeg_bytes
from support.interrupting import StartedCommands
from support.legacy import pickled, write_legacy
from support.workflow import wait_for_hold

#: The console script as pip installs it, beside this interpreter; and the module a checkout runs.
CONSOLE_SCRIPT = [str(Path(sys.executable).parent / "imagefolder-lmdb")]
MODULE = [sys.executable, "-m", "imagefolder_lmdb.cli"]
#: What each command is given; none gets past the hold point "starting", so no file need exist.
ARGUMENTS = {
    "convert": ["images", "out"],
    "verify": ["train.lmdb", "--full"],
    "info": ["train.lmdb"],
    "add-locations": ["train.lmdb"],
    "convert-legacy": ["legacy.lmdb", "new.lmdb"],
}
IMAGES = 6


def interrupted_at(commands: StartedCommands, cwd: Path, command: list[str], hold: str) -> tuple[int, str, str]:
    """``command`` run in ``cwd`` up to ``hold``, then Ctrl-C: its exit status, stdout and stderr."""
    marker = cwd / "held"
    environment = {**os.environ, "IMAGEFOLDER_LMDB_TEST_HOLD": hold, "IMAGEFOLDER_LMDB_TEST_HOLD_MARKER": str(marker)}
    process = commands.start(command, cwd=cwd, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for_hold(marker, process, timeout=120)
    os.killpg(process.pid, signal.SIGINT)
    stdout, stderr = process.communicate(timeout=120)
    assert "Traceback" not in stderr, stderr
    return process.returncode, stdout, stderr


def datasets(folder: Path, names: list[str], locate: bool = True) -> list[Path]:
    """Small datasets of real JPEGs in ``folder`` (an OUTDIR of them), one per name."""
    folder.mkdir(exist_ok=True)
    paths = [folder / name for name in names]
    for seed, path in enumerate(paths):
        write_dataset(path, [jpeg_bytes(seed * IMAGES + index) for index in range(IMAGES)], locate=locate)
    return paths


@pytest.mark.parametrize("name", list(ARGUMENTS))
def test_ctrl_c_while_the_command_starts_says_its_own_words(
    commands: StartedCommands, name: str, tmp_path: Path
) -> None:
    """The early handler answers with the words of the command being run (it answered every command
    with convert's "nothing started ... goes on from there")."""
    status, stdout, stderr = interrupted_at(commands, tmp_path, [*CONSOLE_SCRIPT, name, *ARGUMENTS[name]], "starting")
    assert (status, stdout, stderr.splitlines()) == (130, "", list(BEFORE_WORK[name]))
    if name != "convert":
        assert "nothing started" not in stderr and "goes on from there" not in stderr


def test_ctrl_c_while_the_module_starts(commands: StartedCommands, tmp_path: Path) -> None:
    """``python -m imagefolder_lmdb.cli verify`` (a checkout's way): verify's words too."""
    status, _, stderr = interrupted_at(commands, tmp_path, [*MODULE, "verify", "train.lmdb"], "starting")
    assert (status, stderr.splitlines()) == (130, list(BEFORE_WORK["verify"]))


def test_ctrl_c_while_verify_checks(commands: StartedCommands, tmp_path: Path) -> None:
    """verify OUTDIR, Ctrl-C at its second dataset: the first's verdict printed, one line for the second."""
    first, second = datasets(tmp_path / "out", ["train.lmdb", "val.lmdb"])
    status, stdout, stderr = interrupted_at(commands, tmp_path, [*CONSOLE_SCRIPT, "verify", "out"], "verify-file:1")
    assert status == 130
    assert [line.split(":")[0].split()[-1] for line in stdout.splitlines()] == [str(first)]  # its verdict
    assert stderr.splitlines() == [
        f"interrupted while checking {second.relative_to(tmp_path)}: no verdict on it (verify changes no dataset). "
        "Run the same command again to check."
    ]


def test_ctrl_c_while_info_reads(commands: StartedCommands, tmp_path: Path) -> None:
    """info, every dataset read, nothing printed yet: info's words (cli.py's dispatch), nothing else."""
    datasets(tmp_path, ["train.lmdb"])
    status, stdout, stderr = interrupted_at(commands, tmp_path, [*MODULE, "info", "train.lmdb"], "info-read")
    assert (status, stdout, stderr.splitlines()) == (130, "", list(BEFORE_WORK["info"]))


def test_ctrl_c_while_add_locations_runs(commands: StartedCommands, tmp_path: Path) -> None:
    """add-locations of two files, Ctrl-C at the second: the first done, the second unchanged, one line."""
    first, second = datasets(tmp_path, ["a.lmdb", "b.lmdb"], locate=False)
    before = second.read_bytes()
    command = [*CONSOLE_SCRIPT, "add-locations", first.name, second.name]
    status, stdout, stderr = interrupted_at(commands, tmp_path, command, "add-locations-file:1")
    assert status == 130
    assert stdout.splitlines()[-1].startswith(f"OK {first.name}: 6 of 6 records located")
    assert stderr.splitlines() == [
        f"interrupted while recording the locations of {second.name}: they are written whole or not at all "
        "(one LMDB transaction). Run the same command again: files already done are left as they are."
    ]
    assert second.read_bytes() == before


def test_ctrl_c_while_convert_legacy_writes(commands: StartedCommands, tmp_path: Path) -> None:
    """convert-legacy halfway through the records: OUT not written, nothing of it left, and the same
    command then converts."""
    write_legacy(tmp_path / "legacy.lmdb", pickled([(jpeg_bytes(index), index % 2) for index in range(IMAGES)]))
    command = [*CONSOLE_SCRIPT, "convert-legacy", "legacy.lmdb", "new.lmdb"]
    status, stdout, stderr = interrupted_at(commands, tmp_path, command, "convert-legacy-record")
    assert (status, stdout) == (130, "")
    assert stderr.splitlines() == [
        "interrupted: new.lmdb not written (it appears only when complete). Run the same command again."
    ]
    assert [path.name for path in tmp_path.iterdir() if path.name.startswith("new.lmdb")] == []
    again = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert again.returncode == 0 and again.stdout.startswith("OK new.lmdb: "), again.stderr


def test_every_command_point_is_tried() -> None:
    """A point added to COMMAND_POINTS needs its test here."""
    tried = {"verify-file", "info-read", "add-locations-file", "convert-legacy-record"}
    assert set(COMMAND_POINTS) == tried
