"""What a dataset is made from, judged against what it would be made from now (run/made_from.py):
a copy on another filesystem with the same names, sizes and times is the same source; on the same
filesystem a file written in place is a change; settings that change records are differences."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

from imagefolder_lmdb.classes.plan import ClassSource
from imagefolder_lmdb.run.made_from import judge, made_from, recipe_differences
from imagefolder_lmdb.sources.source_record import LOOSE_FILES, record_folder

ENCODE = {
    "reencode": "auto",
    "quality": 95,
    "max_side": None,
    "short_side": None,
    "check": "decode",
    "on_error": "fail",
}


def tree(root: Path) -> Path:
    for name in ("ants", "bees"):
        (root / name / "deeper").mkdir(parents=True)
        (root / name / "1.jpg").write_bytes(b"one")
        (root / name / "deeper" / "2.jpg").write_bytes(b"two")
    (root / "README").write_text("beside the classes")
    return root


def split(root: Path) -> dict[str, Any]:
    return {"source": str(root), "layout": "imagefolder", "root": None, "devkit": None, "val_labels": None}


def now(root: Path, encode: dict[str, Any] = ENCODE, classes: ClassSource | None = None) -> dict[str, Any]:
    return made_from(split(root), encode, classes or ClassSource("source"))


def test_each_class_folder_is_walked_to_the_bottom_and_loose_files_are_a_group(tmp_path: Path) -> None:
    root = tree(tmp_path / "data")
    before = record_folder(str(root))
    assert sorted(before.entries) == [LOOSE_FILES, "ants", "bees"]
    nested = root / "bees" / "deeper" / "2.jpg"
    stat = nested.stat()
    nested.write_bytes(b"TWO")  # the same size, its time put back: only the hints see it
    os.utime(nested, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    after = record_folder(str(root))
    assert after.changed(before) == []
    assert after.edited_in_place(before) == ["bees"]
    (root / "ants" / "deeper" / "3.jpg").write_bytes(b"three")
    assert record_folder(str(root)).changed(before) == ["ants"]


def test_a_copy_on_another_filesystem_is_the_same_source_and_an_edit_in_place_is_not(tmp_path: Path) -> None:
    root = tree(tmp_path / "data")
    recorded = {"made_from": now(root)}
    assert judge(recorded, now(root)).state == "same"
    elsewhere = copy.deepcopy(recorded)  # what a copy with times kept gives: other inodes, another device
    elsewhere["made_from"]["source"]["hints"] = {name: "other" for name in elsewhere["made_from"]["source"]["hints"]}
    elsewhere["made_from"]["source"]["device"] = -1
    assert judge(elsewhere, now(root)).state == "same"
    edited = copy.deepcopy(recorded)
    edited["made_from"]["source"]["hints"]["ants"] = "written since"
    verdict = judge(edited, now(root))
    assert verdict.state == "changed" and list(verdict.changed_groups) == ["ants"]
    assert "written in place" in verdict.differences[0]


def test_settings_that_change_records_are_differences_in_words(tmp_path: Path) -> None:
    root = tree(tmp_path / "data")
    recorded = {"made_from": now(root)}
    listed = ClassSource("config", names=["bees", "ants"])
    verdict = judge(recorded, now(root, {**ENCODE, "quality": 90}, listed))
    assert verdict.differences == [
        "with the class list from its source's folders, not [ants, bees] (2 classes)",
        "with encode quality 95, not 90",
    ]
    assert judge(recorded, now(root, {**ENCODE, "on_error": "skip"})).state == "same"  # by itself, no record changes
    later = now(root, {**ENCODE, "new_key": 1})  # a key the file's settings lack came after it
    assert judge(recorded, later).state == "same"
    assert judge({"classes": ["ants"]}, now(root)).state == "legacy"
    assert judge(None, now(root)).state == "new"


def test_a_label_file_changed_at_its_path_is_a_changed_input(tmp_path: Path) -> None:
    root, labels = tree(tmp_path / "data"), tmp_path / "labels.csv"
    labels.write_text("a,1\n")
    with_labels = {**split(root), "val_labels": str(labels)}
    recorded = {"made_from": made_from(with_labels, ENCODE, ClassSource("source"))}
    labels.write_text("a,2\n")
    current = made_from(with_labels, ENCODE, ClassSource("source"))
    assert recipe_differences(recorded["made_from"]["recipe"], current["recipe"]) == []  # not a setting
    assert judge(recorded, current).differences == [f"val_labels file {os.path.realpath(labels)} changed"]
