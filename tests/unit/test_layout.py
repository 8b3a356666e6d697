"""The tree as a newcomer and every tool read it: no file git tracks is a link, and the package finds
the workflow's one copy (the checkout's top folders in a clone, its own ``workflow/`` in a wheel:
tests/workflow/test_package.py installs one)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from imagefolder_lmdb.convert import SNAKEFILE, WORKFLOW
from imagefolder_lmdb.run.workflow_folder import workflow_folder
from support import REPO

#: git's mode for a symbolic link (``git ls-files -s``).
LINK_MODE = "120000"


def test_no_tracked_file_is_a_link() -> None:
    staged = subprocess.run(["git", "ls-files", "-s"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    links = [line.split("\t")[1] for line in staged.splitlines() if line.split()[0] == LINK_MODE]
    assert links == [], f"links break on some checkouts and confuse tools that read the tree: {links}"


def test_a_checkout_runs_its_own_workflow() -> None:
    assert WORKFLOW == REPO and SNAKEFILE == REPO / "Snakefile"
    assert not (REPO / "src" / "imagefolder_lmdb" / "workflow").exists(), "no second copy in the tree"


def fake_workflow(folder: Path) -> Path:
    (folder / "rules").mkdir(parents=True)
    (folder / "Snakefile").write_text("# a workflow\n")
    (folder / "rules" / "common.smk").write_text("# its rules\n")
    return folder


def test_a_wheel_runs_the_copy_inside_the_package(tmp_path: Path) -> None:
    package = tmp_path / "checkout" / "src" / "imagefolder_lmdb"
    fake_workflow(tmp_path / "checkout")
    assert workflow_folder(package) == tmp_path / "checkout", "a checkout: the top folders"
    inside = fake_workflow(package / "workflow")
    assert workflow_folder(package) == inside, "a wheel: the package's own copy, whatever lies around it"


def test_a_package_without_its_workflow_still_imports(tmp_path: Path) -> None:
    package = tmp_path / "site-packages" / "imagefolder_lmdb"
    package.mkdir(parents=True)
    assert workflow_folder(package) == package / "workflow", "the reader needs no workflow"
