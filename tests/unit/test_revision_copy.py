"""A meta copy of a published split file (writing/revision_copy.py; issue 58, point 7): a change is written
on it as on the file itself, revision 1 naming the published file (its content id, its size), and it is
never uploaded."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from imagefolder_lmdb.reader.revision_format import data_file_path
from imagefolder_lmdb.reader.revisions import opened_env
from imagefolder_lmdb.writing.revision_copy import PublishedCopy, published_copy, refuse_upload, write_meta_copy
from imagefolder_lmdb.writing.revisions import new_revision, read_split
from support.split_files import split_file

FIRST = {"a/0.bin": b"a0" * 50, "a/1.bin": b"a1" * 70, "b/0.bin": b"b0" * 90}
PUBLISHED = PublishedCopy("s3://bucket/data/train.lmdb", '"etag"', 123_456)


def meta_copy(tmp_path: Path) -> tuple[Path, Path]:
    """A split file, and a meta copy of it as a take-down writes one (at another folder's train.lmdb)."""
    (tmp_path / "published").mkdir()
    published = split_file(tmp_path / "published" / "train.lmdb", FIRST, ["a", "b"])
    with opened_env(str(published)).begin() as txn:
        values = {bytes(key): bytes(value) for key, value in txn.cursor() if bytes(key).startswith(b"meta/")}
    copy = tmp_path / "cache" / "train.lmdb"
    write_meta_copy(str(copy), values, PUBLISHED, np.array([len(value) for value in FIRST.values()]))
    return published, copy


def test_a_change_on_a_meta_copy_names_the_published_file(tmp_path: Path, fresh_envs: None) -> None:
    published, copy = meta_copy(tmp_path)
    assert published_copy(str(copy)) == PUBLISHED and published_copy(str(published)) is None
    assert os.path.getsize(copy) < os.path.getsize(published)
    original = read_split(str(published)).current.files[0].id
    added = split_file(tmp_path / "added.lmdb", {"b/1.bin": b"b1" * 10}, ["a", "b"])
    samples = [("a/0.bin", 0), ("a/1.bin", 0), ("b/0.bin", 1), ("b/1.bin", 1)]
    written = new_revision(copy, samples, ["a", "b"], [added], planned_on=None)
    assert written.revision == 2 and written.first_change
    with opened_env(str(copy)).begin() as txn:
        pointer = json.loads(bytes(txn.get(b"meta/json")))
    [first] = [entry for entry in pointer["revisions"] if entry["revision"] == 1]
    assert first["files"] == [{"id": original, "records": 3, "bytes": PUBLISHED.size}]
    assert published_copy(data_file_path(str(copy), original)) == PUBLISHED  # linked into the data folder
    stored = read_split(str(copy)).current.document["stats"]["stored_bytes"]
    assert stored == sum(len(value) for value in FIRST.values()) + 20  # the copied record sizes, not 0


def test_a_meta_copy_is_never_uploaded(tmp_path: Path, fresh_envs: None) -> None:
    from imagefolder_lmdb.publish.upload import publish_any

    published, copy = meta_copy(tmp_path)
    refuse_upload(str(published))  # a split file: uploaded as ever
    with pytest.raises(ValueError, match=r"a copy of the meta of s3://bucket/data/train.lmdb \(no records\)"):
        publish_any(str(copy), "s3://bucket/data/train.lmdb", False, None)
