"""A command whose reader closed its output (``imagefolder-lmdb info x.lmdb | head -1``) ends quietly
with the shell's SIGPIPE code, never a BrokenPipeError traceback."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from support import BIN
from support.datasets import write_dataset
from support.images import png_bytes


@pytest.fixture
def lmdb_file(tmp_path: Path) -> Path:
    path = tmp_path / "small.lmdb"
    write_dataset(path, [png_bytes(seed) for seed in range(2)])
    return path


@pytest.mark.parametrize("command", ["info", "verify"])
def test_a_closed_output_ends_the_command_without_a_traceback(lmdb_file: Path, command: str) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first line is written
    try:
        done = subprocess.run(
            [str(BIN / "imagefolder-lmdb"), command, str(lmdb_file)],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
            timeout=120,
        )
    finally:
        os.close(write_end)
    assert done.returncode == 141 and "Traceback" not in done.stderr, done.stderr[-2000:]
