"""The reader and the commands installed with pip: the wheel pip builds from a clone (as
``pip install git+<URL>`` does) holds one package, ``imagefolder_lmdb`` (src/), with the reader
scripts/dataset.py itself as ``imagefolder_lmdb.dataset``,
declares the licence and the runtime requirements, and, installed into a fresh venv and run from a
folder that knows nothing of the checkout, reads a dataset and runs ``imagefolder-lmdb``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tomllib
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from imagefolder_lmdb.dataset import LMDBDataset, checksum
from support import REPO
from support.images import jpeg_bytes, png_bytes
from support.legacy import pickled, write_legacy
from support.package import build_wheel, commit_working_tree, fresh_venv, pip_install
from support.readme import runnable_blocks
from support.workflow import Converted

PACKAGE = "imagefolder_lmdb"
COMMAND = "imagefolder-lmdb"
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
DIST_INFO = f"{PACKAGE}-{PYPROJECT['project']['version']}.dist-info"


def shipped_modules() -> list[str]:
    """The package's files as git tracks them: every file under src/imagefolder_lmdb (its modules
    and its package data, the class lists)."""
    tracked = subprocess.run(["git", "ls-files", "src"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    return [path.removeprefix("src/") for path in tracked.split()]


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The working tree as a commit of a git repository of its own (the wheel is built from a clone)."""
    return commit_working_tree(tmp_path_factory.mktemp("repository") / "imagefolder-lmdb")


