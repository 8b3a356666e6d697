"""Archive sources: a tar, tar.gz or zip of an ImageFolder tree converts like the folder itself;
archives whose members would escape the extraction folder are refused, and nothing escapes."""

from __future__ import annotations

import gzip
import json
import shutil
import stat
import subprocess
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pytest
from torchvision.datasets import ImageFolder

from imagefolder_lmdb.reader import LMDBDataset
from support.archives import APPLE_DOUBLE, DS_STORE, add_member, clear_utf8_flags, evil_tar, make_tar, make_zip, pack
from support.workflow import Converted, run_snakemake, write_config


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
    # members read in place, or a tree unpacked into the work folder: no folder of the source files
    assert LMDBDataset(result.lmdb).root is None and LMDBDataset(converted.lmdb).root == str(image_tree)


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


UNSAFE_MEMBERS = [
    ("../escape.JPEG", {}, "'..' in path"),
    ("cls/../../escape.JPEG", {}, "'..' in path"),
    ("/tmp/imagefolder-lmdb-escape.JPEG", {}, "absolute path"),
    ("cls/dev", {"type": tarfile.CHRTYPE}, "device"),
]
#: Links: a tar read in place refuses every link, an extracted one those that lead outside it.
LINKS_READ_IN_PLACE = [
    ("cls/link.JPEG", {"type": tarfile.SYMTYPE, "linkname": "../../../escape.JPEG"}, "outside the archive (../../"),
    ("cls/hard.JPEG", {"type": tarfile.LNKTYPE, "linkname": "cls/good.JPEG"}, "links cannot be followed"),
]
LINKS_EXTRACTED = [
    ("cls/link.JPEG", {"type": tarfile.SYMTYPE, "linkname": "../../../escape.JPEG"}, "link pointing outside"),
    ("cls/abs.JPEG", {"type": tarfile.SYMTYPE, "linkname": "/etc/passwd"}, "link pointing outside"),
]


def assert_refused(result: Converted, tmp_path: Path, member: str, reason: str) -> None:
    assert result.run.returncode != 0
    assert "refused member" in result.run.output and reason in result.run.output
    assert member.split("/")[-1] in result.run.output
    assert not (tmp_path / "escape.JPEG").exists() and not (tmp_path.parent / "escape.JPEG").exists()
    assert not Path("/tmp/imagefolder-lmdb-escape.JPEG").exists()
    assert not list((tmp_path / "run").rglob("*.JPEG")), "nothing was extracted"


@pytest.mark.parametrize(("member", "fields", "reason"), [*UNSAFE_MEMBERS, *LINKS_READ_IN_PLACE])
def test_unsafe_tar_read_in_place_is_refused(
    tmp_path: Path, convert_in_tmp, member: str, fields: dict, reason: str
) -> None:
    result = convert_in_tmp(evil_tar(tmp_path / "evil.tar", member, **fields))
    assert_refused(result, tmp_path, member, reason)


@pytest.mark.parametrize(("member", "fields", "reason"), [*UNSAFE_MEMBERS, *LINKS_EXTRACTED])
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


# --------------------------------------------------------------------------------------------------
# Archives as real people pack them: Mac leftovers, non-ASCII names, members appended twice.
# --------------------------------------------------------------------------------------------------


def convert_split(tmp_path: Path, source: Path, **split: object) -> Converted:
    """``source`` converted with extra split settings (``extract``, ``layout``, ...)."""
    workdir = tmp_path / "run"
    workdir.mkdir()
    config = write_config(workdir, {"train": {"source": str(source), "shards": 2, **split}})
    return Converted(
        workdir, source, workdir / "results" / "train.lmdb", run_snakemake(workdir, "--configfile", str(config))
    )


def assert_like_imagefolder(result: Converted, tree: Path) -> LMDBDataset:
    result.run.check()
    folder, ds = ImageFolder(str(tree)), LMDBDataset(result.lmdb)
    assert ds.classes == folder.classes and ds.class_to_idx == folder.class_to_idx
    assert [path for path, _ in ds.samples] == [Path(p).relative_to(tree).as_posix() for p, _ in folder.samples]
    assert ds.targets == folder.targets
    return ds


def ignored_files(result: Converted) -> list[str]:
    return json.loads((result.workdir / "work" / "train" / "counts.json").read_text())["ignored_examples"]


