"""Commands a test interrupts, started as a terminal starts them and ended whatever the test's outcome.

A background job of a non-interactive shell (``sh -c 'make test > log &'``, a CI runner) inherits
SIGINT ignored, and so would every child the tests start: the Ctrl-C a test sends would then do
nothing and the test wait for its timeout. The product is right to keep an inherited "ignore"; a
test gives the command it interrupts what a user's terminal gives: SIGINT at its default, in a
process group of its own (``subprocess``'s ``restore_signals`` resets SIGPIPE and SIGXFSZ, not SIGINT).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: In the environment of every command a test starts here, and so of everything it starts: what
#: ``end_all`` looks for in /proc, whichever process group a descendant moved to.
TAG_VARIABLE = "IMAGEFOLDER_LMDB_TEST_STARTED"


def default_sigint() -> None:
    """In the child, before it runs the command: SIGINT at its default, as at a terminal."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def popen_interruptible(command: Sequence[str | os.PathLike[str]], **options: Any) -> subprocess.Popen[str]:
    """``command`` started as a shell's foreground job: its own process group, SIGINT at its default,
    text output. ``options`` go to ``subprocess.Popen``."""
    return subprocess.Popen(
        [os.fspath(part) for part in command],
        start_new_session=True,
        preexec_fn=default_sigint,  # the tests start commands from the main thread only
        text=True,
        **options,
    )


def tagged_with(tag: str) -> list[int]:
    """The processes whose environment holds ``TAG_VARIABLE=tag``."""
    needle = f"{TAG_VARIABLE}={tag}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if entry.name.isdigit() and needle in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
    return found


def end_all(tag: str, processes: list[subprocess.Popen[str]]) -> None:
    """SIGKILL each command's process group, every group a process it started moved to, and any such
    process left in the test's own group; then reap the commands and close their pipes."""
    own = os.getpgrp()
    groups = {process.pid for process in processes}  # each command leads a group of its own
    for pid in tagged_with(tag):
        with contextlib.suppress(ProcessLookupError):
            groups.add(os.getpgid(pid))
    for group in groups - {own}:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGKILL)
    for pid in tagged_with(tag):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    for process in processes:
        process.wait()
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                stream.close()


class StartedCommands:
    """What the ``commands`` fixture hands a test: ``start`` a command; every one ends with the test."""

    def __init__(self) -> None:
        self.tag = uuid.uuid4().hex
        self.processes: list[subprocess.Popen[str]] = []

    def start(self, command: Sequence[str | os.PathLike[str]], **options: Any) -> subprocess.Popen[str]:
        environment = {**(options.pop("env", None) or os.environ), TAG_VARIABLE: self.tag}
        process = popen_interruptible(command, env=environment, **options)
        self.processes.append(process)
        return process

    def end(self) -> None:
        end_all(self.tag, self.processes)


def wait_until_held(process: subprocess.Popen[str], marker: Path) -> None:
    """Return once ``process`` has written ``marker`` at its hold point; its output in the failure if it ended first."""
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the hold point was not reached"
        time.sleep(0.05)
