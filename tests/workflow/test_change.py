"""The same command applies a change as a change (issue 58, points 2 to 4): ``convert SOURCE OUTDIR`` on
a folder whose images or labels changed writes the split's next revision, without ``--overwrite``,
encoding only the added and replaced images. After each kind of change (added, a new class folder
between two, removed, replaced, moved to another class folder, relabelled by a label file, a shared
class list) the split equals torchvision's ImageFolder (or the label file) over the changed tree,
samples and stored bytes included; a reader opened on a revision before a change reads what it read (one
opened on the single file before the first change stops with FileChangedError, as before); the data
files of earlier revisions keep their inode and bytes; ``flatten`` equals a fresh conversion."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from torchvision.datasets import ImageFolder

from imagefolder_lmdb.reader import LMDBDataset
from imagefolder_lmdb.reader.identity import FileChangedError
from support.images import jpeg_bytes
from workflow.test_front_door import run_command, succeeded

pytestmark = pytest.mark.usefixtures("fresh_envs")  # the tests open their files afresh

FAST = ("--cores", "1", "--shards", "1")


def make_tree(root: Path, classes: tuple[str, ...] = ("ants", "cats"), per_class: int = 3) -> Path:
    for number, name in enumerate(classes):
        (root / name).mkdir(parents=True)
        for index in range(per_class):
            (root / name / f"{index:03d}.jpg").write_bytes(jpeg_bytes(seed=number * 100 + index, size=(40, 32)))
    return root


def convert(cwd: Path, *args: str | Path) -> str:
    """``imagefolder-lmdb convert ARGS``, which must succeed; what it said."""
    done = succeeded(run_command(cwd, "convert", *args, *FAST))
    return done.stdout + done.stderr


def assert_is_imagefolder(dataset: Path, tree: Path) -> None:
    """The split equals ImageFolder over ``tree``: classes, class_to_idx, samples, targets, bytes."""
    ours, theirs = LMDBDataset(str(dataset)), ImageFolder(str(tree))
    assert (ours.classes, ours.class_to_idx) == (theirs.classes, theirs.class_to_idx)
    assert [(os.path.join(str(tree), path), target) for path, target in ours.samples] == theirs.samples
    assert list(ours.targets) == theirs.targets
    assert all(ours.get_bytes(i) == Path(path).read_bytes() for i, (path, _) in enumerate(theirs.samples))


def snapshot(dataset: LMDBDataset) -> list[tuple[bytes, int]]:
    return [(dataset.get_bytes(i), int(dataset.targets[i])) for i in range(len(dataset))]


def data_files(out: Path) -> dict[str, tuple[int, str]]:
    """Each data file of the split's folder: its inode and the digest of its bytes."""
    folder = out / "train.lmdb.d"
    return {
        path.name: (path.stat().st_ino, hashlib.sha256(path.read_bytes()).hexdigest())
        for path in sorted(folder.glob("*.lmdb"))
    }


def add_class_between(tree: Path) -> None:
    (tree / "bees").mkdir()  # between ants and cats: cats becomes class 2
    (tree / "bees" / "000.jpg").write_bytes(jpeg_bytes(seed=500, size=(40, 32)))


def remove_one(tree: Path) -> None:
    (tree / "ants" / "001.jpg").unlink()


def replace_one(tree: Path) -> None:
    new = tree.parent / "new.jpg"
    new.write_bytes(jpeg_bytes(seed=501, size=(40, 32)))
    os.replace(new, tree / "cats" / "002.jpg")  # `mv new.jpg cats/002.jpg`: the name stays, the file is another


#: Each change and what the summary says of it.
CHANGES = [
    (add_class_between, "1 added, 0 relabelled, 0 removed"),
    (remove_one, "0 added, 0 relabelled, 1 removed"),
    (replace_one, "1 added, 0 relabelled, 1 removed"),
]


