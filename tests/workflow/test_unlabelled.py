"""A competition's tree through the real command (issue 59, points 2 and 5): ``train/`` labelled by
``train.csv`` beside it and a flat, unlabelled ``test/``. ``--labels kaggle/train.csv`` labels train
alone; test needs ``--unlabelled`` (refused naming it without); the test split is format version 6,
read with -1 targets and train's classes, batched, sampled, described by ``info`` and checked by
``verify``, and refused by the readers before it. A label file moved with the same content leaves
the datasets up to date, also those converted before this change, its recorded path "as converted"."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import torch
from torch.utils.data import DataLoader

from imagefolder_lmdb import LMDBDataset
from imagefolder_lmdb.sampler import ElasticDistributedSampler
from support import BIN, REPO
from support.earlier_readers import open_with_reader_at
from support.label_trees import write_files, write_images

#: Readers before version 6: the commit before revisions, and main before this change.
EARLIER_COMMITS = ("2163e45", "2b2ab25")
TRAIN = {f"img{n}.jpg": "cat" if n % 3 else "dog" for n in range(7)}
TEST = ["a.jpg", "b.jpg", "c.png", "d.jpg"]


def imagefolder_lmdb(
    *arguments: str | Path, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    command = [str(BIN / "imagefolder-lmdb"), *map(str, arguments)]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, check=False, cwd=cwd, env=env)


def kaggle_tree(root: Path) -> None:
    """``kaggle/train/`` (flat, ids without extension in ``kaggle/train.csv``) and ``kaggle/test/``."""
    write_images(root / "kaggle" / "train", list(TRAIN))
    rows = "".join(f"{name.removesuffix('.jpg')},{label}\n" for name, label in TRAIN.items())
    write_files(root / "kaggle", {"train.csv": "id,label\n" + rows, "test/notes.txt": "not an image"})
    write_images(root / "kaggle" / "test", TEST)


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("unlabelled")
    kaggle_tree(root)
    done = imagefolder_lmdb("convert", "kaggle", "out", "--labels", "kaggle/train.csv", "--unlabelled", cwd=root)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "test: no labels (--unlabelled)" in done.stdout + done.stderr
    assert "train: labels from kaggle/train.csv (it lies beside it" in done.stdout + done.stderr
    (root / "first-run.txt").write_text(done.stdout + done.stderr)
    return root


def test_an_unlabelled_flat_split_given_nothing_is_refused_naming_the_flag(tmp_path: Path) -> None:
    kaggle_tree(tmp_path)
    done = imagefolder_lmdb("convert", "kaggle", "out", "--labels", "kaggle/train.csv", cwd=tmp_path)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "test: " in done.stderr and "holds images but no class folders" in done.stderr
    assert "--unlabelled test" in done.stderr and "--labels test=FILE" in done.stderr
    assert not (tmp_path / "out" / "train.lmdb").exists()


def test_a_label_file_of_one_split_given_for_several_names_the_split_and_the_fix(tmp_path: Path) -> None:
    kaggle_tree(tmp_path)
    (tmp_path / "kaggle" / "train.csv").rename(tmp_path / "labels.csv")  # beside no split: it labels every split
    done = imagefolder_lmdb("convert", "kaggle", "out", "--labels", "labels.csv", cwd=tmp_path)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "--labels labels.csv: the file labels the images of train, not those of test (" in done.stderr
    assert "give --labels train=labels.csv to label train alone (and --unlabelled test" in done.stderr
    assert "or convert train alone with --split train" in done.stderr


def test_the_unlabelled_split_reads_with_minus_one_targets_and_trains_classes(converted: Path) -> None:
    train = LMDBDataset(str(converted / "out" / "train.lmdb"))
    test = LMDBDataset(str(converted / "out" / "test.lmdb"), transform=lambda image: torch.zeros(2))
    assert train.classes == ["cat", "dog"] and test.classes == train.classes
    assert test.class_to_idx == train.class_to_idx
    assert len(test) == len(TEST) and [path for path, _ in test.samples] == sorted(TEST)
    assert test.targets == [-1] * len(TEST) and test.label_kind == "none"
    assert test.class_counts().tolist() == [0, 0] and "Labels: none" in repr(test)
    assert train.targets == [train.class_to_idx[TRAIN[path]] for path, _ in train.samples]
    images, targets = next(iter(DataLoader(test, batch_size=3)))
    assert tuple(images.shape) == (3, 2) and targets.tolist() == [-1, -1, -1]
    sampler = ElasticDistributedSampler(test, num_replicas=2, rank=0, shuffle=True, seed=1)
    assert all(test[index][1] == -1 for index in sampler)
    with pytest.raises(ValueError, match=r"is a split without labels .*: a view selects labelled images"):
        LMDBDataset([str(converted / "out" / "train.lmdb"), str(converted / "out" / "test.lmdb")])


def test_info_and_verify_say_what_the_splits_are(converted: Path) -> None:
    info = imagefolder_lmdb("info", "out", cwd=converted)
    assert info.returncode == 0, info.stderr
    test_part = info.stdout.split("test.lmdb:", 1)[1].split("train.lmdb:", 1)[0]
    assert "format version 6" in test_part and "labels: none (a split without labels: each target -1" in test_part
    train_part = info.stdout.split("train.lmdb:", 1)[1]
    assert f"labels from: {converted / 'kaggle' / 'train.csv'} (columns: file id, label label)" in train_part
    checked = imagefolder_lmdb("verify", "out/test.lmdb", "out/train.lmdb", "--full", cwd=converted)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.count("OK ") == 2


@pytest.mark.parametrize("commit", EARLIER_COMMITS)
def test_an_earlier_reader_refuses_version_6_by_its_version(converted: Path, tmp_path: Path, commit: str) -> None:
    done = open_with_reader_at(commit, converted / "out" / "test.lmdb", tmp_path)
    assert done.returncode == 1 and "FormatError" in done.stderr
    assert (
        "imagefolder-lmdb version 6, but this reader knows version 1 and version 2 and version 3 and version 4 only"
        in done.stderr
    )


def test_a_moved_label_file_of_the_same_content_is_up_to_date(converted: Path) -> None:
    (converted / "moved").mkdir(exist_ok=True)
    shutil.copy2(converted / "kaggle" / "train.csv", converted / "moved" / "train.csv")
    (converted / "kaggle" / "train.csv").rename(converted / "kaggle" / "old.csv")
    try:
        again = imagefolder_lmdb(
            "convert", "kaggle", "out", "--labels", "train=moved/train.csv", "--unlabelled", "test", cwd=converted
        )
        assert again.returncode == 0, again.stderr[-3000:]
        assert "Nothing to convert" in again.stdout + again.stderr
        assert f"labels from: {converted / 'kaggle' / 'train.csv'} (as converted)" in again.stdout + again.stderr
    finally:
        (converted / "kaggle" / "old.csv").rename(converted / "kaggle" / "train.csv")


def test_a_dataset_converted_before_this_change_stays_up_to_date_after_its_label_file_moved(tmp_path: Path) -> None:
    """Converted by main before issue 59's change (its workflow and package), the label file then moved."""
    archive = subprocess.run(
        [
            "git",
            "-C",
            str(REPO),
            "archive",
            EARLIER_COMMITS[1],
            "src",
            "Snakefile",
            "rules",
            "config",
            "profiles",
            "envs",
            "scripts",
        ],
        capture_output=True,
        check=False,
    )
    assert archive.returncode == 0, archive.stderr
    (tmp_path / "before").mkdir()
    subprocess.run(["tar", "-x", "-C", str(tmp_path / "before")], input=archive.stdout, check=True)
    write_images(tmp_path / "photos", list(TRAIN))
    write_files(
        tmp_path, {"labels.csv": "id,label\n" + "".join(f"{n.removesuffix('.jpg')},{c}\n" for n, c in TRAIN.items())}
    )
    earlier = {**os.environ, "PYTHONPATH": str(tmp_path / "before" / "src")}
    done = imagefolder_lmdb("convert", "photos", "out", "--labels", "labels.csv", cwd=tmp_path, env=earlier)
    assert done.returncode == 0, done.stderr[-3000:]
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "labels.csv").rename(tmp_path / "elsewhere" / "labels.csv")
    again = imagefolder_lmdb("convert", "photos", "out", "--labels", "elsewhere/labels.csv", cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "Nothing to convert" in again.stdout + again.stderr
