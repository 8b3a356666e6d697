"""Section 4: the reader (scripts/dataset.py) against ImageFolder and against pure decoding.

Every contender reads the same random indices of the same images (the LMDB written from the
tree, and the tree itself through torchvision's ImageFolder), alternating, repeated, medians.
Warm cache: everything is read once before the clock. Cold cache: the page cache is dropped
before each contender's 1,000 random raw reads (root only; skipped with a note otherwise).
"""

from __future__ import annotations

import io
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from PIL import Image
from torch.utils.data import DataLoader
from torchvision.datasets import ImageFolder
from torchvision.io import ImageReadMode, decode_jpeg
from torchvision.transforms import v2

from benchmarks.bench_common import drop_page_cache, median, rotated, timed
from imagefolder_lmdb import dataset  # the reader's public names (imagefolder_lmdb.reader)

Contenders = dict[str, Callable[[], Any]]


def pure_pil(blob: bytes) -> Image.Image:
    """What any reader must do at the least for a PIL sample: ImageFolder's pil_loader on bytes."""
    return Image.open(io.BytesIO(blob)).convert("RGB")


def pure_tensor(blob: bytearray) -> torch.Tensor:
    return decode_jpeg(torch.frombuffer(blob, dtype=torch.uint8), mode=ImageReadMode.RGB)


def read_file(path: str) -> bytes:
    with open(path, "rb") as stream:
        return stream.read()


def tensor_dataset(path: str) -> dataset.LMDBDataset | None:
    """The tensor decode path if this version of the reader has it (another engineer adds it)."""
    if "tensor" not in getattr(dataset, "DECODE_CHOICES", ()):
        return None
    return dataset.LMDBDataset(path, decode="tensor")


def rates(contenders: Contenders, items: int, repeats: int) -> dict[str, dict[str, Any]]:
    """img/s of each contender (each call handles ``items`` images), alternating; warm-up first."""
    for run in contenders.values():
        run()
    seconds: dict[str, list[float]] = {name: [] for name in contenders}
    for turn in range(repeats):
        for name in rotated(list(contenders), turn):
            seconds[name].append(timed(contenders[name]))
    return {
        name: {"img_s": items / median(times), "runs": [items / t for t in times]} for name, times in seconds.items()
    }


def warm_contenders(lmdb_path: str, tree: Path, indices: list[int]) -> tuple[Contenders, str | None]:
    ds = dataset.LMDBDataset(lmdb_path)
    folder = ImageFolder(str(tree))
    check_same_order(ds, folder, tree)
    blobs = [ds.get_bytes(i) for i in indices]
    writable = [bytearray(b) for b in blobs]
    paths = [folder.samples[i][0] for i in indices]
    contenders: Contenders = {
        "lmdb_getitem_pil": lambda: [ds[i] for i in indices],
        "imagefolder_getitem": lambda: [folder[i] for i in indices],
        "pure_decode_pil": lambda: [pure_pil(b) for b in blobs],
        "pure_decode_tensor": lambda: [pure_tensor(b) for b in writable],
        "lmdb_get_bytes": lambda: [ds.get_bytes(i) for i in indices],
        "file_open_read": lambda: [read_file(p) for p in paths],
    }
    tensor_ds = tensor_dataset(lmdb_path)
    note = None
    if tensor_ds is None:
        note = 'LMDBDataset(path, decode="tensor") does not exist in this version of scripts/dataset.py: skipped'
    else:
        contenders["lmdb_getitem_tensor"] = lambda: [tensor_ds[i] for i in indices]
    return contenders, note


def check_same_order(ds: dataset.LMDBDataset, folder: ImageFolder, tree: Path) -> None:
    """The comparison is only fair if index i is the same image in both."""
    assert len(ds) == len(folder), (len(ds), len(folder))
    for i in range(0, len(ds), max(1, len(ds) // 50)):
        assert Path(folder.samples[i][0]).relative_to(tree).as_posix() == ds.samples[i][0], i


def loader_rate(lmdb_path: str, workers: int, batches: int, batch_size: int) -> float:
    """img/s of a DataLoader over the dataset with a light fixed-size transform, after one batch
    of warm-up (worker start-up is a one-off cost of an epoch, not of throughput)."""
    transform = v2.Compose([v2.CenterCrop(224), v2.PILToTensor()])
    ds = dataset.LMDBDataset(lmdb_path, transform=transform)
    generator = torch.Generator().manual_seed(0)
    loader = DataLoader(ds, batch_size=batch_size, shuffle=True, num_workers=workers, generator=generator)
    iterator = iter(loader)
    next(iterator)
    seconds = timed(lambda: [next(iterator) for _ in range(batches)])
    return batches * batch_size / seconds


def loader_rates(lmdb_path: str, repeats: int, batches: int, batch_size: int = 32) -> dict[str, dict[str, Any]]:
    runs: dict[int, list[float]] = {0: [], 2: []}
    for turn in range(repeats):
        for workers in rotated([0, 2], turn):
            runs[workers].append(loader_rate(lmdb_path, workers, batches, batch_size))
    return {f"dataloader_{w}_workers": {"img_s": median(r), "runs": r} for w, r in runs.items()}


def cold_reads(lmdb_path: str, tree: Path, reads: int, repeats: int) -> dict[str, Any]:
    """Random raw reads right after the page cache is dropped: LMDB get_bytes vs open+read."""
    ds = dataset.LMDBDataset(lmdb_path)
    folder = ImageFolder(str(tree))
    indices = random.Random(1).sample(range(len(ds)), min(reads, len(ds)))
    contenders: Contenders = {
        "cold_lmdb_get_bytes": lambda: [ds.get_bytes(i) for i in indices],
        "cold_file_open_read": lambda: [read_file(folder.samples[i][0]) for i in indices],
    }
    if not drop_page_cache():
        return {"note": "dropping the page cache needs root (/proc/sys/vm/drop_caches): cold reads skipped"}
    seconds: dict[str, list[float]] = {name: [] for name in contenders}
    for turn in range(repeats):
        for name in rotated(list(contenders), turn):
            # pages mapped by a process survive drop_caches: unmap LMDB's first, reopen before the clock
            dataset.close_all_envs()
            drop_page_cache()
            dataset.shared_env(lmdb_path)
            seconds[name].append(timed(contenders[name]))
    return {
        name: {"img_s": len(indices) / median(t), "runs": [len(indices) / s for s in t]} for name, t in seconds.items()
    }


def measure_reader(lmdb_path: str, tree: Path, reads: int, repeats: int, cold: int) -> dict[str, Any]:
    count = len(dataset.LMDBDataset(lmdb_path))
    indices = random.Random(0).sample(range(count), min(reads, count))
    contenders, note = warm_contenders(lmdb_path, tree, indices)
    result: dict[str, Any] = {"reads": len(indices), "warm": rates(contenders, len(indices), repeats)}
    result["notes"] = [note] if note else []
    result["warm"].update(loader_rates(lmdb_path, repeats, batches=max(2, len(indices) // 32)))
    dataset.close_all_envs()
    result["cold"] = cold_reads(lmdb_path, tree, cold, repeats)
    return result
