"""A dataset knows the file it opened (issue 31): a new conversion published at its path while a job
runs is an error naming both files in every process that opens the path again (DataLoader workers
under fork, spawn and forkserver, each epoch without persistent workers); a copy of the same content
at a new inode (compacted, ``cp``) is read on."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from torch.utils.data import DataLoader

from imagefolder_lmdb.reader import FileChangedError, LMDBDataset, close_all_envs, shared_env
from support.datasets import random_values, write_dataset

SIZES = [3000, 9000, 5000] * 4


@pytest.fixture(autouse=True)
def fresh_envs() -> None:
    close_all_envs()


def epoch(ds: LMDBDataset, start: str, lock: bool = False) -> list[bytes]:
    """One epoch's values, read by a worker started afresh (no persistent workers)."""
    loader = DataLoader(
        ds, batch_size=4, num_workers=1, persistent_workers=False, multiprocessing_context=start, collate_fn=list
    )
    return [value for batch in loader for value, _ in batch]


@pytest.mark.parametrize(("start", "lock"), [("fork", False), ("spawn", False), ("forkserver", False), ("fork", True)])
def test_new_file_published_under_a_running_loader_is_refused(tmp_path: Path, start: str, lock: bool) -> None:
    path = tmp_path / "train.lmdb"
    old = random_values(SIZES, seed=1)
    write_dataset(path, old)
    ds = LMDBDataset(path, decode="bytes", lock=lock)
    assert epoch(ds, start) == old
    write_dataset(tmp_path / "train.lmdb.new", random_values(SIZES, seed=2))  # same length and labels
    os.replace(tmp_path / "train.lmdb.new", path)  # published as the workflow does, by rename
    with pytest.raises(FileChangedError) as caught:
        epoch(ds, start)
    message = str(caught.value)
    assert f"{path} is not the file this dataset opened" in message
    assert message.count("inode") == 2 and "Restart the job" in message
    close_all_envs()
    with pytest.raises(FileChangedError):  # the parent's own reads too
        ds.get_bytes(0)


@pytest.mark.parametrize("start", ["fork", "spawn", "forkserver"])
@pytest.mark.parametrize("copy", ["compacted", "cp"])
def test_same_content_at_a_new_inode_is_read_on(tmp_path: Path, start: str, copy: str) -> None:
    path = tmp_path / "train.lmdb"
    values = random_values(SIZES, seed=1)
    write_dataset(path, values)
    ds = LMDBDataset(path, decode="bytes")
    assert epoch(ds, start) == values and ds.reads_by_offset
    if copy == "compacted":
        shared_env(str(path)).copy(str(tmp_path / "copy.lmdb"), compact=True)
    else:
        shutil.copyfile(path, tmp_path / "copy.lmdb")
    os.replace(tmp_path / "copy.lmdb", path)
    assert epoch(ds, start) == values
    close_all_envs()
    assert [ds.get_bytes(i) for i in range(len(values))] == values
    assert ds.reads_by_offset == (copy == "cp")  # a compacted copy's records moved: read through LMDB


def test_a_dataset_keeps_the_file_its_path_named_when_it_was_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A relative path or a symlink is resolved once: a later chdir, or the symlink pointed at another
    # version, leaves the dataset (and the workers it forks) on its file; a dataset made then opens the
    # other. (Both once gave the first file's environment to the second dataset, and a fork broke the
    # relative path.)
    for version, seed in (("v1", 1), ("v2", 2)):
        (tmp_path / version).mkdir()
        write_dataset(tmp_path / version / "train.lmdb", random_values(SIZES[: 3 * seed], seed=seed))
    first, second = random_values(SIZES[:3], seed=1), random_values(SIZES[:6], seed=2)
    monkeypatch.chdir(tmp_path / "v1")
    ds = LMDBDataset("train.lmdb", decode="bytes")
    monkeypatch.chdir(tmp_path / "v2")
    assert [value for value, _ in LMDBDataset("train.lmdb", decode="bytes")] == second
    assert epoch(ds, "fork") == first and ds.path == str(tmp_path / "v1" / "train.lmdb")
    (tmp_path / "current.lmdb").symlink_to(tmp_path / "v1" / "train.lmdb")
    on_v1 = LMDBDataset(tmp_path / "current.lmdb", decode="bytes")
    (tmp_path / "current.lmdb").unlink()
    (tmp_path / "current.lmdb").symlink_to(tmp_path / "v2" / "train.lmdb")
    assert [value for value, _ in LMDBDataset(tmp_path / "current.lmdb", decode="bytes")] == second
    assert epoch(on_v1, "fork") == first


def test_one_file_under_two_names_is_named_as_such(tmp_path: Path) -> None:
    write_dataset(tmp_path / "train.lmdb", random_values(SIZES[:3], seed=1))
    os.link(tmp_path / "train.lmdb", tmp_path / "same.lmdb")
    LMDBDataset(tmp_path / "train.lmdb")
    with pytest.raises(ValueError, match=r"same.lmdb is a file this process already has open under another name"):
        LMDBDataset(tmp_path / "same.lmdb")


def test_a_dataset_opened_after_its_file_was_replaced_reads_the_new_file(tmp_path: Path) -> None:
    """In one process (a notebook converting again with --overwrite): a new dataset at the path reads
    the new file, never the handles of the one replaced; the dataset of the old file refuses to read on."""
    path = tmp_path / "train.lmdb"
    old, new = random_values(SIZES, seed=1), random_values(SIZES, seed=2)
    write_dataset(path, old)
    before = LMDBDataset(path, decode="bytes")
    assert before.get_bytes(0) == old[0]
    write_dataset(tmp_path / "train.lmdb.new", new)
    os.replace(tmp_path / "train.lmdb.new", path)
    after = LMDBDataset(path, decode="bytes")
    assert [after.get_bytes(i) for i in range(len(new))] == new
    with pytest.raises(FileChangedError):
        before.get_bytes(0)
