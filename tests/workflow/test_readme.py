"""The documentation stays true: every block marked ``<!-- runnable -->`` in README.md and docs/*.md
runs, in one copy of the repository, as a new user would type it: README.md first (its ``make demo``
makes the data the other blocks read), then docs/*.md by file name."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from support import BIN
from support.package import copy_working_tree
from support.readme import runnable


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository's files as a commit of the working tree would hold them, and .venv."""
    copy = copy_working_tree(tmp_path_factory.mktemp("checkout") / "repo")
    os.symlink(BIN.parent, copy / ".venv")
    return copy


def run_block(kind: str, code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = ["bash", "-euo", "pipefail", "-c", code] if kind == "bash" else [sys.executable, "-c", code]
    environment = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=900, env=environment, check=False)


@pytest.mark.slow  # the README's commands from a fresh checkout: make test runs it, -m "not slow" leaves it out
def test_runnable_blocks_run_in_order(checkout: Path) -> None:
    for number, block in enumerate(runnable()):
        result = run_block(block.kind, block.code, checkout)
        assert result.returncode == 0, (
            f"{block.page}: runnable block {number} ({block.kind}) failed:\n{block.code}\n"
            f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
        )