def test_each_kind_of_change_is_a_new_revision_equal_to_imagefolder(tmp_path: Path) -> None:
    tree, out = make_tree(tmp_path / "data" / "train"), tmp_path / "out"
    convert(tmp_path, tree, out)
    readers: list[tuple[LMDBDataset, list[tuple[bytes, int]]]] = []
    files: dict[str, tuple[int, str]] = {}
    for number, (change, said) in enumerate(CHANGES, start=2):
        opened = LMDBDataset(str(out / "train.lmdb"))
        readers.append((opened, snapshot(opened)))
        change(tree)
        output = convert(tmp_path, tree, out)
        assert f"train: revision {number}: {said}" in output, output
        assert ("is now a split of 2 files" in output) == (number == 2), output
        assert "Nothing to convert" not in output
        assert_is_imagefolder(out / "train.lmdb", tree)
        now = data_files(out)
        assert {name: now[name] for name in files} == files, "an earlier data file was written or replaced"
        files = now
        first, *pinned = readers
        with pytest.raises(FileChangedError, match="split of revisions"):  # opened on the single file: today's rule
            snapshot(first[0])
        for reader, seen in pinned:  # opened on a revision before the change: that revision, whole
            assert snapshot(reader) == seen
    quiet = convert(tmp_path, tree, out)
    assert "Nothing to convert" in quiet, quiet
    fresh = tmp_path / "fresh"
    convert(tmp_path, tree, fresh)
    flat = tmp_path / "flat.lmdb"
    succeeded(run_command(tmp_path, "flatten", out / "train.lmdb", flat))
    ours, theirs = LMDBDataset(str(flat)), LMDBDataset(str(fresh / "train.lmdb"))
    assert (ours.classes, ours.samples) == (theirs.classes, theirs.samples)
    assert snapshot(ours) == snapshot(theirs)


def test_an_image_moved_to_another_class_folder_keeps_its_record(tmp_path: Path) -> None:
    tree, out = make_tree(tmp_path / "data" / "train"), tmp_path / "out"
    convert(tmp_path, tree, out)
    (tree / "dogs").mkdir()
    os.replace(tree / "cats" / "000.jpg", tree / "dogs" / "000.jpg")  # moved: its record kept, its label another
    os.replace(tree / "cats" / "001.jpg", tree / "ants" / "009.jpg")  # renamed too: added and removed
    output = convert(tmp_path, tree, out)
    assert "train: revision 2: 1 added, 1 relabelled, 1 removed, 1 moved" in output, output
    assert_is_imagefolder(out / "train.lmdb", tree)
    assert len(data_files(out)) == 2  # the first file, and one holding ants/009.jpg alone


def test_a_label_file_edited_relabels_without_overwrite(tmp_path: Path) -> None:
    tree = tmp_path / "train"
    tree.mkdir()
    for index in range(4):
        (tree / f"{index:04d}.jpg").write_bytes(jpeg_bytes(seed=index, size=(40, 32)))
    labels = tmp_path / "train.csv"
    labels.write_text("id,label\n0000,cat\n0001,dog\n0002,cat\n0003,bird\n")
    out = tmp_path / "out"
    convert(tmp_path, tree, out, "--labels", labels)
    before = LMDBDataset(str(out / "train.lmdb"))
    labels.write_text("id,label\n0000,cat\n0001,dog\n0002,cat\n0003,cat\n0004,dog\n")
    (tree / "0004.jpg").write_bytes(jpeg_bytes(seed=4, size=(40, 32)))
    output = convert(tmp_path, tree, out, "--labels", labels)
    assert "train: revision 2: 1 added, 1 relabelled, 0 removed" in output, output
    after = LMDBDataset(str(out / "train.lmdb"))
    assert after.classes == ["cat", "dog"]  # the labels the file names now, as a fresh conversion
    assert [(path, after.classes[target]) for path, target in after.samples] == [
        ("0000.jpg", "cat"), ("0001.jpg", "dog"), ("0002.jpg", "cat"), ("0003.jpg", "cat"), ("0004.jpg", "dog"),
    ]  # fmt: skip
    assert after.get_bytes(4) == (tree / "0004.jpg").read_bytes()
    assert before.classes[before.targets[3]] == "bird"  # the reader opened before: its revision


