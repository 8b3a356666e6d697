"""A split's first revision made straight from N data files (issue 60, writing/first_revision.py), on small
files written here: the files' records concatenated are the split, read as the one file of them all reads;
its document sums the files' counts; files of other class lists are refused; a rerun over the same files
writes the same split."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from imagefolder_lmdb.reader import LMDBReader, close_all_envs
from imagefolder_lmdb.reader.revision_format import data_folder
from imagefolder_lmdb.writing.first_revision import first_revision
from support.split_files import split_file

SAMPLES = {"a/0.bin": b"a0" * 50, "a/1.bin": b"a1" * 70, "b/0.bin": b"b0" * 30, "b/1.bin": b"b1" * 90}


def parts(tmp_path: Path, cuts: list[int], classes: list[str] | None = None) -> list[Path]:
    """SAMPLES cut into data files at ``cuts`` (in order)."""
    items, bounds = list(SAMPLES.items()), [0, *cuts, len(SAMPLES)]
    return [
        split_file(tmp_path / f"part{n}.lmdb", dict(items[start:stop]), classes or ["a", "b"])
        for n, (start, stop) in enumerate(itertools.pairwise(bounds))
    ]


def test_the_files_records_in_order_are_the_split(tmp_path: Path, fresh_envs: None) -> None:
    whole = split_file(tmp_path / "whole.lmdb", SAMPLES, ["a", "b"])
    written = first_revision(tmp_path / "out" / "train.lmdb", parts(tmp_path, [1, 3]))
    assert written.revision == 1 and len(written.data_files) == 3
    split, one = (
        LMDBReader(str(tmp_path / "out" / "train.lmdb"), decode="bytes"),
        LMDBReader(str(whole), decode="bytes"),
    )
    assert split.samples == one.samples and list(split.targets) == list(one.targets) and split.classes == one.classes
    assert [split.get_bytes(i) for i in range(len(split))] == list(SAMPLES.values())
    stats = split.meta_document["stats"]
    assert stats["stored_bytes"] == one.meta_document["stats"]["stored_bytes"] == sum(map(len, SAMPLES.values()))
    assert split.meta_document["source"]["images"] == 4 and split.meta_document["length"] == 4
    close_all_envs()


def test_a_rerun_over_the_same_files_writes_the_same_split(tmp_path: Path, fresh_envs: None) -> None:
    files = parts(tmp_path, [2])
    first_revision(tmp_path / "out" / "train.lmdb", files)
    names = sorted(path.name for path in Path(data_folder(str(tmp_path / "out" / "train.lmdb"))).iterdir())
    first_revision(tmp_path / "out" / "train.lmdb", files)
    assert sorted(path.name for path in Path(data_folder(str(tmp_path / "out" / "train.lmdb"))).iterdir()) == names
    assert LMDBReader(str(tmp_path / "out" / "train.lmdb"), decode="bytes").samples[3] == ("b/1.bin", 1)
    close_all_envs()


def test_files_of_other_class_lists_are_refused(tmp_path: Path, fresh_envs: None) -> None:
    first = split_file(tmp_path / "first.lmdb", {"a/0.bin": b"x" * 10}, ["a", "b"])
    other = split_file(tmp_path / "other.lmdb", {"a/1.bin": b"y" * 10}, ["a", "b", "c"])
    with pytest.raises(ValueError, match="its classes differ"):
        first_revision(tmp_path / "out" / "train.lmdb", [first, other])
    assert not (tmp_path / "out" / "train.lmdb").exists()
