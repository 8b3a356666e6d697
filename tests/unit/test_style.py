"""The code stays formatted and lint-clean: ruff and snakefmt (tests/workflow/test_style.py:
snakemake --lint)."""

from __future__ import annotations

import pytest

from support import BIN
from support.commands import run_check

CHECKS = {
    "ruff check": [str(BIN / "ruff"), "check", "scripts", "src", "tests", "benchmarks"],
    "ruff format": [str(BIN / "ruff"), "format", "--check", "scripts", "src", "tests", "benchmarks"],
    "snakefmt": [str(BIN / "snakefmt"), "--check", "Snakefile", "rules"],
}


@pytest.mark.parametrize("name", CHECKS)
def test_clean(name: str) -> None:
    run_check(CHECKS[name])
