"""One class list for every split: splits with different class folders get the same
``class_to_idx``; images outside the list are set aside and counted, never stored under another
class's index; a ``classes:`` list converts a subset; ``share_classes: false`` keeps ImageFolder's
per-folder list."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from torchvision.datasets import ImageFolder

from imagefolder_lmdb.reader import LMDBDataset, close_all_envs
from support.workflow import run_snakemake, write_config


@pytest.fixture(scope="module")
def train_and_val(image_tree: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """train: the test tree (classes A B C D); val: A C D without B, plus a class E train lacks.
    Read-only: the module's tests convert them."""
    trees = tmp_path_factory.mktemp("train-and-val")
    train, val = trees / "train", trees / "val"
    shutil.copytree(image_tree, train)
    shutil.copytree(image_tree, val)
    classes = sorted(p.name for p in train.iterdir())
    shutil.rmtree(val / classes[1])
    shutil.copytree(train / classes[0], val / "zz-not-in-train")
    return train, val


def convert_splits(workdir: Path, splits: dict, **sections: object) -> str:
    workdir.mkdir(parents=True, exist_ok=True)
    config = write_config(workdir, splits, **sections)
    return run_snakemake(workdir, "--configfile", str(config)).check().output


@pytest.fixture(scope="module")
def shared_and_own(train_and_val: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """train and val converted in one run, val twice: as ``val``, sharing train's class list, and as
    ``val_own`` with ``share_classes: false``; the run's folder and its output. Read-only."""
    train, val = train_and_val
    splits = {
        "train": {"source": str(train), "shards": 2},
        "val": {"source": str(val), "shards": 2},
        "val_own": {"source": str(val), "shards": 2, "share_classes": False},
    }
    workdir = tmp_path_factory.mktemp("shared-and-own") / "run"
    return workdir, convert_splits(workdir, splits)


def counts(workdir: Path, split: str) -> dict:
    return json.loads((workdir / "work" / split / "counts.json").read_text())


def verify_report(workdir: Path, split: str) -> dict:
    return json.loads((workdir / "results" / f"{split}.verify.json").read_text())


def test_splits_with_different_class_folders_share_train_indices(
    train_and_val: tuple[Path, Path], shared_and_own: tuple[Path, str]
):
    train, val = train_and_val
    workdir, output = shared_and_own
    close_all_envs()
    train_ds = LMDBDataset(workdir / "results" / "train.lmdb")
    val_ds = LMDBDataset(workdir / "results" / "val.lmdb")
    assert val_ds.classes == train_ds.classes == ImageFolder(str(train)).classes
    assert val_ds.class_to_idx == train_ds.class_to_idx

    own = ImageFolder(str(val))  # what ImageFolder alone gives val: other indices for C and D
    kept = [(path, own.classes[label]) for path, label in own.samples if own.classes[label] in train_ds.class_to_idx]
    expected = [(str(Path(path).relative_to(val)), train_ds.class_to_idx[name]) for path, name in kept]
    assert val_ds.samples == expected
    assert own.class_to_idx != val_ds.class_to_idx, "the test must hold classes ImageFolder numbers differently"

    outside = counts(workdir, "val")["outside_class_list"]
    extra_images = len(list((val / "zz-not-in-train").iterdir()))
    assert outside["per_class"] == {"zz-not-in-train": extra_images}
    assert not any(path.startswith("zz-not-in-train/") for path, _ in val_ds.samples)
    class_list = verify_report(workdir, "val")["class_list"]
    assert class_list == {
        "origin": "shared from train",
        "images_outside": extra_images,
        "classes_outside": 1,
        "classes_unread": 0,
    }
    assert f"classes: shared from train; {extra_images} images of 1 other class set aside" in output
    assert "classes: from this split's source, shared with val" in output
    missing = train_ds.classes[1]
    assert f"class {missing!r} has no images in this split" in output


def test_share_classes_false_keeps_imagefolders_own_list(
    train_and_val: tuple[Path, Path], shared_and_own: tuple[Path, str]
):
    _, val = train_and_val
    workdir, output = shared_and_own
    close_all_envs()
    val_ds = LMDBDataset(workdir / "results" / "val_own.lmdb")
    reference = ImageFolder(str(val))
    assert val_ds.class_to_idx == reference.class_to_idx
    assert val_ds.targets == reference.targets
    assert "classes: this split's own (share_classes: false)" in output


def test_expected_classes_names_what_a_split_lacks_and_what_lies_outside(
    train_and_val: tuple[Path, Path], tmp_path: Path
):
    train, val = train_and_val
    classes = sorted(p.name for p in train.iterdir())
    splits = {"train": {"source": str(train)}, "val": {"source": str(val), "expected_classes": len(classes)}}
    workdir = tmp_path / "run"
    workdir.mkdir()
    config = write_config(workdir, splits)
    run = run_snakemake(workdir, "--configfile", str(config))
    assert run.returncode != 0
    assert f"{len(classes) - 1} classes found, expected_classes is {len(classes)}" in run.output
    assert f"missing from this split: {classes[1]}" in run.output
    assert "outside the class list (set aside): zz-not-in-train" in run.output


def test_classes_key_converts_a_subset_in_sorted_order(image_tree: Path, tmp_path: Path):
    classes = sorted(p.name for p in image_tree.iterdir())
    subset = [classes[3], classes[1]]  # unsorted on purpose: index = position in the sorted list
    list_file = tmp_path / "subset.txt"
    list_file.write_text("# two of the four\n" + "\n".join(subset) + "\n\n")
    splits = {"train": {"source": str(image_tree), "shards": 2}}
    output = convert_splits(tmp_path / "run", splits, classes=str(list_file))
    close_all_envs()
    ds = LMDBDataset(tmp_path / "run" / "results" / "train.lmdb")
    assert ds.classes == sorted(subset)
    subset_tree = tmp_path / "subset-tree"
    for name in subset:
        shutil.copytree(image_tree / name, subset_tree / name)
    reference = ImageFolder(str(subset_tree))
    assert ds.class_to_idx == reference.class_to_idx
    assert ds.samples == [(str(Path(p).relative_to(subset_tree)), t) for p, t in reference.samples]
    outside = counts(tmp_path / "run", "train")["outside_class_list"]
    assert set(outside["per_class"]) == {classes[0], classes[2]}
    assert f"classes: from {list_file}" in output


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (["n00000000"], "names 1 class(es) the source does not hold: n00000000"),
        (["a", "a"], "listed more than once: a"),
        ([], "the class list is empty"),
    ],
)
def test_unusable_class_list_stops_naming_it(image_tree: Path, tmp_path: Path, value: list[str], message: str):
    if value == ["n00000000"]:
        value = [*sorted(p.name for p in image_tree.iterdir())[:1], "n00000000"]
    workdir = tmp_path / "run"
    workdir.mkdir()
    config = write_config(workdir, {"train": {"source": str(image_tree)}}, classes=value)
    run = run_snakemake(workdir, "--configfile", str(config))
    assert run.returncode != 0
    assert message in run.output
    assert not (workdir / "results" / "train.lmdb").exists()
