"""A split of revisions (issue 58), on small files written here: what the writer refuses, what the
reader refuses (a damaged pointer, a data file of other content or gone, a damaged record), the
format's version seen by today's split-file reader, and a sampler state over another revision."""

from __future__ import annotations

import dataclasses
import os
import shutil
import time
import zlib
from pathlib import Path

import numpy as np
import pytest

from imagefolder_lmdb.reader import (
    DamagedRecordError,
    FormatError,
    LMDBReader,
    close_all_envs,
    decode_meta,
)
from imagefolder_lmdb.reader.identity import FileChangedError
from imagefolder_lmdb.reader.revision_format import data_file_path, revision_key
from imagefolder_lmdb.reader.revisions import MissingDataFileError, opened_env
from imagefolder_lmdb.sampler import ElasticDistributedSampler
from imagefolder_lmdb.writing.revision_files import collect_garbage, flatten
from imagefolder_lmdb.writing.revisions import RevisionConflictError, new_revision, read_split, write_lmdb_values
from support.split_files import split_file

FIRST = {"a/0.bin": b"a0" * 50, "a/1.bin": b"a1" * 50, "b/0.bin": b"b0" * 50}


@pytest.fixture
def changed(tmp_path: Path, fresh_envs: None) -> Path:
    """A split whose revision 2 adds b/1.bin and relabels nothing."""
    split = split_file(tmp_path / "train.lmdb", FIRST, ["a", "b"])
    added = split_file(tmp_path / "added.lmdb", {"b/1.bin": b"b1" * 50}, ["a", "b"])
    samples = [("a/0.bin", 0), ("a/1.bin", 0), ("b/0.bin", 1), ("b/1.bin", 1)]
    new_revision(split, samples, ["a", "b"], [added], planned_on=None)
    return split


def test_a_revision_reads_its_records_from_each_file(changed: Path) -> None:
    ds = LMDBReader(changed, decode="bytes")
    assert ds.revision == 2 and ds.samples == [("a/0.bin", 0), ("a/1.bin", 0), ("b/0.bin", 1), ("b/1.bin", 1)]
    assert [ds.get_bytes(i) for i in range(4)] == [*FIRST.values(), b"b1" * 50]
    assert ds.check_crc(3) and [image for image, _ in ds.__getitems__([3, 0])] == [b"b1" * 50, b"a0" * 50]


@pytest.mark.parametrize(
    ("samples", "classes", "message"),
    [
        ([("a/9.bin", 0)], ["a"], "'a/9.bin' is in no data file"),
        ([("a/0.bin", 0), ("a/0.bin", 0)], ["a"], "'a/0.bin' is listed twice"),
        ([("a/0.bin", 3)], ["a", "b"], "'a/0.bin' has label 3, outside 0..1"),
    ],
)
def test_the_writer_refuses_a_listing_it_cannot_place(
    changed: Path, samples: list[tuple[str, int]], classes: list[str], message: str
) -> None:
    pointer = changed.read_bytes()
    with pytest.raises(ValueError, match=message):
        new_revision(changed, samples, classes, planned_on=2)
    assert changed.read_bytes() == pointer


def test_the_writer_refuses_a_change_planned_on_another_revision(changed: Path) -> None:
    with pytest.raises(RevisionConflictError, match="at revision 2, not at revision 1"):
        new_revision(changed, [("a/0.bin", 0)], ["a"], planned_on=1)


def test_todays_split_file_reader_refuses_a_pointer_by_its_version(changed: Path) -> None:
    txn = opened_env(str(changed)).begin()
    with pytest.raises(FormatError, match="imagefolder-lmdb version 5, but this reader knows version 1"):
        decode_meta(txn, str(changed))
    txn.abort()


def test_a_damaged_pointer_is_refused(changed: Path) -> None:
    state = read_split(str(changed))
    values = dict(state.values)
    key = revision_key(2, "labels")
    values[key] = np.array([0, 0, 1, 0], "<i4").tobytes()  # a label changed without its checksum
    with opened_env(str(changed)).begin() as txn:
        pointer_json = bytes(txn.get(b"meta/json"))
    close_all_envs()
    write_lmdb_values(str(changed), {**values, b"meta/json": pointer_json})
    with pytest.raises(FormatError, match=r"revision 2 is damaged \(meta/revision/00000002/labels does not match"):
        LMDBReader(changed)


