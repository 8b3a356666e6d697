"""Archive members as the workflow lists and names them, without a run: the image extensions
ImageFolder accepts, zip names in any code page."""

from __future__ import annotations

import os
import zipfile
import zlib
from pathlib import Path

import pytest


def test_archive_listing_accepts_what_imagefolder_accepts() -> None:
    # the sources list archive members with a copy of torchvision's extension list (importing
    # torchvision costs seconds per job): the copy must stay the original.
    from torchvision.datasets.folder import IMG_EXTENSIONS, has_file_allowed_extension

    from imagefolder_lmdb.sources import listing_options, tree

    assert tree.IMAGE_EXTENSIONS == IMG_EXTENSIONS
    names = ["a.JPEG", "b.jpg", "c.Png", "d.webp", "e.TIFF", "f.txt", "g.jpeg.bak", "h", ".jpg", "i.gif"]
    assert [listing_options.is_image(n) for n in names] == [
        has_file_allowed_extension(n, IMG_EXTENSIONS) for n in names
    ]


def odd_tree(root: Path) -> Path:
    """Class folders with nested folders, links (to a file, to a folder), files that are no image,
    upper-case extensions, names that sort differently by byte and by case, a file beside the classes."""
    for path in ["b/x.JPEG", "b/Y.jpg", "b/sub/z.png", "b/sub/deeper/a.ppm", "b/sub2/c.webp", "a/1.jpg", "a/notes.txt",
                 "A/Z.JPG", "a.b/f.tif", "c d/é.jpeg", "loose.jpg", "e/readme", "e/z.gif"]:  # fmt: skip
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(b"x")
    (root / "a" / "link.jpg").symlink_to(root / "b" / "x.JPEG")
    (root / "a" / "linked").symlink_to(root / "b" / "sub")
    (root / "f").symlink_to(root / "a.b")
    return root


def test_folder_listing_is_torchvisions(tmp_path: Path) -> None:
    """The folder scan's own find_classes/make_dataset (no torchvision import in the listing job)
    give what torchvision's give, error messages included."""
    from torchvision.datasets import folder as torchvision

    from imagefolder_lmdb.sources import listing_options, tree

    root = str(odd_tree(tmp_path / "tree"))
    assert tree.find_classes(root) == torchvision.find_classes(root)
    classes = tree.find_classes(root)[1]
    wanted = {name: index for name, index in classes.items() if name != "e"}
    ours = tree.make_dataset(root, wanted, is_valid_file=listing_options.is_image)
    assert ours == torchvision.make_dataset(root, wanted, is_valid_file=listing_options.is_image)
    assert len(ours) == 13
    for function in (tree.make_dataset, torchvision.make_dataset):
        with pytest.raises(FileNotFoundError) as empty:
            function(root, classes, is_valid_file=listing_options.is_image)
        assert str(empty.value) == "Found no valid file for the classes e. "
    (tmp_path / "flat").mkdir()
    with pytest.raises(FileNotFoundError) as ours_error:
        tree.find_classes(str(tmp_path / "flat"))
    with pytest.raises(FileNotFoundError) as theirs:
        torchvision.find_classes(str(tmp_path / "flat"))
    assert str(ours_error.value) == str(theirs.value)


def test_zip_unicode_path_field_names_a_non_utf8_member() -> None:
    # Info-ZIP stores a name in the system's code page plus its UTF-8 form in a 0x7075 field.
    from imagefolder_lmdb.sources.archive_members import zip_member_name

    stored = "Ölfass.jpg".encode("cp850")
    field = b"\x01" + zlib.crc32(stored).to_bytes(4, "little") + "Ölfass.jpg".encode()
    info = zipfile.ZipInfo(stored.decode("cp437"))
    info.extra = (0x7075).to_bytes(2, "little") + len(field).to_bytes(2, "little") + field
    assert zip_member_name(info) == "Ölfass.jpg"
    info.extra = b""  # no field and not UTF-8: made on Windows, its code page; zipfile reads cp437
    info.create_system = 0
    assert zip_member_name(info) == stored.decode("cp437")
    info.create_system = 3  # made on Unix: the bytes the file system held, as Python lists them
    assert zip_member_name(info) == "\udc99lfass.jpg" == os.fsdecode(stored)


def test_root_filter_keeps_members_under_root_and_names_what_there_is_instead() -> None:
    from imagefolder_lmdb.sources.tree import RootFilter
    from imagefolder_lmdb.work.files import Member
    from imagefolder_lmdb.work.source_locations import ZipLocation

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
