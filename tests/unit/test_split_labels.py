"""Which split a label file labels in a conversion of several splits (run/split_labels.py, issue 59):
the one whose folder holds it, else the one it lies beside and is named after; ``SPLIT=FILE`` and
``--unlabelled`` by name; names of no split refused in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from imagefolder_lmdb.config.settings import Setting
from imagefolder_lmdb.run.split_labels import SplitLabelsError, owning_split, split_label_settings

ANY = ("splits", "*", "labels")


@pytest.fixture
def splits(tmp_path: Path) -> dict[str, dict[str, str]]:
    for name in ("train", "val", "test"):
        (tmp_path / "data" / name / "cat").mkdir(parents=True)
    return {name: {"source": str(tmp_path / "data" / name)} for name in ("train", "val", "test")}


@pytest.mark.parametrize(
    ("path", "owner"),
    [
        ("data/train.csv", "train"),
        ("data/train_labels.csv", "train"),
        ("data/trainLabels.csv", "train"),
        ("data/val/labels.jsonl", "val"),
        ("data/test/deep/er/labels.csv", "test"),
        ("data/labels.csv", None),  # named after no split
        ("train.csv", None),  # beside no split folder
    ],
)
def test_a_label_file_belongs_to_the_split_that_holds_it_or_that_it_lies_beside(
    splits: dict[str, dict[str, str]], tmp_path: Path, path: str, owner: str | None
) -> None:
    assert owning_split(str(tmp_path / path), splits) == owner


def test_split_equals_file_and_unlabelled_name_their_splits(splits: dict[str, dict[str, str]]) -> None:
    given = [Setting(ANY, "train=t.csv", "--labels train=t.csv"), Setting(ANY, "*", "--unlabelled")]
    settings, notes = split_label_settings(given, splits)
    assert [(s.path, s.value) for s in settings] == [
        (("splits", "train", "labels"), "t.csv"),
        (("splits", "val", "labels"), "unlabelled"),
        (("splits", "test", "labels"), "unlabelled"),
    ]
    assert notes == [
        f"{name}: no labels (--unlabelled): each target -1, the other splits' classes" for name in ("val", "test")
    ]


@pytest.mark.parametrize(
    ("value", "given_as", "words"),
    [
        ("cow=t.csv", "--labels cow=t.csv", "there is no split cow in this conversion (it converts train, val, test)"),
        ("cow", "--unlabelled cow", "there is no split cow in this conversion"),
        ("*", "--unlabelled", "--unlabelled alone would leave every split (train, val, test) without labels"),
    ],
)
def test_names_of_no_split_are_refused_in_one_line(
    splits: dict[str, dict[str, str]], value: str, given_as: str, words: str
) -> None:
    with pytest.raises(SplitLabelsError, match=words.replace("(", r"\(").replace(")", r"\)")):
        split_label_settings([Setting(ANY, value, given_as)], splits)
