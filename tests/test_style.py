"""The code stays formatted and lint-clean: ruff, snakefmt and snakemake --lint."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import BIN, REPO, write_config

CHECKS = {
    "ruff check": [str(BIN / "ruff"), "check", "scripts", "tests", "benchmarks"],
    "ruff format": [str(BIN / "ruff"), "format", "--check", "scripts", "tests", "benchmarks"],
    "snakefmt": [str(BIN / "snakefmt"), "--check", "Snakefile", "rules"],
}


def run_check(command: list[str]) -> str:
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    return output


@pytest.mark.parametrize("name", CHECKS)
def test_clean(name: str) -> None:
    run_check(CHECKS[name])


def test_snakemake_lint(image_tree: Path, tmp_path: Path) -> None:
    # The workflow checks its sources while it is parsed, so lint against a tree that exists on a
    # fresh clone (config/demo.yaml's data/demo is only made by `make demo`).
    config = write_config(tmp_path, {"train": {"source": str(image_tree)}, "val": {"source": str(image_tree)}})
    output = run_check([str(BIN / "snakemake"), "--lint", "--configfile", str(config)])
    assert "Congratulations" in output, output[-4000:]
