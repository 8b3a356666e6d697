"""SOURCE and OUTDIR never mix (issue 43): OUTDIR or --work inside SOURCE is refused with the fix;
a SOURCE holding this tool's outputs, or an OUTDIR holding folders of images, is refused as a likely
swap; each before anything is written (the images stay exactly as they were); a URL OUTDIR passes;
a mistyped SOURCE gets the close name. The real command, on generated JPEGs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from imagefolder_lmdb.run.lock import LOCK_NAME
from imagefolder_lmdb.run.places import mixed_places
from support.images import make_images
from support.workflow import snakemake_environment

COMMAND = [sys.executable, "-m", "imagefolder_lmdb.cli", "convert"]
PROG = "imagefolder-lmdb convert"
SWAP = "did you swap SOURCE and OUTDIR? The images come first: imagefolder-lmdb convert SOURCE OUTDIR"


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """data/train and data/val, two classes each."""
    for split, first in (("train", 0), ("val", 100)):
        make_images(str(tmp_path / "data" / split), images=4, classes=2, seed=4, first_index=first, workers=1)
    return tmp_path / "data"


def tree(folder: Path) -> list[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*"))


def refused(cwd: Path, *args: str) -> str:
    """The command's one line on stderr; it exits 1 and writes nothing into SOURCE."""
    result = subprocess.run(
        [*COMMAND, *args, "--cores", "1"], cwd=cwd, env=snakemake_environment(), capture_output=True, text=True
    )
    assert result.returncode == 1 and result.stdout == "", result.stdout + result.stderr
    return result.stderr


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["data", "data/out"],
            "OUTDIR data/out is inside SOURCE data: what a run writes there would be read as images by the next "
            "one. Name an OUTDIR outside data, e.g. data-lmdb",
        ),
        (
            ["data", "out", "--work", "data/train/work"],
            "--work data/train/work is inside SOURCE data: what a run writes there would be read as images by "
            "the next one. Name a work folder outside data (the default is OUTDIR/work)",
        ),
    ],
)
def test_an_outdir_or_work_folder_inside_source_is_refused_with_the_fix(
    args: list[str], line: str, data: Path, tmp_path: Path
) -> None:
    before = tree(data)
    for _ in range(2):  # the same command, the same answer
        assert refused(tmp_path, *args) == f"{PROG}: {line}\n"
    assert tree(data) == before and not (tmp_path / "out").exists()


def test_a_source_holding_datasets_is_taken_for_a_swap(data: Path, tmp_path: Path) -> None:
    """``convert out data`` after ``convert data out``: out/ holds the datasets and the lock."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "train.lmdb").write_bytes(b"")
    before = tree(data)
    line = refused(tmp_path, "out", "data")
    assert line == f"{PROG}: SOURCE out holds train.lmdb, which this tool writes into an OUTDIR: {SWAP}\n"
    (out / LOCK_NAME).write_text("")
    assert f"SOURCE out holds {LOCK_NAME}" in refused(tmp_path, "out", "data")
    assert tree(data) == before  # no data/work, nothing


def test_an_outdir_holding_folders_of_images_is_taken_for_a_swap(data: Path, tmp_path: Path) -> None:
    make_images(str(tmp_path / "other"), images=2, classes=1, seed=5, workers=1)
    before = tree(data)
    line = refused(tmp_path, "other", "data")
    fix = "Or name a new or empty folder as OUTDIR"
    assert line == f"{PROG}: OUTDIR data already holds a folder of images (train/): {SWAP}. {fix}\n"
    assert tree(data) == before


def test_a_mistyped_source_gets_the_close_name(data: Path, tmp_path: Path) -> None:
    line = refused(tmp_path, "dta", "out")
    assert (
        line
        == f"{PROG}: SOURCE 'dta' does not exist (relative paths are taken from {tmp_path}). Did you mean 'data'?\n"
    )


def test_a_url_outdir_passes_the_checks(data: Path) -> None:
    assert mixed_places(str(data), "s3://bucket/data", None) is None
    assert mixed_places(str(data), "s3://bucket/data", str(data / "work")) is not None  # the work folder is local
