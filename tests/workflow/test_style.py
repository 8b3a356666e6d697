"""The workflow passes snakemake --lint (tests/unit/test_style.py: ruff and snakefmt)."""

from __future__ import annotations

from pathlib import Path

from support import BIN
from support.commands import run_check
from support.workflow import write_config


def test_snakemake_lint(image_tree: Path, tmp_path: Path) -> None:
    # The workflow checks its sources while it is parsed, so lint against a tree that exists on a
    # fresh clone (config/demo.yaml's data/demo is only made by `make demo`).
    config = write_config(tmp_path, {"train": {"source": str(image_tree)}, "val": {"source": str(image_tree)}})
    output = run_check([str(BIN / "snakemake"), "--lint", "--configfile", str(config)])
    assert "Congratulations" in output, output[-4000:]
