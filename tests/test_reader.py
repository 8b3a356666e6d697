"""The reader on its own: DataLoader workers under every start method, pickling, clear refusals."""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import lmdb
import pytest
import torch
from torch.utils.data import DataLoader
from torchvision.transforms import v2

from conftest import Converted
from dataset import META_KEYS, FormatError, LMDBDataset, record_key


def tensor_transform() -> v2.Compose:
    return v2.Compose([v2.PILToTensor(), v2.Resize((32, 32), antialias=True)])


def read_all(ds: LMDBDataset, workers: int, context: str | None) -> list[tuple[torch.Tensor, int]]:
    loader = DataLoader(ds, batch_size=None, shuffle=False, num_workers=workers, multiprocessing_context=context)
    return [(image, int(target)) for image, target in loader]


@pytest.mark.parametrize("context", ["fork", "spawn", "forkserver"])
def test_dataloader_workers_after_parent_read(converted: Converted, context: str) -> None:
    ds = LMDBDataset(converted.lmdb, transform=tensor_transform())
    ds[0]  # the parent has the file open when the workers start
    expected = read_all(ds, workers=0, context=None)
    got = read_all(ds, workers=2, context=context)
    assert len(got) == len(expected) == len(ds)
    for (image, target), (want_image, want_target) in zip(got, expected, strict=True):
        assert target == want_target
        assert torch.equal(image, want_image)
    assert ds[len(ds) - 1][1] == ds.targets[-1], "the parent still reads after the workers ran"


def test_dataset_pickles(converted: Converted) -> None:
    ds = LMDBDataset(converted.lmdb)
    ds[3]
    copy = pickle.loads(pickle.dumps(ds))
    assert len(copy) == len(ds) and copy.targets == ds.targets and copy.samples == ds.samples
    assert copy.get_bytes(3) == ds.get_bytes(3)


def test_two_instances_of_one_file_in_one_process(converted: Converted) -> None:
    first, second = LMDBDataset(converted.lmdb), LMDBDataset(str(converted.lmdb))
    assert first.get_bytes(1) == second.get_bytes(1)


def test_targets_transform_and_index_errors(converted: Converted) -> None:
    ds = LMDBDataset(converted.lmdb, target_transform=lambda t: t + 100)
    assert ds[0][1] == ds.targets[0] + 100
    assert ds[-1][1] == ds.targets[-1] + 100
    with pytest.raises(IndexError, match="out of range"):
        ds[len(ds)]


def test_refuses_a_file_that_is_not_lmdb(tmp_path: Path) -> None:
    path = tmp_path / "photo.lmdb"
    path.write_bytes(b"\xff\xd8 this is not a database" * 500)
    with pytest.raises(FormatError, match="is not an LMDB file"):
        LMDBDataset(path)


def test_refuses_an_unfinished_conversion(tmp_path: Path) -> None:
    path = tmp_path / "merged.lmdb"
    with lmdb.open(str(path), subdir=False, map_size=1 << 20) as env, env.begin(write=True) as txn:
        txn.put(record_key(0), b"\xff\xd8\xff\xd9")
    with pytest.raises(FormatError, match=r"did not finish.*Run the same snakemake command"):
        LMDBDataset(path)


def test_refuses_an_unknown_format_version(converted: Converted, tmp_path: Path) -> None:
    path = tmp_path / "future.lmdb"
    shutil.copyfile(converted.lmdb, path)
    with lmdb.open(str(path), subdir=False, lock=False) as env, env.begin(write=True) as txn:
        document = json.loads(txn.get(META_KEYS["json"]))
        document["version"] = 99
        txn.put(META_KEYS["json"], json.dumps(document).encode())
    with pytest.raises(FormatError, match=r"version 99.*knows version 1"):
        LMDBDataset(path)


def test_refuses_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no such file"):
        LMDBDataset(tmp_path / "absent.lmdb")
