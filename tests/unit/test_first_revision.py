"""A split's first revision made straight from N data files (issue 60, writing/first_revision.py), on small
files written here: the files' records concatenated are the split, read as the one file of them all reads;
its document sums the files' counts; files of other class lists are refused; a rerun over the same files
writes the same split."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from imagefolder_lmdb.reader import META_KEYS, LMDBReader, checksum, close_all_envs, encode_meta, record_key
from imagefolder_lmdb.reader.revision_format import data_folder
from imagefolder_lmdb.writing.first_revision import first_revision
from imagefolder_lmdb.writing.lmdb_writer import LMDBWriter
from imagefolder_lmdb.writing.meta_document import build_meta
from imagefolder_lmdb.writing.record_locations import add_locations


# as tests/unit/test_revisions.py writes one
def split_file(path: Path, samples: dict[str, bytes], classes: list[str]) -> Path:
    """A split file of ``samples`` (path: stored bytes, in the order given), labelled by their folder."""
    values, n = list(samples.values()), len(samples)
    meta = build_meta(
        tool="test",
        classes=classes,
        storage=[8] * n,
        settings={},
        source={"path": "tree", "images": n, "classes": len(classes)},
        source_bytes=[len(value) for value in values],
        stored_bytes=[len(value) for value in values],
        skipped=[],
        sizes=np.ones((n, 2), np.uint32),
        crc32=[checksum(value) for value in values],
        paths=list(samples),
        labels=[classes.index(name.split("/")[0]) for name in samples],
    )
    writer = LMDBWriter(str(path), expected_bytes=sum(map(len, values)) + (1 << 20))
    for index, value in enumerate(values):
        writer.append(record_key(index), value)
    stored = encode_meta(meta)
    del stored[META_KEYS["locations"]]
    writer.put_many(stored)
    add_locations(writer.env, str(path))
    writer.close()
    return path


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
