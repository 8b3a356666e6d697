"""One contender of benchmarks/bench_remote.py: a DataLoader (2 workers, batch 64, shuffled) over a
dataset for some epochs, timed. Runs in this repository's venv (``lmdb``: LMDBDataset on a URL or a
file) or in LitData's own (``litdata``: StreamingDataset on an ``optimize()`` output), so it imports
nothing of this repository at module level; both decode with Pillow and apply the same train
transform, written here with Pillow and torch only (LitData's venv has no torchvision).

    python benchmarks/remote_loop.py lmdb s3://bench/train.lmdb --decode train --shuffle full --out r.json
    /work/litdata-venv/bin/python benchmarks/remote_loop.py litdata s3://bench/litdata --cache DIR --out r.json

Prints nothing; writes a JSON document: the time to the first batch (from before the dataset is
made), and per epoch its images, seconds and end (``time.monotonic()``, to split a proxy's log).
"""

from __future__ import annotations

import argparse
import io
import json
import math
import random
import time
from typing import Any

import numpy as np
import torch
from PIL import Image

MEAN = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)
STD = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1)


def crop_box(width: int, height: int) -> tuple[int, int, int, int]:
    """torchvision's RandomResizedCrop parameters (scale 0.08-1, ratio 3/4-4/3; centre crop after 10 misses)."""
    area = width * height
    for _ in range(10):
        target = area * random.uniform(0.08, 1.0)
        ratio = math.exp(random.uniform(math.log(3 / 4), math.log(4 / 3)))
        w, h = round(math.sqrt(target * ratio)), round(math.sqrt(target / ratio))
        if 0 < w <= width and 0 < h <= height:
            left, top = random.randint(0, width - w), random.randint(0, height - h)
            return left, top, left + w, top + h
    side = min(width, height)
    left, top = (width - side) // 2, (height - side) // 2
    return left, top, left + side, top + side


def train_transform(image: Image.Image) -> torch.Tensor:
    """ImageNet's train transform: RandomResizedCrop(224) (bilinear), horizontal flip, to a normalized tensor."""
    image = image.resize((224, 224), Image.BILINEAR, box=crop_box(*image.size))
    if random.random() < 0.5:
        image = image.transpose(Image.FLIP_LEFT_RIGHT)
    pixels = torch.from_numpy(np.asarray(image, dtype=np.uint8).copy()).permute(2, 0, 1)
    return (pixels.float().div_(255) - MEAN) / STD


def decoded(data: bytes) -> Image.Image:
    return Image.open(io.BytesIO(data)).convert("RGB")


def keep_bytes(items: list[Any]) -> tuple[list[Any], torch.Tensor]:
    """Collate a batch of (bytes or tensor, label) without stacking bytes."""
    images = [image for image, _ in items]
    labels = torch.tensor([label for _, label in items])
    return (torch.stack(images) if isinstance(images[0], torch.Tensor) else images), labels


def lmdb_loader(source: str, decode: str, shuffle: str, cache: str = "") -> Any:
    from torch.utils.data import DataLoader

    from imagefolder_lmdb import LMDBDataset
    from imagefolder_lmdb.sampler import ElasticDistributedSampler

    cached = {"cache_dir": cache} if cache else {}  # records kept on local disk after their first fetch
    if decode == "train":
        ds = LMDBDataset(source, transform=train_transform, **cached)
    else:
        ds = LMDBDataset(source, decode="bytes", **cached)
    block = {"block_size": 16, "window": 4} if shuffle == "block" else {}
    sampler = ElasticDistributedSampler(ds, num_replicas=1, rank=0, shuffle=True, seed=0, **block)
    return DataLoader(ds, batch_size=64, sampler=sampler, num_workers=2, collate_fn=keep_bytes), sampler


class _Sample:
    """LitData's item (a dict of the file's bytes and its label) as (image, label)."""

    def __init__(self, decode: str) -> None:
        self.decode = decode

    def __call__(self, item: dict[str, Any]) -> tuple[Any, int]:
        image = train_transform(decoded(item["image"])) if self.decode == "train" else bytes(item["image"])
        return image, int(item["label"])


def litdata_loader(source: str, decode: str, cache: str) -> Any:
    import litdata
    from litdata.streaming import downloader

    downloader._OBSTORE_CLIENT_OPTIONS["allow_http"] = True  # a loopback http endpoint (DESIGN.md section 12)
    sample = _Sample(decode)

    class Dataset(litdata.StreamingDataset):
        def __getitem__(self, index: Any) -> Any:
            return sample(super().__getitem__(index))

    ds = Dataset(source, cache_dir=cache, shuffle=True, seed=0)
    return litdata.StreamingDataLoader(ds, batch_size=64, num_workers=2, collate_fn=keep_bytes), None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=["lmdb", "litdata"])
    parser.add_argument("source")
    parser.add_argument("--decode", choices=["bytes", "train"], default="train")
    parser.add_argument("--shuffle", choices=["full", "block"], default="full")
    parser.add_argument("--cache", default="")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    started = time.perf_counter()
    if args.kind == "lmdb":
        loader, sampler = lmdb_loader(args.source, args.decode, args.shuffle, args.cache)
    else:
        loader, sampler = litdata_loader(args.source, args.decode, args.cache)
    result: dict[str, Any] = {"epochs": []}
    for epoch in range(args.epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
        epoch_start, images = time.perf_counter(), 0
        for batch, _ in loader:
            if "first_batch_s" not in result:
                result["first_batch_s"] = time.perf_counter() - started
            images += len(batch)
        seconds = time.perf_counter() - epoch_start
        result["epochs"].append({"images": images, "seconds": seconds, "end": time.monotonic()})
    with open(args.out, "w") as out:
        json.dump(result, out)


if __name__ == "__main__":
    main()
