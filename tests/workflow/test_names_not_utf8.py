"""Names that are not valid UTF-8 (issue 31): a latin-1 ``caf\\xe9.jpg`` in a folder, a tar member or
a zip member made on Unix is kept as the file system gives it (and ``unzip`` writes it), end to end;
``samples`` and pixels equal ImageFolder's; the file is format version 3, which a version-2 reader
refuses by its version. A WebDataset key the same; a damaged image under such a name is named with
its bytes escaped."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from torchvision.datasets import ImageFolder

from imagefolder_lmdb.reader import LMDBDataset, close_all_envs
from support.archives import zip_with_raw_names
from support.images import jpeg_bytes
from support.wds_shards import WdsSample, make_shards, make_wds_devkit
from support.workflow import Run, convert, run_snakemake, workflow_at, write_config

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


@pytest.mark.parametrize("kind", ["folder", "tar", "zip"])
def test_names_not_utf8_kept_as_the_file_system_gives_them(tmp_path: Path, kind: str) -> None:
    tree = latin1_tree(tmp_path / "tree")
    source = tree
    if kind == "tar":
        source = tmp_path / "train.tar"
        subprocess.run(["tar", "--format=gnu", "-cf", str(source), "-C", str(tree), "."], check=True)
    if kind == "zip":  # read as zipfile's cp437, the class names would be "bΘe", not ImageFolder's
        source = zip_with_raw_names(tree, tmp_path / "train.zip")
    result = convert(tmp_path / "run", source, shards=2)
    result.run.check()
    ds = same_as_imagefolder(result.lmdb, tree)
    assert "b\udce9e/caf\udce9.jpg" in [p for p, _ in ds.samples]
    assert ds.meta_document["version"] == 3
    if kind != "folder":
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


def test_webdataset_key_not_utf8_is_kept_and_a_damaged_one_named_escaped(tmp_path: Path) -> None:
    """A shard member ``caf\\xe9_1.jpg``: its sample keeps the name; when its image is damaged the
    message shows the name with its byte escaped (it was a UnicodeEncodeError with no message), and
    ``on_error: skip`` leaves it out with the others kept."""
    classes, names = ["n01440764", "n01443537"], ["a0", "caf\udce9_1", "b2", "d3"]
    clean = [WdsSample(name, "jpg", jpeg_bytes(i), i % 2) for i, name in enumerate(names)]
    damaged = [WdsSample(s.key, "jpg", b"not a jpeg" if s.key == names[1] else s.image, s.label) for s in clean]
    devkit = make_wds_devkit(tmp_path / "devkit.tar.gz", classes, tmp_path / "scratch")

    def converted(name: str, samples: list[WdsSample], **sections: Any) -> tuple[Path, Run, Path]:
        shards = make_shards(tmp_path / f"{name}-shards", classes, samples, 2)
        split = {"source": str(shards.folder / "*.tar"), "layout": "webdataset", "devkit": str(devkit), "shards": 1}
        (tmp_path / name).mkdir()
        config = write_config(tmp_path / name, {"train": split}, **sections)
        run = run_snakemake(tmp_path / name, "--configfile", str(config))
        return tmp_path / name / "results" / "train.lmdb", run, shards.files[0]

    lmdb, run, _ = converted("clean", clean)
    run.check()
    assert "n01443537/caf\udce9_1.jpg" in [p for p, _ in LMDBDataset(lmdb).samples]
    _, run, shard = converted("damaged", damaged)
    assert run.returncode == 1 and "UnicodeEncodeError" not in run.output
    assert f"{shard}: sample caf\\xe9_1 (member caf\\xe9_1.jpg): not an image" in run.output
    lmdb, run, _ = converted("skipped", damaged, encode={"on_error": "skip"})
    run.check()
    assert len(LMDBDataset(lmdb)) == len(names) - 1
