"""The workflow passes snakemake --lint (tests/unit/test_style.py: ruff and snakefmt)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from support import BIN, REPO
from support.commands import run_check
from support.workflow import write_config


def test_snakemake_lint(image_tree: Path, tmp_path: Path) -> None:
    # The workflow checks its sources while it is parsed, so lint against a tree that exists on a
    # fresh clone (config/demo.yaml's data/demo is only made by `make demo`).
    config = write_config(tmp_path, {"train": {"source": str(image_tree)}, "val": {"source": str(image_tree)}})
    output = run_check([str(BIN / "snakemake"), "--lint", "--configfile", str(config)])
    assert "Congratulations" in output, output[-4000:]


def test_lint_needs_no_data_but_a_run_does(tmp_path: Path) -> None:
    # A fresh checkout lints config/demo.yaml before `make demo` made data/demo; a run (even a dry
    # one) with a source missing still stops at the config check.
    config = write_config(tmp_path, {"train": {"source": str(tmp_path / "not-made-yet")}})
    output = run_check([str(BIN / "snakemake"), "--lint", "--configfile", str(config)])
    assert "Congratulations" in output, output[-4000:]
    dry = subprocess.run(
        [str(BIN / "snakemake"), "-n", "--configfile", str(config)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    output = dry.stdout + dry.stderr
    assert dry.returncode == 1 and "not-made-yet' does not exist" in output, output[-4000:]
