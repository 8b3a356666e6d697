"""Names that are not valid UTF-8 (issue 31): a latin-1 ``caf\\xe9.jpg`` in a folder or a tar member is
kept as the file system gives it, end to end; ``samples`` and pixels equal ImageFolder's; the file is
format version 3, which a version-2 reader refuses by its version."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from torchvision.datasets import ImageFolder

from imagefolder_lmdb.reader import LMDBDataset, close_all_envs
from support.images import jpeg_bytes
from support.workflow import convert, workflow_at

pytestmark = pytest.mark.usefixtures("fresh_envs")

#: main just before format version 3 (its reader knows versions 1 and 2).
BEFORE_VERSION_3 = "107bfb3b8f41781e4efa4ca380ae1fe692c7b582"


def latin1_tree(root: Path) -> Path:
    """Two classes, one a latin-1 folder name, with a latin-1 file name in each."""
    for number, folder in enumerate((b"ant", b"b\xe9e")):
        path = os.path.join(os.fsencode(root), folder)
        os.makedirs(path)
        for name in (b"0.jpg", b"caf\xe9.jpg", b"z.jpg"):
            with open(os.path.join(path, name), "wb") as stream:
                stream.write(jpeg_bytes(seed=number * 10 + len(name) + name[0]))
    return root


def same_as_imagefolder(lmdb: Path, tree: Path) -> LMDBDataset:
    folder, ds = ImageFolder(str(tree)), LMDBDataset(lmdb)
    assert ds.classes == folder.classes and ds.targets == folder.targets
    assert [p for p, _ in ds.samples] == [os.path.relpath(p, tree) for p, _ in folder.samples]
    for index in range(len(folder)):
        assert np.array_equal(np.asarray(ds[index][0]), np.asarray(folder[index][0])), folder.samples[index][0]
    return ds


@pytest.mark.parametrize("kind", ["folder", "tar"])
def test_names_not_utf8_kept_as_the_file_system_gives_them(tmp_path: Path, kind: str) -> None:
    tree = latin1_tree(tmp_path / "tree")
    source = tree
    if kind == "tar":
        source = tmp_path / "train.tar"
        subprocess.run(["tar", "--format=gnu", "-cf", str(source), "-C", str(tree), "."], check=True)
    result = convert(tmp_path / "run", source, shards=2)
    result.run.check()
    ds = same_as_imagefolder(result.lmdb, tree)
    assert "b\udce9e/caf\udce9.jpg" in [p for p, _ in ds.samples]
    assert ds.meta_document["version"] == 3
    if kind == "tar":
        return
    old = workflow_at(BEFORE_VERSION_3, tmp_path / "old")
    if old is None:
        pytest.skip(f"commit {BEFORE_VERSION_3[:10]} is not in this clone's history")
    close_all_envs()
    code = "import sys; sys.path.insert(0, sys.argv[1]);import imagefolder_lmdb.reader as r; r.LMDBDataset(sys.argv[2])"
    opened = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "old" / "src"), str(result.lmdb)], capture_output=True, text=True
    )
    assert opened.returncode == 1
    assert (
        f"{result.lmdb}: imagefolder-lmdb version 3, but this reader knows version 1 and version 2 only"
        in (opened.stderr.strip().splitlines()[-1])
    )
