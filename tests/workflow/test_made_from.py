"""A dataset knows what it was made from (issue 41): whether a split is up to date is decided from the
dataset's own record and the source, never only from Snakemake's metadata. After ``--clean``, a
deleted work folder, ``.snakemake`` or only its ``metadata/``, an image added or removed is seen; a
changed class list is never "up to date"; an image edited in place with its size and time kept is
seen on the same filesystem. Each result is compared with ImageFolder on the new tree (every image
here is an RGB JPEG, stored as it is: a clean conversion's records are the files' bytes)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from torchvision.datasets import ImageFolder

from imagefolder_lmdb.reader import LMDBDataset, close_all_envs
from support.images import jpeg_bytes
from support.workflow import convert
from workflow.test_front_door import run_command, succeeded

pytestmark = pytest.mark.usefixtures("fresh_envs")  # the tests open their files afresh

CLASSES = ("ants", "bees", "cats")


def make_tree(root: Path, per_class: int = 4) -> Path:
    for number, name in enumerate(CLASSES):
        (root / name).mkdir(parents=True)
        for index in range(per_class):
            (root / name / f"{index:03d}.jpg").write_bytes(jpeg_bytes(seed=number * 100 + index, size=(48, 40)))
    return root


def change_tree(root: Path) -> None:
    """One ants image removed, one bees image added: the count stays, the labels shift."""
    (root / "ants" / "001.jpg").unlink()
    (root / "bees" / "100.jpg").write_bytes(jpeg_bytes(seed=999, size=(48, 40)))


def assert_is_imagefolder(dataset: Path, tree: Path) -> None:
    ours, theirs = LMDBDataset(str(dataset)), ImageFolder(str(tree))
    assert ours.classes == theirs.classes
    assert [(os.path.join(str(tree), path), target) for path, target in ours.samples] == theirs.samples
    assert all(ours.get_bytes(i) == Path(path).read_bytes() for i, (path, _) in enumerate(theirs.samples))


def forget(out: Path, what: str) -> None:
    """Remove what a user removes: the work folder, Snakemake's folder in it, or only its records."""
    folder = {"work": out / "work", "snakemake": out / "work" / ".snakemake"}.get(what)
    if what == "metadata":
        folder = out / "work" / ".snakemake" / "metadata"
    if folder is not None:
        assert folder.is_dir(), folder
        shutil.rmtree(folder)


@pytest.mark.slow  # four ways, two conversions each (support/scheduling.py hands them out early)
@pytest.mark.parametrize("what", ["clean", "work", "snakemake", "metadata"])
def test_an_added_and_a_removed_image_are_seen_whatever_of_the_work_folder_is_gone(what: str, tmp_path: Path) -> None:
    tree, out = make_tree(tmp_path / "data" / "train"), tmp_path / "out"
    succeeded(run_command(tmp_path, "convert", tree, out, "--cores", "2", *(["--clean"] if what == "clean" else [])))
    change_tree(tree)
    forget(out, what)
    again = succeeded(run_command(tmp_path, "convert", tree, out, "--cores", "2"))
    assert "Nothing to convert" not in again.stdout + again.stderr
    assert_is_imagefolder(out / "train.lmdb", tree)
    assert not list(out.glob("work/train/parts/*.lmdb")), "parts are removed once merged (keep_parts: false)"
    quiet = succeeded(run_command(tmp_path, "convert", tree, out, "--cores", "2"))
    assert "Nothing to convert" in quiet.stdout + quiet.stderr  # and the next run finds it made


def test_plain_snakemake_sees_a_change_after_its_folders_are_gone(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "data")
    convert(tmp_path / "run", tree).run.check()
    change_tree(tree)
    shutil.rmtree(tmp_path / "run" / ".snakemake")
    shutil.rmtree(tmp_path / "run" / "work")
    again = convert(tmp_path / "run", tree)
    again.run.check()
    assert "train: revision 2: 1 added, 0 relabelled, 1 removed" in again.run.output  # a change (issue 58)
    assert_is_imagefolder(again.lmdb, tree)
    assert "Nothing to be done" in convert(tmp_path / "run", tree).run.check().output


