"""The reader of an earlier commit, opening a file written today: how a format version is refused by
the readers that came before it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from . import REPO


def open_with_reader_at(commit: str, path: Path, into: Path) -> subprocess.CompletedProcess[str]:
    """``LMDBReader(path)`` run by the package as it was at ``commit`` (its src unpacked into ``into``)."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", commit, "src"], capture_output=True, check=False)
    assert archive.returncode == 0, archive.stderr
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    code = f"from imagefolder_lmdb.reader import LMDBReader\nLMDBReader({str(path)!r})"
    return subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(into / "src")},
        capture_output=True,
        text=True,
    )
