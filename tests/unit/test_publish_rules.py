"""A publish's pure parts (issue 49): the replace rule compares the recipe both datasets record
(run/made_from.py), or a legacy object's source and encode settings; what a prefix URL names; the
note where obstore uploads. Against a real bucket: tests/workflow/test_publish.py."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from imagefolder_lmdb.classes.plan import ClassSource
from imagefolder_lmdb.publish.pending import UploadRecord, obstore_note
from imagefolder_lmdb.publish.replace_rule import Found, replace_problem
from imagefolder_lmdb.remote.listing import is_prefix
from imagefolder_lmdb.run.made_from import made_from

ENCODE = {
    "reencode": "auto",
    "quality": 95,
    "max_side": None,
    "short_side": None,
    "check": "decode",
    "on_error": "fail",
}
URL = "s3://b/imagenet/train.lmdb"


def document(root: Path, **encode: Any) -> dict[str, Any]:
    """A dataset's meta as write_meta writes the parts the rule reads: source, settings, made_from."""
    settings = {**ENCODE, **encode}
    split = {"source": str(root), "layout": "imagefolder", "root": None, "devkit": None, "val_labels": None}
    return {
        "classes": [],
        "source": {"path": str(root), "inside": None},
        "settings": {"encode": settings},
        "made_from": made_from(split, settings, ClassSource("source")),
        "stats": {"skipped": []},
    }


def found(document: dict[str, Any] | None) -> Found:
    return Found(1234, datetime(2026, 12, 5, 9, 30, tzinfo=UTC), '"e"', document)


def test_other_settings_or_another_source_are_refused_and_the_same_recipe_is_replaced(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    local = document(tmp_path / "a", short_side=64)
    assert replace_problem(URL, found(document(tmp_path / "a", short_side=64)), local) is None
    problem = replace_problem(URL, found(document(tmp_path / "a")), local)
    assert problem == (
        f"{URL} holds a dataset made with encode short_side None, not 64 (1,234 bytes, 2026-12-05 09:30 UTC): not "
        "replaced. Give --overwrite to replace it (jobs reading it stop with the object-changed error)"
    )
    other = replace_problem(URL, found(document(tmp_path / "b", short_side=64)), local)
    assert other is not None and f"made from {tmp_path / 'b'}, not {tmp_path / 'a'} (" in other
    assert "an object not made by imagefolder-lmdb" in (replace_problem(URL, found(None), local) or "")


def test_an_object_without_made_from_is_compared_by_its_source_and_encode_settings(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    local = document(tmp_path / "a")
    legacy = copy.deepcopy(local)
    del legacy["made_from"]
    del legacy["settings"]["encode"]["short_side"]  # a setting added since: no difference the user made
    assert replace_problem(URL, found(legacy), local) is None
    legacy["settings"]["encode"]["quality"] = 80
    legacy["source"]["inside"] = "train"
    problem = replace_problem(URL, found(legacy), local) or ""
    assert " holds a dataset made with root train, not none; with encode quality 80, not 95 (" in problem


def test_a_url_names_a_prefix_unless_it_names_a_dataset() -> None:
    for prefix in ("s3://b", "s3://b/", "s3://b/imagenet", "s3://b/imagenet/", "gs://b/x/train.lmdb/"):
        assert is_prefix(prefix), prefix
    for url in ("s3://b/imagenet/train.lmdb", "https://h/imagenet", "http://h/a/"):
        assert not is_prefix(url), url


def test_obstore_names_the_lifecycle_rule_where_a_kill_can_leave_a_pending_upload(tmp_path: Path) -> None:
    assert obstore_note(URL, 5 << 20, 16 << 20) == []  # one request: nothing can be left pending
    [note] = obstore_note(URL, 40 << 20, 16 << 20)
    assert "can neither list nor abort an upload" in note and "AbortIncompleteMultipartUpload" in note
    record = UploadRecord.in_folder(tmp_path, URL)
    record.write("id-1", "train.lmdb")
    assert record.recorded() == "id-1" and UploadRecord(f"{URL}.other", record.path).recorded() is None
    record.remove()
    assert record.recorded() is None
