"""Archive members and source files as users meet them (issue 31): a sparse tar read in place, damaged
or unreadable zip members, a FIFO or a dangling link in a class folder. Each test starts from the
fault: the run ends with ImageFolder's pixels, or with a message naming the archive or file and the fix,
never a wrong image or a hang."""

from __future__ import annotations

import os
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from torchvision.datasets import ImageFolder

from imagefolder_lmdb.reader import LMDBDataset
from support.archives import spoil_zip_member
from support.images import jpeg_bytes, png_bytes
from support.parquet import Row, write_hf_parquet
from support.workflow import Converted, convert

pytestmark = pytest.mark.usefixtures("fresh_envs")  # the tests open their files afresh


def same_pixels(result: Converted, tree: Path) -> None:
    """The converted split holds ImageFolder's samples and pixels of ``tree``."""
    folder, ds = ImageFolder(str(tree)), LMDBDataset(result.lmdb)
    assert ds.classes == folder.classes and ds.targets == folder.targets
    assert [p if ds.root is None else os.path.relpath(p, ds.root) for p, _ in ds.samples] == [
        os.path.relpath(p, tree) for p, _ in folder.samples
    ]
    for index in range(len(folder)):
        expected = np.asarray(folder[index][0])
        assert np.array_equal(np.asarray(ds[index][0]), expected), folder.samples[index][0]


def mostly_empty_tree(root: Path) -> Path:
    """Two classes; one image is a large BMP of zeros with a few pixels set, stored with holes."""
    for name in ("ant", "bee"):
        (root / name).mkdir(parents=True)
        (root / name / "small.png").write_bytes(png_bytes(seed=len(name)))
    pixels = np.zeros((600, 600, 3), np.uint8)
    pixels[:4, :, 1] = 200  # BMP rows run bottom-up: these bytes lie at the file's end, after the holes
    pixels[-4:, :20, 0] = 90
    Image.fromarray(pixels).save(root / "bee" / "empty.bmp")
    holes = root / "bee" / "holes.bmp"
    subprocess.run(["cp", "--sparse=always", str(root / "bee" / "empty.bmp"), str(holes)], check=True)
    os.replace(holes, root / "bee" / "empty.bmp")
    return root


@pytest.mark.parametrize("tar_format", ["gnu", "pax"])
def test_sparse_tar_read_in_place_gives_the_unpacked_pixels(tmp_path: Path, convert_in_tmp, tar_format: str) -> None:
    tree = mostly_empty_tree(tmp_path / "tree")
    archive = tmp_path / "train.tar"
    subprocess.run(["tar", "--sparse", f"--format={tar_format}", "-cf", str(archive), "-C", str(tree), "."], check=True)
    assert archive.stat().st_size < (tree / "bee" / "empty.bmp").stat().st_size  # the member is stored sparse
    unpacked = tmp_path / "unpacked"
    unpacked.mkdir()
    subprocess.run(["tar", "-xf", str(archive), "-C", str(unpacked)], check=True)
    result = convert_in_tmp(archive, shards=2, encode={"reencode": "never"})  # pixels compared exactly
    result.run.check()
    same_pixels(result, unpacked)


def deflated_zip(tree: Path, archive: Path) -> list[str]:
    """``tree`` as a deflate zip (what `zip -r` writes); returns its file members in order."""
    files = sorted(p for p in tree.rglob("*") if p.is_file())
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for file in files:
            zf.write(file, file.relative_to(tree).as_posix())
    return [file.relative_to(tree).as_posix() for file in files]


def test_damaged_zip_members_are_bad_images_of_that_archive(
    image_tree: Path, converted: Converted, tmp_path: Path
) -> None:
    archive = tmp_path / "train.zip"
    members = deflated_zip(image_tree, archive)
    spoil_zip_member(archive, members[3], "data")
    spoil_zip_member(archive, members[-2], "crc")
    # one shard: Snakemake stops at the first failed job (no --keep-going), so with more shards which
    # damaged member is reached first depends on the order the jobs start
    failed = convert(tmp_path / "fail", archive, shards=1)
    assert failed.run.returncode == 1
    for member in (members[3], members[-2]):
        assert f"{archive} member {member}: a damaged zip member" in failed.run.output
    assert "Traceback" not in failed.run.output.split("Error in rule")[0]
    skipped = convert(tmp_path / "skip", archive, encode={"on_error": "skip"})
    skipped.run.check()
    ds, folder = LMDBDataset(skipped.lmdb), ImageFolder(str(image_tree))
    kept = [i for i in range(len(folder)) if i not in (3, len(folder) - 2)]
    assert [p for p, _ in ds.samples] == [os.path.relpath(folder.samples[i][0], image_tree) for i in kept]
    clean = LMDBDataset(converted.lmdb)
    assert all(ds.get_bytes(n) == clean.get_bytes(i) for n, i in enumerate(kept))


@pytest.mark.parametrize(
    ("how", "words"), [("deflate64", "is compressed with method 9 (deflate64)"), ("encrypted", "is encrypted")]
)
def test_zip_member_python_cannot_read_stops_indexing_with_the_fix(
    image_tree: Path, tmp_path: Path, how: str, words: str
) -> None:
    archive = tmp_path / "train.zip"
    members = deflated_zip(image_tree, archive)
    spoil_zip_member(archive, members[5], how)
    result = convert(tmp_path / "run", archive)
    assert result.run.returncode == 1
    assert f"{archive}: member {members[5]!r} {words}" in result.run.output
    assert "`7z x`" in result.run.output and "Error in rule extract" in result.run.output  # its first step


@pytest.mark.parametrize("kind", ["fifo", "dangling link"])
def test_fifo_or_dangling_link_in_a_class_folder_is_named_when_listed(
    tree_copy: Path, convert_in_tmp, kind: str
) -> None:
    cls = sorted(p for p in tree_copy.iterdir())[1]
    odd = cls / "x.jpg"
    if kind == "fifo":
        os.mkfifo(odd)  # before: encode_shard blocked reading it, forever
    else:
        odd.symlink_to(tree_copy / "gone.jpg")  # before: "run with --forcerun extract", which failed the same way
    result = convert_in_tmp(tree_copy)  # run_snakemake's timeout bounds a hang
    assert result.run.returncode == 1
    words = "is a FIFO (named pipe), not a regular file" if kind == "fifo" else "is a dangling link (to"
    assert f"{odd} {words}" in result.run.output and "Error in rule count_check" in result.run.output
    assert "--forcerun" not in result.run.output
    odd.unlink()
    result.run = convert_in_tmp(tree_copy).run  # the same command, once the file is gone
    result.run.check()
    assert len(LMDBDataset(result.lmdb)) == len(ImageFolder(str(tree_copy)))


def test_parquet_path_holding_a_nul_byte_stops_its_first_step(tmp_path: Path) -> None:
    rows = [Row(jpeg_bytes(seed=i), f"img{i}.jpg", i % 2) for i in range(6)]
    rows[4] = Row(rows[4].image, "img\x004.jpg", 0)  # before: failed at write_meta, the last step, naming nothing
    source = write_hf_parquet(tmp_path / "train.parquet", rows, ["cat", "dog"], row_group_size=3)
    result = convert(tmp_path / "run", source, layout="parquet")
    assert result.run.returncode == 1
    assert f"{source}, row 4 (counted from 0): its image path 'img\\x004.jpg' holds a NUL byte" in result.run.output
    assert "Error in rule extract" in result.run.output and "rule write_meta" not in result.run.output