def test_a_shared_class_list_gives_val_a_new_revision_in_the_same_run(tmp_path: Path) -> None:
    data = tmp_path / "data"
    make_tree(data / "train", ("ants", "cats"))
    make_tree(data / "val", ("ants", "cats"), per_class=2)
    out = tmp_path / "out"
    convert(tmp_path, data, out)
    add_class_between(data / "train")
    output = convert(tmp_path, data, out)
    assert "train: revision 2: 1 added" in output and "val: revision 2: 0 added, 0 relabelled, 0 removed" in output
    assert_is_imagefolder(out / "train.lmdb", data / "train")
    val = LMDBDataset(str(out / "val.lmdb"))
    assert val.classes == ["ants", "bees", "cats"] and sorted(set(val.targets)) == [0, 2]


def test_with_classes_given_a_new_class_folder_is_set_aside(tmp_path: Path) -> None:
    tree, out = make_tree(tmp_path / "data" / "train"), tmp_path / "out"
    convert(tmp_path, tree, out, "--classes", "ants,cats")
    add_class_between(tree)
    (tree / "ants" / "100.jpg").write_bytes(jpeg_bytes(seed=600, size=(40, 32)))
    output = convert(tmp_path, tree, out, "--classes", "ants,cats")
    assert "train: revision 2: 1 added, 0 relabelled, 0 removed" in output, output
    dataset = LMDBDataset(str(out / "train.lmdb"))
    assert dataset.classes == ["ants", "cats"] and not any(path.startswith("bees/") for path, _ in dataset.samples)


def test_a_change_reports_what_changed_and_verify_since_checks_only_that(tmp_path: Path) -> None:
    """The reports of a change are made from what changed: its verify report checks the data file it
    added (none for a removal), the contact sheet of a change that added nothing is kept; ``verify
    --since N`` checks what came after revision N (a single file: one line)."""
    tree, out = make_tree(tmp_path / "data" / "train"), tmp_path / "out"
    convert(tmp_path, tree, out)
    single = run_command(tmp_path, "verify", out / "train.lmdb", "--since", "1")
    assert single.returncode == 1 and "--since 1 checks a split of revisions" in single.stdout, single.stdout
    sheet = out / "train.contact.png"
    drawn = (sheet.stat().st_ino, sheet.stat().st_mtime_ns)
    remove_one(tree)
    convert(tmp_path, tree, out)
    report = json.loads((out / "train.verify.json").read_text())
    assert report["checked"] == {"records": 0, "mode": "sample", "since": 1} and report["data_files"] == []
    assert (sheet.stat().st_ino, sheet.stat().st_mtime_ns) == drawn, "a removal drew the contact sheet again"
    earlier = set(data_files(out))
    add_class_between(tree)
    convert(tmp_path, tree, out)
    report = json.loads((out / "train.verify.json").read_text())
    (added,) = set(data_files(out)) - earlier
    assert report["checked"]["since"] == 2 and report["checked"]["records"] == 1, report["checked"]
    assert [Path(file).name for file in report["data_files"]] == [added]
    assert (sheet.stat().st_ino, sheet.stat().st_mtime_ns) != drawn, "the added image is not on the sheet"
    since = tmp_path / "since.json"
    checked = succeeded(run_command(tmp_path, "verify", out / "train.lmdb", "--since", "1", "--report", since))
    assert checked.stdout.startswith("OK"), checked.stdout
    assert json.loads(since.read_text())["checked"]["records"] == 1  # the one image added since revision 1
    every = succeeded(run_command(tmp_path, "verify", out / "train.lmdb", "--report", since))
    assert every.stdout.startswith("OK") and json.loads(since.read_text())["checked"]["records"] == 6


def test_info_names_the_pointer_s_format_version(tmp_path: Path) -> None:
    """``info`` of a split of revisions gives the path's own format version (the pointer's, 5), not its
    revision's meta document's; ``--json`` has both."""
    tree, out = make_tree(tmp_path / "data" / "train"), tmp_path / "out"
    convert(tmp_path, tree, out)
    remove_one(tree)
    convert(tmp_path, tree, out)
    text = succeeded(run_command(tmp_path, "info", out / "train.lmdb")).stdout.splitlines()[0]
    assert text.endswith("(imagefolder-lmdb format version 5, a split of revisions)"), text
    described = json.loads(succeeded(run_command(tmp_path, "info", out / "train.lmdb", "--json")).stdout)
    assert described["pointer_version"] == 5 and described["version"] == 1
