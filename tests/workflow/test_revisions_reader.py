"""A split of revisions (issue 58), on splits made by the real CLI: revisions written with the writer
API (writing/revisions.py) read as ImageFolder reads the changed tree; readers pinned to the revision
they opened across a pointer replace and DataLoader workers (fork, spawn); ``flatten`` equal to a
fresh conversion; ``gc`` keeping what a kept revision names; a pointer copied alone, and the reader
of an earlier commit, each refused in one line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from torch.utils.data import DataLoader
from torchvision.datasets import ImageFolder

from imagefolder_lmdb.reader import LMDBReader
from imagefolder_lmdb.reader.dataset import LMDBDataset
from imagefolder_lmdb.reader.revisions import MissingDataFileError
from imagefolder_lmdb.verify.command import summary_line, verify
from imagefolder_lmdb.writing.revisions import RevisionConflictError, current_revision, new_revision
from support import BIN, REPO
from support.images import jpeg_bytes
from support.label_trees import write_images

pytestmark = pytest.mark.xdist_group("revisions")

#: The commit before revisions existed: its reader must refuse a pointer by its version.
EARLIER_COMMIT = "2163e45"


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "imagefolder-lmdb"), *map(str, args)], capture_output=True, text=True, check=False)


def convert(source: Path, out: Path) -> Path:
    done = cli("convert", source, out)
    assert done.returncode == 0, done.stdout + done.stderr
    return out / "train.lmdb"


def write_jpegs(root: Path, paths: list[str], seed: int) -> None:
    for offset, path in enumerate(paths):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(jpeg_bytes(seed + offset, (24, 16)))


def listing(tree: Path) -> tuple[list[tuple[str, int]], list[str]]:
    """ImageFolder's samples over ``tree`` as (relative path, class index), and its classes."""
    reference = ImageFolder(str(tree))
    return [(os.path.relpath(path, tree), label) for path, label in reference.samples], reference.classes