def test_a_data_file_of_other_content_or_gone_is_one_error(changed: Path, tmp_path: Path) -> None:
    state = read_split(str(changed))
    added = data_file_path(str(changed), state.current.files[1].id)
    ds = LMDBReader(changed, decode="bytes")
    close_all_envs()  # as a new worker: the data files are opened again
    os.remove(added)  # another file under the data file's name
    shutil.copy2(split_file(tmp_path / "other.lmdb", {"b/1.bin": b"xx" * 50}, ["a", "b"]), added)
    with pytest.raises(FileChangedError, match=r"holds content .* not .* that revision=2 of .* names"):
        ds.get_bytes(3)
    os.remove(added)
    close_all_envs()
    with pytest.raises(MissingDataFileError, match=r"revision=2 reads data files that are not there: .*\.lmdb \("):
        ds.get_bytes(3)
    assert ds.get_bytes(0) == FIRST["a/0.bin"]  # the first file is still there


def test_a_damaged_record_of_a_data_file_is_refused(changed: Path) -> None:
    state = read_split(str(changed))
    first = data_file_path(str(changed), state.current.files[0].id)
    value = FIRST["a/1.bin"]  # every copy of it (a leaf page rewritten by the meta's commit keeps an old one)
    data = Path(first).read_bytes().replace(value, bytes([value[0] ^ 0xFF]) + value[1:])
    os.remove(first)  # a new inode: the data file's name, a damaged copy of its content
    Path(first).write_bytes(data)
    with pytest.raises(DamagedRecordError, match=r"record 1 does not match its CRC-32"):
        LMDBReader(changed, decode="bytes").get_bytes(1)


class _Sized:
    def __init__(self, length: int, revision: int | None) -> None:
        self.length, self.revision = length, revision

    def __len__(self) -> int:
        return self.length


def test_a_sampler_state_of_another_revision_is_refused() -> None:
    saved = ElasticDistributedSampler(_Sized(10, 2), num_replicas=1, rank=0).state_dict()
    assert saved["revision"] == 2
    with pytest.raises(ValueError, match=r"revision=2 of the split, this dataset reads revision=3"):
        ElasticDistributedSampler(_Sized(10, 3), num_replicas=1, rank=0).load_state_dict(saved)
    # a single split file is its revision 1
    plain = ElasticDistributedSampler(_Sized(10, None), num_replicas=1, rank=0).state_dict()
    assert "revision" not in plain  # a single split file's state: as before revisions existed
    ElasticDistributedSampler(_Sized(10, 1), num_replicas=1, rank=0).load_state_dict(plain)
    with pytest.raises(ValueError, match=r"revision=1 of the split, this dataset reads revision=3"):
        ElasticDistributedSampler(_Sized(10, 3), num_replicas=1, rank=0).load_state_dict(plain)


