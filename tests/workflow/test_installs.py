"""Every install the README documents runs every command its sentence promises (issue 57): each line
without torch installed into a venv of its own, which sees nothing else (no system site-packages, no
.pth to the project's venv as fresh_venv's has: that hid an import of Snakemake from ``pip install .``
for as long as it was there), offline from a wheelhouse made beforehand (support/package.py). A
package of an extra that a line does not install is named in one line with the install that brings
it. The lines with torch are read by tests/unit/test_readme.py; one network test here resolves the
training line against the package index, as pip on a training machine would."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from support.images import jpeg_bytes, png_bytes
from support.legacy import pickled, write_legacy
from support.package import installed_venv, pip, project_wheel, run_installed
from support.readme import install_lines
from support.seaweed import Seaweed

COMMAND = "imagefolder-lmdb"
SUBCOMMANDS = ("convert", "verify", "convert-legacy", "add-locations", "info", "init-config", "snakefile")
#: The installs without torch that the README shows (its extras; "" is ``pip install .``), each run here.
TESTED = {frozenset(), frozenset({"convert"}), frozenset({"slurm"}), frozenset({"convert", "remote"})}
#: The extras that bring torch (pyproject.toml): their lines are read, not run (tests/unit/test_readme.py).
WITH_TORCH = {"torch", "tensor", "all"}


def test_the_readme_shows_no_install_without_torch_that_is_not_run_here() -> None:
    shown = {line.project for line in install_lines() if line.project is not None and not line.project & WITH_TORCH}
    assert shown == TESTED, "a documented install line without a test here (or a test of a line no longer shown)"


def one_line(done: subprocess.CompletedProcess[str], install: str) -> str:
    """The single line a refused command printed, which must name ``install``; no traceback."""
    lines = (done.stdout + done.stderr).strip().splitlines()
    assert done.returncode != 0 and len(lines) == 1, done.stdout + done.stderr
    assert install in lines[0], lines[0]
    return lines[0]


def image_tree(root: Path) -> Path:
    """Two classes of two images each, as ImageFolder reads them."""
    for seed in range(4):
        folder = root / "train" / f"class{seed % 2}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{seed}.png").write_bytes(png_bytes(seed, (16, 12)))
    return root


def test_pip_install_dot_starts_every_command_and_names_the_extra_of_what_it_lacks(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """``pip install .``: LMDBReader, verify, info, convert-legacy; every command starts (--help);
    converting and a URL name their extra in one line."""
    venv = installed_venv(tmp_path_factory, "")
    absent = "import importlib.util as u; print([u.find_spec(n) is None for n in ('snakemake', 'torch', 'yaml')])"
    assert run_installed(venv, tmp_path, "python", "-c", absent).stdout.strip() == "[True, True, False]", "isolated"
    for words in ([], *([name] for name in SUBCOMMANDS)):
        shown = run_installed(venv, tmp_path, COMMAND, *words, "--help")
        assert shown.returncode == 0 and f"usage: {' '.join([COMMAND, *words])}" in shown.stdout, shown.stderr
    legacy, dataset = tmp_path / "legacy.lmdb", tmp_path / "small.lmdb"
    write_legacy(legacy, pickled([(jpeg_bytes(seed), seed % 2) for seed in range(3)]))
    from_legacy = run_installed(venv, tmp_path, COMMAND, "convert-legacy", str(legacy), str(dataset))
    assert from_legacy.returncode == 0 and "3 images, 2 classes" in from_legacy.stdout, from_legacy.stderr
    verified = run_installed(venv, tmp_path, COMMAND, "verify", str(dataset), "--full")
    assert verified.returncode == 0 and verified.stdout.startswith(f"OK {dataset}: 3 images"), verified.stderr
    info = run_installed(venv, tmp_path, COMMAND, "info", str(dataset))
    assert info.returncode == 0 and info.stdout.startswith(f"{dataset}: 3 images"), info.stderr
    read = "import sys; from imagefolder_lmdb import LMDBReader; print(LMDBReader(sys.argv[1])[1][0].size)"
    assert run_installed(venv, tmp_path, "python", "-c", read, str(dataset)).stdout.strip() == "(120, 90)"

    refused = run_installed(venv, tmp_path, COMMAND, "convert", str(image_tree(tmp_path / "data")), "out")
    one_line(refused, "pip install 'imagefolder-lmdb[convert]'")
    for words in (["info", "s3://bucket/datasets"], ["verify", "https://127.0.0.1:9/train.lmdb"]):
        one_line(run_installed(venv, tmp_path, COMMAND, *words), "pip install 'imagefolder-lmdb[remote]'")


def test_the_convert_extra_converts_verifies_and_infos_without_torch(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """``pip install '.[convert]'``: convert, verify, info; a Parquet label file and --profile slurm
    name the extra they need in one line."""
    venv = installed_venv(tmp_path_factory, "convert")
    absent = "import importlib.util as u; print([u.find_spec(n) is None for n in ('torch', 'pyarrow')])"
    assert run_installed(venv, tmp_path, "python", "-c", absent).stdout.strip() == "[True, True]"
    assert run_installed(venv, tmp_path, COMMAND, "convert", "--help").returncode == 0
    data = image_tree(tmp_path / "data")
    converted = run_installed(venv, tmp_path, COMMAND, "convert", str(data), "out", "--shards", "1", "--cores", "1")
    assert converted.returncode == 0, converted.stdout[-3000:] + converted.stderr[-3000:]
    made = tmp_path / "out" / "train.lmdb"
    verified = run_installed(venv, tmp_path, COMMAND, "verify", str(made), "--full")
    assert verified.returncode == 0 and verified.stdout.startswith(f"OK {made}: 4 images, 2 classes"), verified.stderr
    info = run_installed(venv, tmp_path, COMMAND, "info", "out")
    assert info.returncode == 0 and "class0" in info.stdout, info.stderr

    (tmp_path / "labels.parquet").write_bytes(b"PAR1")
    labelled = run_installed(venv, tmp_path, COMMAND, "convert", str(data), "other", "--labels", "labels.parquet")
    assert "a Parquet label file needs pyarrow" in one_line(labelled, "pip install 'imagefolder-lmdb[parquet]'")
    on_slurm = run_installed(venv, tmp_path, COMMAND, "convert", str(data), "other", "--profile", "slurm")
    one_line(on_slurm, "pip install 'imagefolder-lmdb[slurm]'")
    assert not (tmp_path / "other").exists(), "refused before anything was written"


def test_the_slurm_extra_plans_with_the_packaged_slurm_profile(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """``pip install '.[slurm]'``: ``convert --profile slurm`` (a dry run: no SLURM needed to plan)."""
    venv = installed_venv(tmp_path_factory, "slurm")
    data = image_tree(tmp_path / "data")
    command = ["convert", str(data), "out", "--shards", "1", "--profile", "slurm", "--", "--dry-run"]
    planned = run_installed(venv, tmp_path, COMMAND, *command)
    assert planned.returncode == 0, planned.stdout[-3000:] + planned.stderr[-3000:]
    assert "encode_shard" in planned.stdout + planned.stderr and not (tmp_path / "out" / "train.lmdb").exists()


def test_the_convert_and_remote_extras_publish_and_read_a_url(
    tmp_path_factory: pytest.TempPathFactory, seaweed: Seaweed, tmp_path: Path
) -> None:
    """``pip install '.[convert,remote]'``: ``convert SOURCE s3://bucket/prefix``, then verify and info
    of the object, against the session's SeaweedFS."""
    venv = installed_venv(tmp_path_factory, "convert,remote")
    bucket = f"installs-{os.getpid()}"
    seaweed.put(bucket, "probe", b"")  # the bucket, which publishing does not make
    data, url = image_tree(tmp_path / "data"), f"s3://{bucket}/data"
    published = run_installed(venv, tmp_path, COMMAND, "convert", str(data), url, "--shards", "1", env=seaweed.env())
    assert published.returncode == 0, published.stdout[-3000:] + published.stderr[-3000:]
    verified = run_installed(venv, tmp_path, COMMAND, "verify", f"{url}/train.lmdb", env=seaweed.env())
    assert verified.returncode == 0 and verified.stdout.startswith(f"OK {url}/train.lmdb"), verified.stderr
    info = run_installed(venv, tmp_path, COMMAND, "info", url, env=seaweed.env())
    assert info.returncode == 0 and "4 images, 2 classes" in info.stdout, info.stderr


@pytest.mark.network
def test_the_training_line_resolves_to_matching_torch_and_torchvision(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """``pip install '.[torch]'`` as pip resolves it from the package index (no download of torch's
    wheels: ``--dry-run``): torch and a torchvision built for it (each torchvision requires its torch)."""
    report = tmp_path / "report.json"
    wheel = project_wheel(tmp_path_factory)
    pip("install", "--dry-run", "--ignore-installed", "--quiet", "--report", str(report), f"{wheel}[torch]")
    chosen = {item["metadata"]["name"].lower(): item["metadata"] for item in json.loads(report.read_text())["install"]}
    assert {"torch", "torchvision"} <= set(chosen), sorted(chosen)
    needs = [Requirement(line) for line in chosen["torchvision"].get("requires_dist", [])]
    torch = [need for need in needs if need.name == "torch" and need.marker is None]
    assert torch and all(need.specifier.contains(chosen["torch"]["version"]) for need in torch), torch