@pytest.fixture(scope="module")
def splits(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A split converted by the CLI (``before``), a split of the images added and replaced (``added``),
    the changed tree (``after``: ``before`` with ``added`` over it, one image removed, one moved to
    another class folder, a class folder ``cow`` new between two) and its fresh conversion."""
    root = tmp_path_factory.mktemp("revisions")
    before, added, after = root / "before", root / "added", root / "after"
    write_images(before, [f"{name}/{index}.jpg" for name in ("cat", "dog") for index in range(4)])
    write_jpegs(added, ["cat/5.jpg", "cow/1.jpg", "cow/2.jpg", "dog/1.jpg"], seed=100)  # dog/1.jpg replaced
    shutil.copytree(before, after)
    shutil.copytree(added, after, dirs_exist_ok=True)
    (after / "cat" / "2.jpg").unlink()
    (after / "dog" / "3.jpg").rename(after / "cat" / "3m.jpg")
    return {
        "before": before,
        "after": after,
        "split": convert(before, root / "out"),
        "added": convert(added, root / "out-added"),
        "fresh": convert(after, root / "out-fresh"),
        "root": root,
    }


def copied_split(splits: dict[str, Path], tmp_path: Path) -> Path:
    split = tmp_path / "out" / "train.lmdb"
    split.parent.mkdir()
    shutil.copy2(splits["split"], split)
    return split


def changed_split(splits: dict[str, Path], tmp_path: Path, split: Path | None = None) -> Path:
    """A copy of the split, changed to the ``after`` tree by a revision (its added file copied too)."""
    split = split or copied_split(splits, tmp_path)
    added = tmp_path / "added.lmdb"
    shutil.copy2(splits["added"], added)
    samples, classes = listing(splits["after"])
    written = new_revision(
        split, samples, classes, [added], planned_on=current_revision(split), moved={"cat/3m.jpg": "dog/3.jpg"}
    )
    assert (written.revision, written.first_change) == (2, True)
    assert written.changes == {"added": 4, "removed": 2, "relabelled": 1, "moved": 1}
    return split


def assert_equals_imagefolder(ds: LMDBReader, tree: Path) -> None:
    samples, classes = listing(tree)
    reference = ImageFolder(str(tree))
    assert ds.classes == classes and ds.class_to_idx == reference.class_to_idx
    assert ds.samples == samples and ds.targets == reference.targets
    assert [ds.get_bytes(index) for index in range(len(ds))] == [Path(p).read_bytes() for p, _ in reference.samples]


def test_a_revision_reads_as_imagefolder_over_the_changed_tree(splits: dict[str, Path], tmp_path: Path) -> None:
    split = copied_split(splits, tmp_path)
    inode, stored = os.stat(split).st_ino, split.read_bytes()
    changed_split(splits, tmp_path, split)
    ds = LMDBReader(split, decode="bytes")
    assert ds.revision == 2
    assert_equals_imagefolder(ds, splits["after"])
    first = LMDBReader(split, decode="bytes", revision=1)
    assert first.revision == 1
    assert_equals_imagefolder(first, splits["before"])
    kept = [path for path in Path(f"{split}.d").iterdir() if path.stat().st_ino == inode]
    assert len(kept) == 1 and kept[0].read_bytes() == stored  # the first file moved, not rewritten
    with pytest.raises(ValueError, match=r"revision=1: .* is a single split file"):
        LMDBReader(splits["split"], revision=1)


def test_a_change_planned_on_another_revision_is_refused(splits: dict[str, Path], tmp_path: Path) -> None:
    split = changed_split(splits, tmp_path)
    pointer = split.read_bytes()
    samples, classes = listing(splits["before"])
    with pytest.raises(RevisionConflictError, match="at revision 2, not at a single file"):
        new_revision(split, samples, classes, planned_on=None)
    assert split.read_bytes() == pointer


def _samples_through(ds: LMDBReader, context: str) -> list[tuple[bytes, int]]:
    loader = DataLoader(ds, batch_size=4, num_workers=2, multiprocessing_context=context, collate_fn=list)
    return [(bytes(image), int(target)) for batch in loader for image, target in batch]


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_a_reader_keeps_its_revision_across_a_pointer_replace_and_workers(
    splits: dict[str, Path], tmp_path: Path, context: str
) -> None:
    split = changed_split(splits, tmp_path)
    ds = LMDBDataset(split, decode="bytes")
    expected = [(ds.get_bytes(index), ds.targets[index]) for index in range(len(ds))]
    samples, _ = listing(splits["after"])  # revision 3: the class cow removed, dog renumbered 2 -> 1
    kept = [(path, label - (label == 2)) for path, label in samples if not path.startswith("cow/")]
    new_revision(split, kept, ["cat", "dog"], planned_on=2)
    assert LMDBReader(split).revision == 3 and LMDBReader(split).targets == [label for _, label in kept]
    assert _samples_through(ds, context) == expected
    assert ds.revision == 2 and [ds.get_bytes(index) for index in range(len(ds))] == [b for b, _ in expected]


def test_flatten_writes_what_a_fresh_conversion_writes(splits: dict[str, Path], tmp_path: Path) -> None:
    split = changed_split(splits, tmp_path)
    done = cli("flatten", split, tmp_path / "flat.lmdb")
    assert done.returncode == 0, done.stderr
    flat, fresh = LMDBReader(tmp_path / "flat.lmdb", decode="bytes"), LMDBReader(splits["fresh"], decode="bytes")
    assert flat.revision is None and (flat.samples, flat.classes) == (fresh.samples, fresh.classes)
    assert [flat.get_bytes(i) for i in range(len(flat))] == [fresh.get_bytes(i) for i in range(len(fresh))]
    for name in ("image_sizes", "checksums", "storage_codes"):
        assert (getattr(flat, name) == getattr(fresh, name)).all(), name
    differ = {
        key
        for key in {*flat.meta_document, *fresh.meta_document}
        if flat.meta_document.get(key) != fresh.meta_document.get(key)
    }
    # what the convert side passes new_revision(document=...): the conversion's own
    assert differ <= {"created", "made_from", "source", "locations"}, differ
    assert cli("verify", tmp_path / "flat.lmdb", "--full").returncode == 0


def test_gc_removes_only_what_no_kept_revision_names(splits: dict[str, Path], tmp_path: Path) -> None:
    split = changed_split(splits, tmp_path)
    pinned = LMDBDataset(split, decode="bytes", revision=2)
    samples, classes = listing(splits["after"])
    new_revision(split, samples[:3], classes, planned_on=2)  # revision 3: only cat/0, cat/1, cat/3 of the first file
    files = sorted(Path(f"{split}.d").iterdir())
    assert cli("gc", split.parent).returncode == 0 and sorted(Path(f"{split}.d").iterdir()) == files
    done = cli("gc", split.parent, "--keep", "1")
    assert done.returncode == 0 and "revisions 1, 2 dropped" in done.stdout, done.stdout + done.stderr
    assert len(list(Path(f"{split}.d").iterdir())) == 1 and len(LMDBReader(split)) == 3  # the added file gone
    with pytest.raises(MissingDataFileError, match="revision=2 reads data files that are not there"):
        _samples_through(pinned, "fork")  # new workers of a reader pinned to revision 2, whose added file is gone


def test_a_pointer_copied_alone_is_one_line(splits: dict[str, Path], tmp_path: Path) -> None:
    split = changed_split(splits, tmp_path)
    alone = tmp_path / "copy" / "train.lmdb"
    alone.parent.mkdir()
    shutil.copy2(split, alone)
    with pytest.raises(
        MissingDataFileError, match=r"revision=2 reads data files that are not there: .*train\.lmdb\.d/"
    ):
        LMDBReader(alone)
    done = cli("info", alone)
    lines = (done.stdout + done.stderr).strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1 and "revision=2" in lines[0], lines
    report = verify(str(alone))[0]  # `imagefolder-lmdb verify`'s check, in this process
    assert not report["ok"] and "\n" not in summary_line(report) and "revision=2" in summary_line(report)


def test_the_reader_of_an_earlier_commit_refuses_a_pointer_by_its_version(
    splits: dict[str, Path], tmp_path: Path
) -> None:
    split = changed_split(splits, tmp_path)
    earlier = tmp_path / "earlier"
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", EARLIER_COMMIT, "src"], capture_output=True, check=False
    )
    assert archive.returncode == 0, archive.stderr
    earlier.mkdir()
    subprocess.run(["tar", "-x", "-C", str(earlier)], input=archive.stdout, check=True)
    code = f"from imagefolder_lmdb.reader import LMDBReader\nLMDBReader({str(split)!r})"
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(earlier / "src")},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1 and "FormatError" in done.stderr
    assert (
        "imagefolder-lmdb version 5, but this reader knows version 1 and version 2 and version 3 and version 4 only"
        in done.stderr
    )
