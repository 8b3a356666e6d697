"""The reader on a converted dataset: DataLoader workers under every start method, batched fetches,
decode choices, reader limits, pickling, clear refusals."""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import shutil
import subprocess
import sys
import zlib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lmdb
import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, Subset
from torchvision.datasets import ImageFolder
from torchvision.transforms import v2

from imagefolder_lmdb.reader import (
    DEFAULT_MAX_READERS,
    META_KEYS,
    FormatError,
    LMDBDataset,
    ReadersFullError,
    close_all_envs,
    shared_env,
)
from imagefolder_lmdb.writing.reencode import encode_image
from support.datasets import pil_as_tensor
from support.settings import encode_settings
from support.workflow import Converted


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


def test_root_finds_each_source_file_as_imagefolder_does(converted: Converted) -> None:
    ds, folder = LMDBDataset(converted.lmdb), ImageFolder(str(converted.source))
    assert ds.root == str(converted.source) and os.path.isabs(ds.root)
    assert f"Root location: {ds.root}\n" in repr(ds)
    assert [os.path.join(ds.root, path) for path, _ in ds.samples] == [path for path, _ in folder.samples]
    for index, (path, _) in enumerate(ds.samples):
        with open(os.path.join(ds.root, path), "rb") as stream:
            source = stream.read()
        # the file the record was made from: stored as it is, or re-encoded from it, deterministically
        assert encode_image(source, encode_settings()).value == ds.get_bytes(index), path
    assert {ds.storage_reason(i) for i in range(len(ds))} > {"passthrough"}, "re-encoded records checked too"


def test_targets_transform_and_index_errors(converted: Converted) -> None:
    ds = LMDBDataset(converted.lmdb, target_transform=lambda t: t + 100)
    assert ds[0][1] == ds.targets[0] + 100
    assert ds[-1][1] == ds.targets[-1] + 100
    with pytest.raises(IndexError, match="out of range"):
        ds[len(ds)]


def test_refuses_an_unknown_format_version(converted: Converted, tmp_path: Path) -> None:
    path = tmp_path / "future.lmdb"
    shutil.copyfile(converted.lmdb, path)
    with lmdb.open(str(path), subdir=False, lock=False) as env, env.begin(write=True) as txn:
        document = json.loads(txn.get(META_KEYS["json"]))
        document["version"] = 99
        txn.put(META_KEYS["json"], json.dumps(document).encode())
    with pytest.raises(FormatError, match=r"version 99.*knows version 1"):
        LMDBDataset(path)


# -- batched fetches --------------------------------------------------------------------------------


class BatchOnlyDataset(LMDBDataset):
    """Fails when anything fetches one sample at a time: proves DataLoader takes __getitems__."""

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        raise AssertionError("__getitem__ was called; DataLoader should fetch batches with __getitems__")


def tensor_resize() -> v2.Resize:
    return v2.Resize((32, 32), antialias=True)


@pytest.mark.parametrize("context", ["fork", "spawn", "forkserver"])
def test_batched_dataloader_after_parent_read(converted: Converted, context: str) -> None:
    ds = BatchOnlyDataset(converted.lmdb, transform=tensor_resize(), decode="tensor")
    ds.__getitems__([0])  # the parent has the file open when the workers start
    single = LMDBDataset(converted.lmdb, transform=tensor_resize(), decode="tensor")
    expected = [single[i] for i in range(len(single))]
    loader = DataLoader(ds, batch_size=8, shuffle=False, num_workers=2, multiprocessing_context=context)
    batches = list(loader)
    assert len(batches) == 5
    images = torch.cat([images for images, _ in batches])
    targets = torch.cat([targets for _, targets in batches])
    assert images.shape == (len(ds), 3, 32, 32) and images.dtype == torch.uint8
    assert targets.tolist() == ds.targets
    assert torch.equal(images, torch.stack([image for image, _ in expected]))
    assert ds.__getitems__([len(ds) - 1])[0][1] == ds.targets[-1], "the parent still reads after the workers ran"


def test_getitems_reads_a_batch_in_one_transaction(converted: Converted, monkeypatch: pytest.MonkeyPatch) -> None:
    ds = LMDBDataset(converted.lmdb, decode="bytes")
    opened = []
    original = LMDBDataset._transaction

    def counting(self: LMDBDataset) -> lmdb.Transaction:
        opened.append(1)
        return original(self)

    monkeypatch.setattr(LMDBDataset, "_transaction", counting)
    indices: list[Any] = [7, 0, np.int64(3), torch.tensor(39), -1]
    batch = ds.__getitems__(indices)
    assert len(opened) <= 1, "records read by offset need none (test_record_locations covers the mix)"
    assert [target for _, target in batch] == [ds.targets[i] for i in (7, 0, 3, 39, 39)]
    assert [zlib.crc32(data) for data, _ in batch] == [int(ds.checksums[i]) for i in (7, 0, 3, 39, 39)]
    with pytest.raises(IndexError, match="out of range"):
        ds.__getitems__([0, len(ds)])


def test_subset_passes_batches_through(converted: Converted) -> None:
    ds = BatchOnlyDataset(converted.lmdb, decode="bytes")
    subset = Subset(ds, [5, 1, 2, 39, 20])
    loader = DataLoader(subset, batch_size=2, collate_fn=list)
    got = [sample for batch in loader for sample in batch]
    plain = LMDBDataset(converted.lmdb)
    assert [(data, target) for data, target in got] == [(plain.get_bytes(i), plain.targets[i]) for i in subset.indices]


# -- decode choices ---------------------------------------------------------------------------------