@pytest.fixture(scope="module")
def wheel(repository: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(f"git+file://{repository}", tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel installed; returns its folder."""
    folder = tmp_path_factory.mktemp("venv") / "fresh"
    pip_install(fresh_venv(folder), wheel)
    return folder


def run_in(venv: Path, cwd: Path, *command: str) -> subprocess.CompletedProcess[str]:
    """A program of the venv, run from ``cwd`` with no PYTHONPATH: only what is installed is found."""
    environment = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    program = [str(venv / "bin" / command[0]), *command[1:]]
    return subprocess.run(program, cwd=cwd, env=environment, capture_output=True, text=True, timeout=300, check=False)


def test_wheel_holds_one_package_shipping_the_reader_itself(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        shipped = {name: archive.read(name) for name in names if name.startswith(f"{PACKAGE}/")}
        licence = archive.read(f"{DIST_INFO}/licenses/LICENSE")
    assert {name.split("/")[0] for name in names} == {PACKAGE, DIST_INFO}, "no top-level `dataset`"
    assert sorted(shipped) == sorted(shipped_modules())
    for name, content in shipped.items():
        assert content == (REPO / "src" / name).read_bytes(), f"{name} is the checkout's file itself"
    assert shipped[f"{PACKAGE}/dataset.py"] == (REPO / "scripts" / "dataset.py").read_bytes(), "the reader itself"
    assert licence == (REPO / "LICENSE").read_bytes()
    staged = subprocess.run(["git", "ls-files", "-s"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    modes = {line.split("\t")[1]: line.split()[0] for line in staged.splitlines()}
    files = [path for path, mode in modes.items() if Path(path).name == "dataset.py" and mode != "120000"]
    assert files == ["scripts/dataset.py"], "one copy of the reader; the package's is a link to it"
    assert (REPO / "src" / PACKAGE / "dataset.py").readlink() == Path("../../scripts/dataset.py")


def test_wheel_declares_licence_requirements_and_command(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        metadata = Parser().parsestr(archive.read(f"{DIST_INFO}/METADATA").decode())
        entry_points = archive.read(f"{DIST_INFO}/entry_points.txt").decode()
    assert metadata["License-Expression"] == "MIT" and metadata["License-File"] == "LICENSE"
    requires = {Requirement(line).name.lower(): Requirement(line) for line in metadata.get_all("Requires-Dist")}
    assert set(requires) == {"lmdb", "numpy", "pillow", "torch", "torchvision", "tqdm"}
    lines = [line.split("#")[0].strip() for line in (REPO / "requirements.txt").read_text().splitlines()]
    pins = [Requirement(line) for line in lines if line]
    for pin in (pin for pin in pins if pin.name.lower() in requires):
        (version,) = (spec.version for spec in pin.specifier)
        assert requires[pin.name.lower()].specifier.contains(version), f"{pin} outside {requires[pin.name.lower()]}"
    assert f"{COMMAND} = {PACKAGE}.cli:main" in entry_points


def test_installed_package_reads_a_dataset(venv: Path, converted: Converted, tmp_path: Path) -> None:
    probe = """if True:
        import importlib.util, json, sys, zlib
        import imagefolder_lmdb
        from imagefolder_lmdb import LMDBDataset
        ds = LMDBDataset(sys.argv[1], decode="bytes")
        print(json.dumps({
            "package": imagefolder_lmdb.__file__,
            "top_level_dataset": importlib.util.find_spec("dataset") is not None,
            "samples": ds.samples, "root": ds.root, "crc": [zlib.crc32(ds[i][0]) for i in range(len(ds))],
            "image": list(LMDBDataset(sys.argv[1])[0][0].size),
        }))
    """
    result = run_in(venv, tmp_path, "python", "-c", probe, str(converted.lmdb))
    assert result.returncode == 0, result.stderr[-3000:]
    got = json.loads(result.stdout)
    assert Path(got["package"]).is_relative_to(venv), "the installed package, not the checkout's files"
    assert not got["top_level_dataset"], "nothing installed, or on the path, as `dataset`"
    ds = LMDBDataset(converted.lmdb)
    assert [tuple(sample) for sample in got["samples"]] == ds.samples and got["root"] == ds.root
    assert got["crc"] == [checksum(ds.get_bytes(i)) for i in range(len(ds))]
    assert got["image"] == list(ds[0][0].size)


def test_readme_training_example_runs_installed(venv: Path, converted: Converted, tmp_path: Path) -> None:
    # the README's examples take the installed package when there is one; here no scripts/ exists to fall back on
    (tmp_path / "results" / "demo").mkdir(parents=True)
    shutil.copy(converted.lmdb, tmp_path / "results" / "demo" / "train.lmdb")
    examples = [code for kind, code in runnable_blocks() if kind == "python" and "from imagefolder_lmdb" in code]
    assert len(examples) == 2, "training and mid-epoch resume"
    for code in examples:
        result = run_in(venv, tmp_path, "python", "-c", code)
        assert result.returncode == 0, f"{code}\n{result.stderr[-3000:]}"
    assert "images left in this epoch" in result.stdout


def test_installed_command_verifies_and_converts(venv: Path, converted: Converted, tmp_path: Path) -> None:
    for subcommand in ("verify", "convert-legacy", "add-locations"):
        shown = run_in(venv, tmp_path, COMMAND, subcommand, "--help")
        assert shown.returncode == 0 and f"usage: {COMMAND} {subcommand}" in shown.stdout, shown.stderr
    overview = run_in(venv, tmp_path, COMMAND, "--help")
    assert overview.returncode == 0 and all(name in overview.stdout for name in ("verify", "convert-legacy"))
    unknown = run_in(venv, tmp_path, COMMAND, "convert")
    assert unknown.returncode == 2 and "invalid choice: 'convert'" in unknown.stderr

    verified = run_in(venv, tmp_path, COMMAND, "verify", str(converted.lmdb), "--full")
    assert verified.returncode == 0 and verified.stdout.startswith(f"OK {converted.lmdb}: "), verified.stderr
    legacy, output = tmp_path / "legacy.lmdb", tmp_path / "converted.lmdb"
    write_legacy(legacy, pickled([(jpeg_bytes(seed), seed % 2) for seed in range(5)] + [(png_bytes(9), 1)]))
    converted_legacy = run_in(venv, tmp_path, COMMAND, "convert-legacy", str(legacy), str(output))
    assert converted_legacy.returncode == 0 and "OK " in converted_legacy.stdout, converted_legacy.stderr
    assert "6 images, 2 classes" in converted_legacy.stdout
    checked = run_in(venv, tmp_path, COMMAND, "verify", str(output), "--full")
    assert checked.returncode == 0 and checked.stdout.startswith("OK "), checked.stdout + checked.stderr
    refused = run_in(venv, tmp_path, COMMAND, "verify", str(legacy))
    assert refused.returncode == 1 and "imagefolder-lmdb convert-legacy" in refused.stdout, "naming the fix"


def test_editable_install_reads_scripts_in_place(repository: Path, tmp_path: Path) -> None:
    python = fresh_venv(tmp_path / "editable")
    pip_install(python, repository, editable=True)
    probe = "import imagefolder_lmdb.dataset as d, imagefolder_lmdb as p; print(d.__file__, p.LMDBDataset)"
    result = run_in(tmp_path / "editable", tmp_path, "python", "-c", probe)
    assert result.returncode == 0, result.stderr[-3000:]
    assert Path(result.stdout.split()[0]).resolve() == (repository / "scripts" / "dataset.py").resolve()


def test_wheel_ships_the_class_lists(wheel: Path) -> None:
    """``classes: imagenet1k`` needs its file wherever the workflow runs; the words' licence goes with it."""
    folder = REPO / "src" / PACKAGE / "class_lists"
    with zipfile.ZipFile(wheel) as archive:
        for path in sorted(folder.iterdir()):
            assert archive.read(f"{PACKAGE}/class_lists/{path.name}") == path.read_bytes(), path.name
