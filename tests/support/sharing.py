"""Data that the test processes of one run share: built once, by whichever process asks first.

``make test`` runs the suite in two worker processes (pytest-xdist). A session-scoped fixture is
per process there, so each worker would build its own copy of the test tree and its conversion.
``built_once`` builds into a folder that every worker of the run sees (the run's temporary root),
under a file lock: the first asks and builds, the others wait and reuse it. Without xdist it is the
session's own temporary folder. Shared data is read-only for the tests: ``Snapshot`` records it
when built and tells at the end of the session whether a test changed it.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest


def run_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The temporary folder all processes of this test run see: the parent of each xdist worker's
    own (``popen-gw0``, ``popen-gw1``), or the session's when there are no workers."""
    basetemp = tmp_path_factory.getbasetemp()
    # The name too: a pytest that a test starts inherits the variable, not the worker's folder.
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    return basetemp.parent if worker and basetemp.name == f"popen-{worker}" else basetemp


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """``run_root/name``, made by ``build(folder)`` in the first process that asks; later callers
    (other workers) wait for that build and get the same folder. A build that failed is tried again."""
    root = run_root(tmp_path_factory)
    folder, done = root / name, root / f"{name}.done"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)  # what a failed build left
            build(folder)
            done.touch()
    return folder


@dataclass(frozen=True)
class Snapshot:
    """Every file under some folders with its size and modification time: what a test that
    changed shared data would change."""

    files: dict[str, tuple[int, int]]

    @classmethod
    def of(cls, *folders: Path) -> Snapshot:
        files = {}
        for folder in folders:
            for path in sorted(folder.rglob("*")):
                if path.is_file():
                    stat = path.stat()
                    files[str(path)] = (stat.st_size, stat.st_mtime_ns)
        return cls(files)

    def assert_unchanged(self, *folders: Path) -> None:
        now = Snapshot.of(*folders).files
        changed = sorted(set(now) ^ set(self.files) | {path for path in now if now[path] != self.files.get(path)})
        assert not changed, f"a test changed shared read-only data (copy it first, e.g. tree_copy): {changed[:10]}"