def test_a_change_killed_before_its_pointer_leaves_the_split_as_it_was_and_reruns(
    tmp_path: Path, fresh_envs: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    split = split_file(tmp_path / "train.lmdb", FIRST, ["a", "b"])
    added = split_file(tmp_path / "added.lmdb", {"b/1.bin": b"b1" * 50}, ["a", "b"])
    before = split.read_bytes()
    samples = [("a/0.bin", 0), ("b/0.bin", 1), ("b/1.bin", 1)]

    def killed(*args: object) -> None:
        raise KeyboardInterrupt  # as a kill between the data files' links and the pointer's rename

    monkeypatch.setattr("imagefolder_lmdb.writing.revisions.write_pointer", killed)
    with pytest.raises(KeyboardInterrupt):
        new_revision(split, samples, ["a", "b"], [added], planned_on=None)
    assert split.read_bytes() == before and LMDBReader(split).revision is None
    monkeypatch.undo()
    close_all_envs()
    written = new_revision(split, samples, ["a", "b"], [added], planned_on=None)
    assert written.changes == {"added": 1, "removed": 1, "relabelled": 0, "moved": 0}
    ds = LMDBReader(split, decode="bytes")
    assert [ds.get_bytes(i) for i in range(3)] == [FIRST["a/0.bin"], FIRST["b/0.bin"], b"b1" * 50]
    assert sorted(os.listdir(f"{split}.d")) == sorted(
        f"{file.id}.lmdb" for file in read_split(str(split)).current.files
    )


def test_a_reader_of_the_single_file_stops_at_its_next_open_after_the_first_change(
    tmp_path: Path, fresh_envs: None
) -> None:
    split = split_file(tmp_path / "train.lmdb", FIRST, ["a", "b"])
    ds = LMDBReader(split, decode="bytes")
    new_revision(split, [("a/0.bin", 0)], ["a"], planned_on=None)
    close_all_envs()  # as a new worker: the path is opened again
    with pytest.raises(FileChangedError, match=r"now holds a split of revisions at revision 2"):
        ds.get_bytes(0)


def test_flatten_over_the_pointer_then_gc_leaves_one_file(changed: Path) -> None:
    expected = [LMDBReader(changed, decode="bytes").get_bytes(i) for i in range(4)]
    flattened = flatten(str(changed))
    assert (flattened.revision, flattened.records) == (2, 4)
    close_all_envs()
    ds = LMDBReader(changed, decode="bytes")
    assert ds.revision is None and [ds.get_bytes(i) for i in range(4)] == expected
    assert ds.samples == [("a/0.bin", 0), ("a/1.bin", 0), ("b/0.bin", 1), ("b/1.bin", 1)]
    collected = collect_garbage(str(changed))
    assert len(collected.removed) == 2 and not os.path.exists(f"{changed}.d")


def test_a_relabelling_keeps_every_record_and_changes_the_labels(changed: Path) -> None:
    samples = [("a/0.bin", 0), ("a/1.bin", 1), ("b/0.bin", 1), ("b/1.bin", 1)]  # a/1.bin relabelled b
    written = new_revision(changed, samples, ["a", "b"], planned_on=2)
    assert written.changes == {"added": 0, "removed": 0, "relabelled": 1, "moved": 0}
    ds = LMDBReader(changed, decode="bytes")
    assert ds.revision == 3 and ds.targets == [0, 1, 1, 1] and ds.get_bytes(1) == FIRST["a/1.bin"]
    assert LMDBReader(changed, revision=2).targets == [0, 0, 1, 1]


def test_an_image_moved_before_its_revision_is_taken_by_name_size_and_time_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A change finds an image moved to another class folder without reading it (issue 58: no unchanged
    image read again): a rename keeps size and modification time; a file written since is read once."""
    from imagefolder_lmdb.run import change

    image = tmp_path / "dogs" / "000.jpg"
    image.parent.mkdir()
    image.write_bytes(b"jpeg" * 10)
    made = time.time()
    os.utime(image, (made - 3600, made - 3600))  # written an hour before the revision, then moved
    stored = change.Stored(source_bytes=40, crc32=zlib.crc32(b"jpeg" * 10), passthrough=True)
    read: list[str] = []
    monkeypatch.setattr(change, "file_crc", lambda path: read.append(path) or zlib.crc32(Path(path).read_bytes()))
    gone = {"cats/000.jpg": stored, "cats/001.jpg": dataclasses.replace(stored, source_bytes=41)}
    assert change.moved_images(str(tmp_path), ["dogs/000.jpg"], gone, made) == {"dogs/000.jpg": "cats/000.jpg"}
    assert read == []
    os.utime(image, (made, made))  # written since the revision: its bytes compared with the record's
    assert change.moved_images(str(tmp_path), ["dogs/000.jpg"], gone, made) == {"dogs/000.jpg": "cats/000.jpg"}
    assert read == [str(image)]
    image.write_bytes(b"JPEG" * 10)  # another file of the same name and size: added, not moved
    assert change.moved_images(str(tmp_path), ["dogs/000.jpg"], gone, made) == {}


def test_a_file_touched_before_the_listing_of_its_revision_is_not_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A change's revision is dated by its listing, to the microsecond: a file renamed (its ctime set)
    just before that listing is the one stored, not read again by the next change (issue 58: a removal
    read again the 9,160 images a relabelling had moved within the old 2 s slack); one touched after is."""
    from imagefolder_lmdb.run import change

    image = tmp_path / "cats" / "000.jpg"
    image.parent.mkdir()
    image.write_bytes(b"jpeg" * 10)
    stored = change.Stored(source_bytes=40, crc32=zlib.crc32(b"jpeg" * 10), passthrough=False)
    monkeypatch.setattr(change, "file_crc", lambda path: pytest.fail(f"{path} read"))
    os.utime(image, (time.time() - 3600, time.time() - 3600))  # written an hour ago, its ctime set now (a rename)
    touched = image.stat().st_ctime
    listed = touched + 0.25 if (touched + 0.25) % 1 else touched + 0.26  # the next revision's listing, just after
    assert not change.is_other_file(str(image), stored, listed)
    assert change.is_other_file(str(image), stored, listed - 0.5)  # touched after its listing: never trusted
    assert change.is_other_file(str(image), stored, float(int(listed + 1)))  # a date in whole seconds: the slack
