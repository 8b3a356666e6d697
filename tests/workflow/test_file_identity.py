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
