"""Which class list each split uses (src/imagefolder_lmdb/classes/plan.py), the words count_check
builds from it, and the class list files as editors save them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from imagefolder_lmdb.classes.lists import read_class_file
from imagefolder_lmdb.classes.plan import ClassSource, plan_classes
from imagefolder_lmdb.config.shards import too_many_shards
from imagefolder_lmdb.steps.count_check import class_list_of


def config_of(classes: Any, *splits: tuple[str, bool]) -> dict[str, Any]:
    return {"classes": classes, "splits": {name: {"share_classes": share} for name, share in splits}}


def test_without_a_list_the_first_sharing_split_gives_the_classes() -> None:
    plan = plan_classes(config_of(None, ("own", False), ("train", True), ("val", True), ("test", True)))
    assert plan.first == "train"
    assert [plan.source(split).words() for split in ("own", "train", "val")] == [
        "this split's own (share_classes: false)",
        "from this split's source, shared with val, test",
        "shared from train",
    ]
    assert [plan.shared_from(split) for split in ("own", "train", "val")] == [None, None, "train"]
    assert plan.wanted("val") is None


def test_a_single_split_names_no_one_it_shares_with() -> None:
    assert plan_classes(config_of(None, ("train", True))).source("train").words() == "from this split's source"


def test_a_configured_list_is_every_sharing_splits(tmp_path: Path) -> None:
    listed = tmp_path / "classes.txt"
    listed.write_text("b\na\n")
    plan = plan_classes(config_of(str(listed), ("train", True), ("val", True), ("own", False)))
    assert plan.first is None
    assert plan.source("val") == ClassSource("config", names=["a", "b"], listed_in=str(listed))
    assert plan.source("val").words() == f"from {listed}"
    assert plan.wanted("train") == ["a", "b"] and plan.wanted("own") is None
    assert plan.shared_from("val") is None
    assert plan_classes(config_of(["b", "a"], ("train", True))).source("train").words() == (
        "from the config's classes: list"
    )
    assert plan_classes(config_of("imagenet1k", ("train", True))).source("train").words() == (
        "from imagenet1k, the list shipped with imagefolder-lmdb"
    )


def test_the_param_is_data_that_comes_back_whole() -> None:
    source = ClassSource("source", shared_with=("val",))
    param = source.as_param()
    assert param == {"kind": "source", "names": None, "listed_in": None, "shared_from": None, "shared_with": ["val"]}
    assert ClassSource.from_param(param) == source
    assert ClassSource.from_param(None) == ClassSource("source")


def test_count_check_takes_names_and_words_from_the_param(tmp_path: Path) -> None:
    configured = class_list_of(ClassSource("config", names=["a", "b"]), None)
    assert configured is not None and (configured.names, configured.explicit) == (["a", "b"], True)
    assert configured.origin == "from the config's classes: list"
    assert class_list_of(ClassSource("own"), None) is None


@pytest.mark.parametrize("bom", ["\ufeff", ""])
def test_a_class_file_saved_with_a_byte_order_mark(tmp_path: Path, bom: str) -> None:
    listed = tmp_path / "classes.txt"
    listed.write_text(f"{bom}alpha\nbeta # the second\n", encoding="utf-8")
    assert read_class_file(str(listed)) == ["alpha", "beta"]


def test_more_shards_than_images_is_refused_beyond_the_default() -> None:
    assert too_many_shards("train", 10000, 12) == (
        "config key splits.train.shards: 10000 is more than the 12 images the source holds (9988 encode jobs "
        "would have nothing to do); set shards: 12 or fewer"
    )
    assert too_many_shards("train", 20, 20) is None
    assert too_many_shards("train", 16, 3) is None  # the default: a few empty shards cost seconds
    assert too_many_shards("train", 17, 3) is not None
    assert too_many_shards("train", 40, 0) is None  # no images: count_check says so in its own words
