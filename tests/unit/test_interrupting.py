"""The commands the interrupt tests send Ctrl-C to (tests/support/interrupting.py) get SIGINT at its
default even where the suite runs with SIGINT ignored (``sh -c 'make test > log &'``), and end with
everything they started, whichever process group it moved to."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from support.interrupting import StartedCommands, popen_interruptible, tagged_with

#: SIGINT's bit in /proc/PID/status's SigIgn mask.
SIGINT_BIT = 1 << (signal.SIGINT - 1)


@pytest.fixture
def sigint_ignored() -> Iterator[None]:
    """This process as a background job of a non-interactive shell has it: SIGINT ignored."""
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


def ignored_mask(process: subprocess.Popen[str]) -> int:
    status, _ = process.communicate(timeout=30)
    return int(next(line for line in status.splitlines() if line.startswith("SigIgn:")).split()[1], 16)


@pytest.mark.usefixtures("sigint_ignored")
def test_the_interrupted_commands_get_sigint_at_its_default() -> None:
    plain = subprocess.Popen(["cat", "/proc/self/status"], stdout=subprocess.PIPE, text=True)
    assert ignored_mask(plain) & SIGINT_BIT, "a plain child inherits the ignore (restore_signals keeps it)"
    started = popen_interruptible(["cat", "/proc/self/status"], stdout=subprocess.PIPE)
    assert not ignored_mask(started) & SIGINT_BIT


@pytest.mark.usefixtures("sigint_ignored")
def test_the_fixture_ends_what_a_command_started_in_another_group() -> None:
    commands = StartedCommands()
    # the command's child moves to a group of its own and outlives it, as Snakemake under convert does
    commands.start(["sh", "-c", "setsid sleep 600 & exit 0"])
    wait_until(lambda: "sleep" in names(tagged_with(commands.tag)))
    commands.end()
    wait_until(lambda: tagged_with(commands.tag) == [])  # a killed process leaves /proc as it exits


def names(pids: list[int]) -> list[str]:
    found = []
    for pid in pids:
        with contextlib.suppress(OSError):
            found.append(Path(f"/proc/{pid}/comm").read_text().strip())
    return found


def wait_until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 30  # a deadline for a stuck test, not a measure of speed
    while not condition():
        assert time.monotonic() < deadline, "not in 30 s"
        time.sleep(0.01)