@pytest.mark.parametrize("kind", ["tar", "tar.gz", "zip"])
def test_mac_files_beside_the_class_folders_leave_the_wrapper_a_wrapper(
    image_tree: Path, tmp_path: Path, kind: str
) -> None:
    # A Mac leaves .DS_Store beside the class folders (and "._train" beside the wrapper): they are
    # no images, so they must not make the wrapper folder the only class.
    archive = pack(image_tree, tmp_path / f"train.{kind}", extra={"train/.DS_Store": DS_STORE, "._train": APPLE_DOUBLE})
    result = convert_split(tmp_path, archive)
    assert_like_imagefolder(result, image_tree)
    assert sorted(ignored_files(result)) == [".DS_Store", "._train (beside the image tree train/)"], "unpacked or not"


@pytest.mark.parametrize(("kind", "extract"), [("zip", False), ("zip", True), ("tar.gz", True)])
def test_finder_zip_macosx_folder_is_set_aside_and_listed(
    image_tree: Path, tmp_path: Path, kind: str, extract: bool
) -> None:
    # Finder's "Compress" stores every resource fork under __MACOSX/; macOS's unzip never makes it
    # a folder of the tree, so it is no class: left out, and listed in the counts report.
    first = sorted(image_tree.rglob("*.JPEG"))[0].relative_to(image_tree).as_posix()
    forks = {"__MACOSX/._train": APPLE_DOUBLE, f"__MACOSX/train/{first.replace('/', '/._')}": APPLE_DOUBLE}
    archive = pack(image_tree, tmp_path / f"train.{kind}", extra=forks)  # a zip unpacked and packed again
    result = convert_split(tmp_path, archive, extract=extract)
    assert_like_imagefolder(result, image_tree)
    assert {f"{name} (macOS metadata, not part of the tree)" for name in forks} <= set(ignored_files(result))
    assert "not images: 2 files left out, listed in work/train/counts.json" in result.run.output


@pytest.mark.parametrize("extract", [False, True])
def test_zip_with_unflagged_utf8_names_keeps_its_class_names(image_tree: Path, tmp_path: Path, extract: bool) -> None:
    # Read as cp437 (zipfile's default) "Öl" and "àpfel" come out garbled and in the other order:
    # every label would be swapped.
    tree = tmp_path / "tree"
    images = sorted(image_tree.rglob("*.JPEG"))
    for number, image in enumerate(images[:12]):
        target = tree / ("Öl" if number % 2 else "àpfel") / f"bild {number}.JPEG"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(image, target)
    archive = pack(tree, tmp_path / "train.zip", wrapper="Bilder")
    clear_utf8_flags(archive)
    with zipfile.ZipFile(archive) as zf:
        assert not any(info.flag_bits & 0x800 for info in zf.infolist()) and "├" in zf.namelist()[-1]
    ds = assert_like_imagefolder(convert_split(tmp_path, archive, extract=extract), tree)
    assert ds.classes == ["Öl", "àpfel"]


def test_links_inside_a_tar_are_refused_in_place_with_the_tar_that_stores_none_and_followed_when_extracted(
    image_tree: Path, tmp_path: Path
) -> None:
    # A relative link that climbs out of its class folder but stays in the tree ("../a/x.jpg") was
    # refused as leading outside; the advice `tar -h` still stored hard links (GNU tar needs
    # --hard-dereference for a file with two names).
    tree = tmp_path / "tree"
    shutil.copytree(image_tree, tree)
    first, second = sorted(p for p in tree.iterdir() if p.is_dir())[:2]
    image = sorted(first.glob("*.JPEG"))[0]
    (second / "climbing link.JPEG").symlink_to(Path("..") / first.name / image.name)
    (second / "hard link.JPEG").hardlink_to(image)
    archive = tmp_path / "train.tar"
    subprocess.run(["tar", "-cf", str(archive), "-C", str(tmp_path), "tree"], check=True)
    in_place = convert_split(tmp_path, archive)
    assert in_place.run.returncode != 0 and "`tar -h --hard-dereference`" in in_place.run.output
    shutil.rmtree(tmp_path / "run")
    ds = assert_like_imagefolder(convert_split(tmp_path, archive, extract=True), tree)
    paths = [path for path, _ in ds.samples]
    target = ds.get_bytes(paths.index(f"{first.name}/{image.name}"))
    assert ds.get_bytes(paths.index(f"{second.name}/climbing link.JPEG")) == target
    assert ds.get_bytes(paths.index(f"{second.name}/hard link.JPEG")) == target