def test_a_changed_class_list_is_refused_without_overwrite_and_made_with_it(tmp_path: Path) -> None:
    tree, out = make_tree(tmp_path / "data" / "train"), tmp_path / "out"
    succeeded(run_command(tmp_path, "convert", tree, out, "--cores", "2"))
    refused = run_command(tmp_path, "convert", tree, out, "--cores", "2", "--classes", "ants,bees")
    message = refused.stdout + refused.stderr
    assert refused.returncode != 0 and "class list" in message and "--overwrite" in message, message
    assert LMDBDataset(str(out / "train.lmdb")).classes == list(CLASSES)
    close_all_envs()  # the file is replaced: read the new one
    succeeded(run_command(tmp_path, "convert", tree, out, "--cores", "2", "--classes", "ants,bees", "--overwrite"))
    assert LMDBDataset(str(out / "train.lmdb")).classes == ["ants", "bees"]
    same = succeeded(run_command(tmp_path, "convert", tree, out, "--cores", "2", "--set", "classes=[bees, ants]"))
    assert "Nothing to convert" in same.stdout + same.stderr  # the same list spelled another way


def test_plain_snakemake_makes_a_split_again_for_a_changed_class_list(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "data")
    convert(tmp_path / "run", tree).run.check()
    again = convert(tmp_path / "run", tree, classes=["bees", "cats"])
    again.run.check()
    assert "Nothing to be done" not in again.run.output
    assert LMDBDataset(str(again.lmdb)).classes == ["bees", "cats"]


def test_an_image_edited_in_place_with_its_size_and_time_kept_is_seen(tmp_path: Path) -> None:
    tree, out = make_tree(tmp_path / "data" / "train"), tmp_path / "out"
    succeeded(run_command(tmp_path, "convert", tree, out, "--cores", "2", "--keep-parts", "--shards", "3"))
    edited = tree / "bees" / "002.jpg"
    before = edited.stat()
    data = bytearray(edited.read_bytes())
    data[15] ^= 0x01  # a byte of the JFIF header's density: another file, as valid, of the same size
    edited.write_bytes(bytes(data))
    os.utime(edited, ns=(before.st_atime_ns, before.st_mtime_ns))  # `touch -r`: its time as it was
    again = succeeded(run_command(tmp_path, "convert", tree, out, "--cores", "2", "--keep-parts", "--shards", "3"))
    # a change (issue 58): the image alone encoded into the split's next revision
    assert "train: revision 2: 1 added, 0 relabelled, 1 removed (1 of them replaced" in again.stdout + again.stderr
    assert_is_imagefolder(out / "train.lmdb", tree)


def test_an_edit_in_place_after_a_failed_run_encodes_its_finished_shard_again(tmp_path: Path) -> None:
    # a failed shard leaves the parts of the finished ones for the rerun; an image of a finished shard
    # written in place meanwhile (size and time kept) must not be taken from its old part
    tree, out = make_tree(tmp_path / "data" / "train"), tmp_path / "out"
    bad, good = tree / "cats" / "000.jpg", (tree / "cats" / "000.jpg").read_bytes()
    bad.write_bytes(good[: len(good) // 2])  # cut short: shard 2 (cats) fails, shards 0 and 1 finish
    failed = run_command(tmp_path, "convert", tree, out, "--cores", "1", "--shards", "3", "--", "--keep-going")
    assert failed.returncode == 1 and len(list(out.glob("work/train/parts/*.lmdb"))) == 2, failed.stderr
    edited = tree / "bees" / "002.jpg"  # shard 1's, done
    before = edited.stat()
    data = bytearray(edited.read_bytes())
    data[15] ^= 0x01  # another file, as valid, of the same size
    edited.write_bytes(bytes(data))
    os.utime(edited, ns=(before.st_atime_ns, before.st_mtime_ns))
    bad.write_bytes(good)  # the fix the failure named
    succeeded(run_command(tmp_path, "convert", tree, out, "--cores", "1", "--shards", "3"))
    assert_is_imagefolder(out / "train.lmdb", tree)


def test_a_split_converted_alone_or_with_the_others_finds_the_same_class_list(tmp_path: Path) -> None:
    # alone, a split takes OUTDIR's class list by name; with the others, from its folders: the same names
    data, out = tmp_path / "data", tmp_path / "out"
    make_tree(data / "train"), make_tree(data / "val", per_class=2)
    succeeded(run_command(tmp_path, "convert", data, out, "--cores", "2"))
    for alone in ([data / "train", out, "--split", "train"], [data, out, "--splits", "train"], [data, out]):
        again = succeeded(run_command(tmp_path, "convert", *alone, "--cores", "2"))
        assert "Nothing to convert" in again.stdout + again.stderr, alone
