"""Shared fixtures: generated image trees and real `snakemake` runs on them.

Every test that converts data calls the real snakemake CLI (the one in this venv) on real JPEG/PNG
files generated here, with the repository's Snakefile and a config written into a temp folder.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

# Local runs never need SLURM, yet with its executor plugin installed every snakemake start runs
# `scontrol show config`: ~9 s when a slurm.conf names a controller that is down (e.g. after the
# cluster tests stopped theirs), milliseconds with an empty one. tests/cluster sets its own.
os.environ["SLURM_CONF"] = str(Path(tempfile.mkdtemp(prefix="no-slurm-")) / "slurm.conf")
Path(os.environ["SLURM_CONF"]).touch()

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
sys.path[:0] = [str(REPO / "scripts"), str(REPO / "benchmarks")]

from make_images import make_images  # noqa: E402

#: The generated test tree: 4 classes, so each of the four oddities (PNG named .JPEG, CMYK,
#: grayscale, RGBA PNG) lands in its own class, and ImageFolder order is exercised.
TREE_IMAGES = 40
TREE_CLASSES = 4


@dataclass
class Run:
    """A finished snakemake invocation."""

    returncode: int
    output: str  # stdout and stderr together, as a user sees them

    def check(self) -> Run:
        assert self.returncode == 0, f"snakemake failed:\n{self.output[-6000:]}"
        return self


def run_snakemake(workdir: Path, *args: str, timeout: int = 600) -> Run:
    """Run the real snakemake CLI on this repository's workflow, in ``workdir``."""
    command = [
        str(BIN / "snakemake"),
        "--snakefile",
        str(REPO / "Snakefile"),
        "--directory",
        str(workdir),
        *args,
    ]
    if not any(a.startswith("--cores") or a == "-n" or a.startswith("--dry") for a in args):
        command += ["--cores", "2"]
    environment = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    completed = subprocess.run(
        command, cwd=workdir, capture_output=True, text=True, timeout=timeout, env=environment, check=False
    )
    return Run(completed.returncode, completed.stdout + completed.stderr)


def write_config(workdir: Path, splits: dict[str, dict[str, Any]], **sections: Any) -> Path:
    """Write ``workdir/config.yaml``; returns its path."""
    document: dict[str, Any] = {"results": "results", "work": "work", "splits": splits, **sections}
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


@pytest.fixture(scope="session")
def image_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small ImageNet-like tree, generated once per test session (treat as read-only)."""
    root = tmp_path_factory.mktemp("tree") / "train"
    make_images(str(root), images=TREE_IMAGES, classes=TREE_CLASSES, seed=3, workers=2)
    return root


@pytest.fixture
def tree_copy(image_tree: Path, tmp_path: Path) -> Path:
    """A private copy of the tree that a test may damage."""
    copy = tmp_path / "source"
    shutil.copytree(image_tree, copy)
    return copy


@dataclass
class Converted:
    workdir: Path
    source: Path
    lmdb: Path
    run: Run

    @property
    def verify_report(self) -> Path:
        return self.lmdb.with_suffix(".verify.json")


def convert(
    workdir: Path, source: Path, split: str = "train", shards: int = 3, layout: str = "imagefolder", **sections: Any
) -> Converted:
    workdir.mkdir(parents=True, exist_ok=True)
    config = write_config(workdir, {split: {"source": str(source), "shards": shards, "layout": layout}}, **sections)
    run = run_snakemake(workdir, "--configfile", str(config))
    return Converted(workdir, source, workdir / "results" / f"{split}.lmdb", run)


@pytest.fixture(scope="session")
def converted(image_tree: Path, tmp_path_factory: pytest.TempPathFactory) -> Converted:
    """The test tree converted once with default settings (treat as read-only)."""
    result = convert(tmp_path_factory.mktemp("converted"), image_tree)
    result.run.check()
    return result


@pytest.fixture
def convert_in_tmp(tmp_path: Path) -> Callable[..., Converted]:
    def run(source: Path, **kwargs: Any) -> Converted:
        return convert(tmp_path / "run", source, **kwargs)

    return run