def test_member_appended_twice_is_read_as_unpacking_leaves_it(image_tree: Path, tmp_path: Path) -> None:
    # `tar rf` appends a second copy of a member; tar xf keeps the later one, ImageFolder sees one file.
    images = sorted(image_tree.rglob("*.JPEG"))
    replaced = images[0].relative_to(image_tree).as_posix()
    archive = pack(image_tree, tmp_path / "train.tar")
    with tarfile.open(archive, "a") as tar:
        add_member(tar, f"train/{replaced}", images[1].read_bytes())
    result = convert_split(tmp_path, archive)
    ds = assert_like_imagefolder(result, image_tree)
    index = [path for path, _ in ds.samples].index(replaced)
    assert ds.get_bytes(index) == images[1].read_bytes()
    assert f"train/{replaced} (stored twice: the later copy is used, as unpacking would)" in ignored_files(result)


# --------------------------------------------------------------------------------------------------
# splits.<name>.root: a folder inside the source, for every kind of source.
# --------------------------------------------------------------------------------------------------


def tree_inside(tree: Path, base: Path, kind: str) -> Path:
    """``tree`` as ``data/images/train`` of a bigger source (beside a val folder, a README and a CSV
    outside it): a folder, a zip, a tar or a tar.gz."""
    an_image = next(tree.rglob("*.JPEG")).read_bytes()
    extra = {"data/images/val/n0/x.JPEG": an_image, "data/README.txt": b"not part of train", "labels.csv": b"a,b\n"}
    if kind != "folder":
        return pack(tree, base / f"source.{kind}", wrapper="data/images/train", extra=extra)
    shutil.copytree(tree, base / "folder" / "data" / "images" / "train")
    for name, data in extra.items():
        (base / "folder" / name).parent.mkdir(parents=True, exist_ok=True)
        (base / "folder" / name).write_bytes(data)
    return base / "folder"


@pytest.mark.parametrize(
    ("kind", "extract"), [("zip", False), ("tar", False), ("tar.gz", True), ("zip", True), ("folder", False)]
)
def test_root_reads_one_folder_of_a_bigger_source(
    image_tree: Path, converted: Converted, tmp_path: Path, kind: str, extract: bool
) -> None:
    source = tree_inside(image_tree, tmp_path, kind)
    result = convert_split(tmp_path, source, root="data/images/train/", extract=extract)
    result.run.check()
    same_dataset(LMDBDataset(result.lmdb), LMDBDataset(converted.lmdb))
    assert ignored_files(result) == [], "nothing outside root is part of the source"


@pytest.mark.parametrize("kind", ["zip", "tar.gz", "folder"])
def test_root_the_source_lacks_is_named_with_the_folders_it_has(image_tree: Path, tmp_path: Path, kind: str) -> None:
    source = tree_inside(image_tree, tmp_path, kind)
    result = convert_split(tmp_path, source, root="data/imgs/train")
    assert result.run.returncode != 0
    assert f"{source}: splits.<name>.root 'data/imgs/train' is not a folder of this source" in result.run.output
    assert "its folder data/ holds the folders images" in result.run.output


@pytest.mark.parametrize("kind", ["zip", "folder"])
def test_train_and_val_folders_are_never_read_as_two_classes(image_tree: Path, tmp_path: Path, kind: str) -> None:
    source = tree_inside(image_tree, tmp_path, kind)
    result = convert_split(tmp_path, source)
    assert result.run.returncode != 0
    assert "the image folders are train, val: splits, not classes" in result.run.output
    assert "root: data/images/train for train and root: data/images/val for val" in result.run.output


def test_root_with_dot_dot_is_a_config_error(image_tree: Path, tmp_path: Path) -> None:
    result = convert_split(tmp_path, image_tree, root="../elsewhere")
    assert result.run.returncode != 0
    assert "config key splits.train.root: '../elsewhere' must not hold '..'" in result.run.output