def test_tensor_decode_equals_pil_for_every_jpeg(converted: Converted) -> None:
    """Measured with torchvision 0.29.1 (libjpeg-turbo) and Pillow 13: pixel-equal, so no tolerance."""
    pil = LMDBDataset(converted.lmdb)
    tensors = LMDBDataset(converted.lmdb, decode="tensor")
    assert tensors.storage_codes is not None
    jpegs = [i for i in range(len(pil)) if pil.storage_reason(i) != "stored-as-is"]
    assert Counter(pil.storage_reason(i) for i in jpegs)["passthrough"] >= 30
    for index in jpegs:
        image, target = tensors[index]
        want, want_target = pil[index]
        assert image.dtype == torch.uint8 and image.shape == (3, want.height, want.width)
        assert target == want_target
        difference = (image.int() - pil_as_tensor(want).int()).abs().max().item()
        assert difference == 0, f"record {index} ({pil.storage_reason(index)}): decoders differ by {difference}"


def test_bytes_decode_returns_the_stored_value(converted: Converted) -> None:
    ds = LMDBDataset(converted.lmdb, decode="bytes", transform=len)
    raw = LMDBDataset(converted.lmdb, decode="bytes")
    data, target = raw[11]
    assert type(data) is bytes and zlib.crc32(data) == int(raw.checksums[11]) and target == raw.targets[11]
    assert ds[11] == (len(data), target), "the transform receives what decode produced"


def test_decode_choice_is_checked(converted: Converted) -> None:
    with pytest.raises(ValueError, match=r"decode='jpeg'.*'pil', 'tensor', 'bytes'"):
        LMDBDataset(converted.lmdb, decode="jpeg")  # type: ignore[arg-type]


# -- what the meta answers without decoding ---------------------------------------------------------


def test_class_counts_and_aspect_ratios(converted: Converted) -> None:
    ds = LMDBDataset(converted.lmdb)
    counts = ds.class_counts()
    assert counts.tolist() == [Counter(ds.targets)[k] for k in range(len(ds.classes))]
    assert counts.sum() == len(ds)
    ratios = ds.aspect_ratios()
    assert ratios.shape == (len(ds),)
    for index in (0, 10, 39):
        width, height = ds[index][0].size
        assert ratios[index] == pytest.approx(width / height)


# -- reader slots (lock=True) -----------------------------------------------------------------------


@pytest.fixture
def private_copy(converted: Converted, tmp_path: Path) -> Iterator[Path]:
    """A copy of the dataset in its own folder (lock=True creates a -lock file beside it)."""
    path = tmp_path / "copy" / "train.lmdb"
    path.parent.mkdir()
    shutil.copyfile(converted.lmdb, path)
    yield path
    close_all_envs()


HOLD_A_READER = """
import sys, lmdb
env = lmdb.open(sys.argv[1], subdir=False, readonly=True, lock=True)
txn = env.begin()
print("holding", flush=True)
sys.stdin.read()
"""


@contextlib.contextmanager
def reader_in_another_process(path: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding a read transaction (a reader slot) on ``path`` until killed."""
    command = [sys.executable, "-c", HOLD_A_READER, str(path)]
    holder = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        yield holder
    finally:
        holder.kill()
        holder.wait()


def test_max_readers_exceeded_gives_a_clear_error(private_copy: Path) -> None:
    # Opened first, so LMDB sizes the reader table of the new -lock file from max_readers=1.
    ds = LMDBDataset(private_copy, lock=True, max_readers=1, decode="bytes")
    assert Path(str(private_copy) + "-lock").exists()
    with reader_in_another_process(private_copy) as holder:
        with pytest.raises(ReadersFullError, match=r"all 1 LMDB reader slots are taken") as full:
            ds[0]
        message = str(full.value)
        assert "0 workers x 1 ranks" in message and "max_readers=N" in message and "lock=False" in message
        holder.kill()
        holder.wait()
        # The holder died with its slot taken: the reader reclaims dead readers' slots, once.
        assert ds[0][0] == ds.get_bytes(0)

    with reader_in_another_process(private_copy):
        loader = DataLoader(ds, batch_size=4, num_workers=2, multiprocessing_context="fork")
        with pytest.raises(ReadersFullError, match=r"2 workers x 1 ranks"):
            next(iter(loader))


def test_lock_true_with_workers(private_copy: Path) -> None:
    ds = LMDBDataset(private_copy, lock=True, max_readers=8, decode="bytes")
    got = [data for batch, _ in DataLoader(ds, batch_size=8, num_workers=2, collate_fn=_unzip) for data in batch]
    assert [zlib.crc32(data) for data in got] == ds.checksums.tolist()


def _unzip(batch: list[tuple[bytes, int]]) -> tuple[list[bytes], list[int]]:
    return [data for data, _ in batch], [target for _, target in batch]


def test_max_readers_needs_lock(converted: Converted) -> None:
    with pytest.raises(ValueError, match="max_readers applies only with lock=True"):
        LMDBDataset(converted.lmdb, max_readers=16)


def test_lock_false_creates_nothing_and_has_no_reader_limit(private_copy: Path) -> None:
    ds = LMDBDataset(private_copy, decode="bytes")
    env = shared_env(str(private_copy))
    held = [env.begin() for _ in range(DEFAULT_MAX_READERS + 10)]
    assert ds[0][0] == ds.get_bytes(0)
    del held
    assert sorted(p.name for p in private_copy.parent.iterdir()) == ["train.lmdb"]


def test_one_file_cannot_mix_lock_settings_in_one_process(private_copy: Path) -> None:
    LMDBDataset(private_copy)
    with pytest.raises(ValueError, match="already open in this process with lock=False"):
        LMDBDataset(private_copy, lock=True)
