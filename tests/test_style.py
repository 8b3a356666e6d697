"""The code stays formatted and lint-clean: ruff, snakefmt and snakemake --lint."""

from __future__ import annotations

import subprocess

import pytest

from conftest import BIN, REPO

CHECKS = {
    "ruff check": [str(BIN / "ruff"), "check", "scripts", "tests", "benchmarks"],
    "ruff format": [str(BIN / "ruff"), "format", "--check", "scripts", "tests", "benchmarks"],
    "snakefmt": [str(BIN / "snakefmt"), "--check", "Snakefile", "rules"],
    "snakemake --lint": [str(BIN / "snakemake"), "--lint", "--configfile", "config/demo.yaml"],
}


@pytest.mark.parametrize("name", CHECKS)
def test_clean(name: str) -> None:
    result = subprocess.run(CHECKS[name], cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    if name == "snakemake --lint":
        assert "Congratulations" in output, output[-4000:]
