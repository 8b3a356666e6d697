"""How the reader reaches a URL's opener without importing above itself (reader/url_openers.py), and
a dataset pickled by the commit before that change (e2ffe91: spawn workers, saved loader states)
still loading and reading."""

from __future__ import annotations

import io
import pickle
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from imagefolder_lmdb.reader import LMDBDataset, url_openers
from imagefolder_lmdb.remote.reading import open_remote_records
from support import REPO
from support.datasets import random_values, write_dataset

#: The commit issue 51 starts from: LMDBDataset imported remote.reading itself.
BEFORE_OPENERS = "e2ffe91"

PICKLE_THERE = (
    "import pickle, sys; from imagefolder_lmdb.reader import LMDBDataset\n"
    "ds = LMDBDataset(sys.argv[1]); ds.get_bytes(1); sys.stdout.buffer.write(pickle.dumps(ds))"
)


def package_at(commit: str, into: Path) -> Path | None:
    """The package's source folder as it was at ``commit`` (None when this clone lacks it)."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", commit, "src"], capture_output=True, check=False)
    if archive.returncode != 0:
        return None
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def test_a_dataset_pickled_before_the_openers_loads_and_reads(tmp_path: Path) -> None:
    values = random_values([300, 500, 700, 900])
    write_dataset(tmp_path / "d.lmdb", values)
    src = package_at(BEFORE_OPENERS, tmp_path / "before")
    if src is None:
        pytest.skip(f"commit {BEFORE_OPENERS} is not in this clone's history")
    pickled = subprocess.run(
        [sys.executable, "-c", PICKLE_THERE, str(tmp_path / "d.lmdb")],
        capture_output=True,
        env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert pickled.returncode == 0, pickled.stderr.decode()[-2000:]
    assert b"imagefolder_lmdb.reader.dataset" in pickled.stdout, "pickled where the class lived then"
    dataset = pickle.loads(pickled.stdout)
    assert isinstance(dataset, LMDBDataset)
    assert [dataset.get_bytes(i) for i in range(len(values))] == values


def test_the_remote_extra_is_the_installed_url_opener(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(url_openers, "_registered", [])
    assert url_openers.url_opener("s3://bucket/d.lmdb") is open_remote_records


def test_no_opener_is_named_with_its_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(url_openers, "_registered", [])
    monkeypatch.setattr(url_openers, "entry_points", lambda group: [])
    with pytest.raises(ImportError, match=r"cannot read s3://b/d.lmdb: .*pip install 'imagefolder-lmdb\[remote\]'"):
        LMDBDataset("s3://b/d.lmdb")
