"""A converter without torch (issue 53): the wheel installed with ``[convert]`` into a venv of its
own, from a wheelhouse made first (``pip wheel``; support/package.py installed_venv), so that the
install itself reaches no registry (``--no-index --find-links``). That venv holds no torch,
torchvision or nvidia-* package, converts a tree with the command line and with ``convert()``,
verifies and infos, and its records are those of the same conversion made with torch installed.
Its size is BENCHMARKS.md's (section 17)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from support.datasets import every_key_and_value
from support.package import installed_venv, pip
from support.workflow import Converted

pytestmark = pytest.mark.slow  # a venv of its own, its packages downloaded first: a minute or more

COMMAND = "imagefolder-lmdb"


@pytest.fixture(scope="module")
def convert_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv holding the wheel with ``[convert]`` and nothing else, installed offline (the one
    tests/workflow/test_installs.py runs the README's line in)."""
    return installed_venv(tmp_path_factory, "convert")


def run_in(venv: Path, cwd: Path, *command: str) -> subprocess.CompletedProcess[str]:
    """A program of the venv, with no PYTHONPATH and the venv's bin first on PATH (Snakemake's jobs
    run its python)."""
    environment = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    environment["PATH"] = f"{venv / 'bin'}{os.pathsep}{environment['PATH']}"
    program = [str(venv / "bin" / command[0]), *command[1:]]
    return subprocess.run(program, cwd=cwd, env=environment, capture_output=True, text=True, timeout=600, check=False)


def records_and_meta(path: Path) -> tuple[dict[bytes, bytes], dict]:
    items = every_key_and_value(path)
    document = json.loads(items.pop(b"meta/json"))
    document.pop("created")
    return items, document


def test_convert_verify_and_info_without_torch(convert_venv: Path, converted: Converted, tmp_path: Path) -> None:
    listed = pip("--python", str(convert_venv / "bin" / "python"), "list", "--format", "json").stdout
    names = {package["name"].lower() for package in json.loads(listed)}
    assert "imagefolder-lmdb" in names and "snakemake" in names
    assert not {"torch", "torchvision"} & names and not [name for name in names if name.startswith("nvidia-")]

    source = str(converted.source)
    by_command = run_in(convert_venv, tmp_path, COMMAND, "convert", source, "cli", "--split", "train", "--shards", "3")
    assert by_command.returncode == 0, by_command.stdout[-3000:] + by_command.stderr[-3000:]
    call = f"from imagefolder_lmdb import convert; convert({source!r}, 'python', split='train', shards=3)"
    by_call = run_in(convert_venv, tmp_path, "python", "-c", call)
    assert by_call.returncode == 0, by_call.stdout[-3000:] + by_call.stderr[-3000:]

    with_torch = records_and_meta(converted.lmdb)
    for made in (tmp_path / "cli" / "train.lmdb", tmp_path / "python" / "train.lmdb"):
        verified = run_in(convert_venv, tmp_path, COMMAND, "verify", str(made), "--full")
        assert verified.returncode == 0 and verified.stdout.startswith(f"OK {made}"), verified.stderr[-2000:]
        info = run_in(convert_venv, tmp_path, COMMAND, "info", str(made))
        assert info.returncode == 0 and "train" in info.stdout + info.stderr, info.stderr[-2000:]
        assert records_and_meta(made) == with_torch, f"{made}: not the records made with torch"
    reader = "from imagefolder_lmdb import LMDBReader; import sys; print(len(LMDBReader(sys.argv[1])[0][0].size))"
    read = run_in(convert_venv, tmp_path, "python", "-c", reader, str(tmp_path / "cli" / "train.lmdb"))
    assert read.returncode == 0 and read.stdout.strip() == "2", read.stderr[-2000:]
    size = subprocess.run(["du", "-sh", str(convert_venv)], capture_output=True, text=True, check=True).stdout
    print(f"[convert] venv without torch: {size.split()[0]}")  # BENCHMARKS.md section 17
