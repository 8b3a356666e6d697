"""Archive sources: a tar, tar.gz or zip of an ImageFolder tree converts like the folder itself;
archives whose members would escape the extraction folder are refused, and nothing escapes."""

from __future__ import annotations

import gzip
import io
import shutil
import stat
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pytest
from torchvision.datasets import ImageFolder

from conftest import Converted
from dataset import LMDBDataset


def make_tar(tree: Path, path: Path, mode: str) -> Path:
    with tarfile.open(path, mode) as tar:
        tar.add(tree, arcname="train")  # wrapped in one top folder, as archives usually are
    return path


def make_zip(tree: Path, path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for file in sorted(tree.rglob("*")):
            zf.write(file, file.relative_to(tree).as_posix())  # no top folder this time
    return path


def same_dataset(a: LMDBDataset, b: LMDBDataset) -> None:
    assert a.classes == b.classes and a.samples == b.samples
    for field in ("image_sizes", "checksums", "storage_codes"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
    assert all(a.get_bytes(i) == b.get_bytes(i) for i in range(len(a)))


@pytest.mark.parametrize("kind", ["tar", "tar.gz", "zip"])
def test_archive_source_gives_the_folder_result(
    image_tree: Path, converted: Converted, tmp_path: Path, convert_in_tmp, kind: str
) -> None:
    archive = tmp_path / f"train.{kind}"
    if kind == "zip":
        make_zip(image_tree, archive)
    else:
        make_tar(image_tree, archive, "w:gz" if kind == "tar.gz" else "w")
    result = convert_in_tmp(archive)
    result.run.check()
    same_dataset(LMDBDataset(result.lmdb), LMDBDataset(converted.lmdb))


def test_tar_of_a_folders_contents_with_a_file_at_its_root(tree_copy: Path, tmp_path: Path, convert_in_tmp) -> None:
    # `tar cf train.tar -C train .` names members ./cls/x.JPEG; a README beside the class folders
    # keeps the ./ from being a wrapper folder to strip, yet "." is no class
    (tree_copy / "README.txt").write_text("about this dataset")
    archive = tmp_path / "train.tar"
    with tarfile.open(archive, "w") as tar:
        tar.add(tree_copy, arcname=".")
    result = convert_in_tmp(archive)
    result.run.check()
    folder = ImageFolder(str(tree_copy))
    ds = LMDBDataset(result.lmdb)
    assert ds.classes == folder.classes and ds.targets == folder.targets


@pytest.mark.parametrize("kind", ["tar", "zip"])
def test_empty_class_folder_in_an_archive_stops_as_imagefolder_would(
    image_tree: Path, tmp_path: Path, convert_in_tmp, kind: str
) -> None:
    # ImageFolder over the unpacked tree makes the empty folder a class and raises; read in place,
    # the archive's folder members must give the same answer, not a dataset with a class less.
    tree = tmp_path / "tree"
    shutil.copytree(image_tree, tree)
    (tree / "zz_empty").mkdir()
    archive = tmp_path / f"train.{kind}"
    make_zip(tree, archive) if kind == "zip" else make_tar(tree, archive, "w")
    result = convert_in_tmp(archive)
    assert result.run.returncode != 0
    assert "found no valid file for the classes zz_empty" in result.run.output
    assert not result.lmdb.exists()


def test_archive_listing_accepts_what_imagefolder_accepts() -> None:
    # count_check lists archive members with a copy of torchvision's extension list (importing
    # torchvision costs seconds per job): the copy must stay the original.
    from torchvision.datasets.folder import IMG_EXTENSIONS, has_file_allowed_extension

    import count_check

    assert count_check.IMAGE_EXTENSIONS == IMG_EXTENSIONS
    names = ["a.JPEG", "b.jpg", "c.Png", "d.webp", "e.TIFF", "f.txt", "g.jpeg.bak", "h", ".jpg", "i.gif"]
    assert [count_check.is_image(n) for n in names] == [has_file_allowed_extension(n, IMG_EXTENSIONS) for n in names]


def add_member(tar: tarfile.TarFile, name: str, data: bytes = b"\xff\xd8\xff\xd9", **fields: object) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    for key, value in fields.items():
        setattr(info, key, value)
    tar.addfile(info, io.BytesIO(data) if info.isfile() else None)


def evil_tar(path: Path, name: str, **fields: object) -> Path:
    with tarfile.open(path, "w") as tar:
        add_member(tar, "cls/good.JPEG")
        if fields.get("type") == tarfile.SYMTYPE:
            add_member(tar, name, data=b"", **fields)
        else:
            add_member(tar, name, **fields)
    return path


UNSAFE_MEMBERS = [
    ("../escape.JPEG", {}, "'..' in path"),
    ("cls/../../escape.JPEG", {}, "'..' in path"),
    ("/tmp/imagefolder-lmdb-escape.JPEG", {}, "absolute path"),
    ("cls/dev", {"type": tarfile.CHRTYPE}, "device"),
]


def assert_refused(result: Converted, tmp_path: Path, member: str, reason: str) -> None:
    assert result.run.returncode != 0
    assert "refused member" in result.run.output and reason in result.run.output
    assert member.split("/")[-1] in result.run.output
    assert not (tmp_path / "escape.JPEG").exists() and not (tmp_path.parent / "escape.JPEG").exists()
    assert not Path("/tmp/imagefolder-lmdb-escape.JPEG").exists()
    assert not list((tmp_path / "run").rglob("*.JPEG")), "nothing was extracted"


@pytest.mark.parametrize(
    ("member", "fields", "reason"),
    [
        *UNSAFE_MEMBERS,
        ("cls/link.JPEG", {"type": tarfile.SYMTYPE, "linkname": "../../../escape.JPEG"}, "link (../../../escape"),
        ("cls/hard.JPEG", {"type": tarfile.LNKTYPE, "linkname": "cls/good.JPEG"}, "links cannot be followed"),
    ],
)
def test_unsafe_tar_read_in_place_is_refused(
    tmp_path: Path, convert_in_tmp, member: str, fields: dict, reason: str
) -> None:
    result = convert_in_tmp(evil_tar(tmp_path / "evil.tar", member, **fields))
    assert_refused(result, tmp_path, member, reason)


@pytest.mark.parametrize(
    ("member", "fields", "reason"),
    [
        *UNSAFE_MEMBERS,
        ("cls/link.JPEG", {"type": tarfile.SYMTYPE, "linkname": "../../../escape.JPEG"}, "link pointing outside"),
        ("cls/abs.JPEG", {"type": tarfile.SYMTYPE, "linkname": "/etc/passwd"}, "link pointing outside"),
    ],
)
def test_unsafe_tar_gz_extraction_is_refused(
    tmp_path: Path, convert_in_tmp, member: str, fields: dict, reason: str
) -> None:
    plain = evil_tar(tmp_path / "evil.tar", member, **fields)
    compressed = tmp_path / "evil.tar.gz"
    with open(plain, "rb") as source, gzip.open(compressed, "wb") as target:
        target.write(source.read())
    result = convert_in_tmp(compressed)
    assert_refused(result, tmp_path, member, reason)


@pytest.mark.parametrize(
    ("member", "file_type", "reason"),
    [
        ("../escape.JPEG", stat.S_IFREG, "'..' in path"),
        ("/abs/escape.JPEG", stat.S_IFREG, "absolute path"),
        ("cls/link.JPEG", stat.S_IFLNK, "symbolic link"),
    ],
)
def test_unsafe_zip_is_refused(tmp_path: Path, convert_in_tmp, member: str, file_type: int, reason: str) -> None:
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("cls/good.JPEG", b"\xff\xd8\xff\xd9")
        info = zipfile.ZipInfo(member)
        info.external_attr = (file_type | 0o644) << 16
        zf.writestr(info, b"../../escape.JPEG" if file_type == stat.S_IFLNK else b"\xff\xd8\xff\xd9")
    result = convert_in_tmp(archive)
    assert result.run.returncode != 0
    assert f"refused member {member!r}: {reason}" in result.run.output
    assert not (tmp_path / "escape.JPEG").exists()
    assert not list((tmp_path / "run").rglob("*.JPEG")), "nothing was extracted"
