"""Hugging Face's ``datasets`` as the reference of ``labels: metadata``: ``load_dataset("imagefolder",
data_dir=...)`` offline, with a cache of the test's own, in the reference venv's Python (``.venv/hf``,
requirements-hf.txt; tests/support/hf_imagefolder.py), each split's rows by image path."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from . import REPO

#: The reference venv ``make test`` installs (requirements-hf.txt), apart from the project's.
HF_PYTHON = REPO / ".venv" / "hf" / "bin" / "python"

#: A split's rows as datasets gives them: each image's path (relative to the split's tree) -> its other columns.
Rows = dict[str, dict[str, Any]]
#: Each split's rows in datasets' order, each with its image's path.
Loaded = dict[str, list[tuple[str, dict[str, Any]]]]


def imagefolder_loader(home: Path) -> Callable[[Path], Loaded]:
    """The reference, its cache under ``home``; the test skips, saying why, without the reference venv."""
    if not HF_PYTHON.exists():
        pytest.skip(f"no reference venv at {HF_PYTHON}: make test installs it (requirements-hf.txt)")
    environment = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "HF_HOME": str(home)}

    def load(data_dir: Path) -> Loaded:
        script = REPO / "tests" / "support" / "hf_imagefolder.py"
        loaded = subprocess.run(
            [str(HF_PYTHON), "-I", str(script), str(data_dir)],
            capture_output=True,
            text=True,
            env=environment,
            check=False,
        )
        assert loaded.returncode == 0, loaded.stderr[-3000:]
        return {split: split_rows(rows, data_dir, split) for split, rows in json.loads(loaded.stdout).items()}

    return load


def split_rows(part: list[dict[str, Any]], data_dir: Path, split: str) -> list[tuple[str, dict[str, Any]]]:
    """A split's rows in order, each with its image's path: a member's name in a zip, or the path
    under the split's folder."""
    rows = []
    for row in part:
        path = row.pop("image_path")
        if path.startswith("zip://"):
            key = path.removeprefix("zip://").split("::")[0]
        else:
            split_root = data_dir / split if (data_dir / split).is_dir() else data_dir
            key = Path(path).relative_to(split_root).as_posix()
        rows.append((key, row))
    return rows


def by_path(rows: list[tuple[str, dict[str, Any]]]) -> Rows:
    """The rows by image path; each image once."""
    paths = [path for path, _ in rows]
    assert len(set(paths)) == len(paths), paths
    return dict(rows)
