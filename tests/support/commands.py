"""The repository's commands other than snakemake, run as a user would: a script of scripts/ with
the venv's python from an unrelated folder, a checker (ruff, snakefmt) in the repository."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from . import REPO


def run_script(script: str, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """A script of scripts/ (``verify.py``, ``convert_legacy.py``, ...) run with the venv's python
    from another folder, as a user would."""
    command = [sys.executable, str(REPO / "scripts" / script), *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, check=False, cwd=Path("/"))


def run_check(command: list[str]) -> str:
    """``command`` run in the repository; it must exit 0. Returns its output."""
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    return output
