"""Archive members as the workflow lists and names them, without a run: the image extensions
ImageFolder accepts, zip names in any code page."""

from __future__ import annotations

import zipfile
import zlib

import pytest


def test_archive_listing_accepts_what_imagefolder_accepts() -> None:
    # the sources list archive members with a copy of torchvision's extension list (importing
    # torchvision costs seconds per job): the copy must stay the original.
    from torchvision.datasets.folder import IMG_EXTENSIONS, has_file_allowed_extension

    from imagefolder_lmdb.sources import tree

    assert tree.IMAGE_EXTENSIONS == IMG_EXTENSIONS
    names = ["a.JPEG", "b.jpg", "c.Png", "d.webp", "e.TIFF", "f.txt", "g.jpeg.bak", "h", ".jpg", "i.gif"]
    assert [tree.is_image(n) for n in names] == [has_file_allowed_extension(n, IMG_EXTENSIONS) for n in names]


def test_zip_unicode_path_field_names_a_non_utf8_member() -> None:
    # Info-ZIP stores a name in the system's code page plus its UTF-8 form in a 0x7075 field.
    from imagefolder_lmdb.sources.archive_members import zip_member_name

    stored = "Ölfass.jpg".encode("cp850")
    field = b"\x01" + zlib.crc32(stored).to_bytes(4, "little") + "Ölfass.jpg".encode()
    info = zipfile.ZipInfo(stored.decode("cp437"))
    info.extra = (0x7075).to_bytes(2, "little") + len(field).to_bytes(2, "little") + field
    assert zip_member_name(info) == "Ölfass.jpg"
    info.extra = b""  # no field and not UTF-8: zipfile's cp437 reading stays
    assert zip_member_name(info) == stored.decode("cp437")


def test_root_filter_keeps_members_under_root_and_names_what_there_is_instead() -> None:
    from imagefolder_lmdb.sources.tree import RootFilter
    from imagefolder_lmdb.work.files import Member
    from imagefolder_lmdb.work.locations import ZipLocation

    paths = ["./ILSVRC/Data/CLS-LOC/train/n1/a.JPEG", "ILSVRC/Data/CLS-LOC/val/b.JPEG", "LOC_val_solution.csv"]
    members = [Member(p, ZipLocation(0, p, 1)) for p in paths]
    kept = RootFilter("ILSVRC/Data/CLS-LOC/train")
    assert [m.path for m in kept.members(members)] == ["n1/a.JPEG"]
    assert [m.path for m in RootFilter("").members(members)] == [p.removeprefix("./") for p in paths]
    for root, where in [
        ("ILSVRC/Data/CLS-LOC/trian", "its folder ILSVRC/Data/CLS-LOC/ holds the folders train, val"),
        ("Kaggle/train", "its top level holds the folders ILSVRC"),
    ]:
        select = RootFilter(root)
        assert list(select.members(members)) == []
        assert where in str(select.missing("k.zip")), root


@pytest.mark.parametrize(
    ("images", "hint"),
    [
        (["x/train/cat/1.jpg", "x/val/1.jpg"], "root: x/train for train and root: x/val for val"),
        (["train/cat/1.jpg", "val/cat/2.jpg", "test/3.jpg"], "root: train for train and root: val for val"),
    ],
)
def test_split_folders_are_refused_with_the_roots_to_set(images: list[str], hint: str) -> None:
    from imagefolder_lmdb.sources.tree import RootError, check_not_split_folders

    with pytest.raises(RootError, match=hint):
        check_not_split_folders("a.zip", "", images)


def test_a_class_named_train_is_no_split_folder() -> None:
    from imagefolder_lmdb.sources.tree import check_not_split_folders

    check_not_split_folders("a.zip", "", ["train/cat/1.jpg", "train/dog/2.jpg"])  # wrapper train/: classes cat, dog
    check_not_split_folders("a.zip", "", ["train/1.jpg", "cat/2.jpg"])  # a class named train beside another
