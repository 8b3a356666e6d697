"""Section 10 (issue 32): cold batch reads in the order ElasticDistributedSampler deals, with its
block-window shuffle at a few window sizes against the full shuffle.

An ImageNet-like tree (make_images.py) is converted by the real workflow into one LMDB. Each contender
is one order of the epoch: ``full`` (every record anywhere) or ``block_size`` records a block,
``window`` blocks a window. A run reads the first ``batches`` batches of ``batch`` indices of one rank
(world size 1) with ``__getitems__`` (``decode="bytes"``: the reads alone), the page cache emptied
just before and the dataset made before the clock. Each repeat runs every contender once, in
rotating order, on a new epoch. Besides reads/s, how spread each batch is: the runs of neighbouring
records it touches (separate places in the file), the bytes of file between its first and last
record, and the classes it holds (the randomness the locality costs: records are in class order);
and what the disk was asked: read requests per batch, from the block device's counters
(/sys/dev/block/*/stat, the whole device: other processes' cold reads count too).
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import bench_cold
from benchmarks.bench_common import median, rotated, timed
from imagefolder_lmdb import dataset  # the reader's public names (imagefolder_lmdb.reader)
from imagefolder_lmdb.sampler import ElasticDistributedSampler

SEED = 32
#: The contenders: (block_size, window) of the block-window shuffle; None for the full shuffle.
ORDERS: dict[str, tuple[int, int] | None] = {
    "full": None,
    "b16_w4": (16, 4),
    "b16_w16": (16, 16),
    "b16_w64": (16, 64),
    "b64_w1": (64, 1),  # the most locality: a batch of 64 is one run of neighbours
}


@dataclass(frozen=True)
class Sizes:
    images: int
    classes: int
    batch: int
    batches: int  # batches each contender reads in a run
    repeats: int
    shards: int


def make_sizes(quick: bool, classes: int, shards: int) -> Sizes:
    if quick:
        return Sizes(400, min(classes, 10), 64, 4, 2, shards)
    return Sizes(3000, min(classes, 30), 64, 40, 5, shards)


def batches_of(order: tuple[int, int] | None, count: int, epoch: int, sizes: Sizes) -> list[list[int]]:
    """The first ``sizes.batches`` batches of one rank's epoch in this order."""
    options = {} if order is None else {"block_size": order[0], "window": order[1]}
    sampler = ElasticDistributedSampler(range(count), num_replicas=1, rank=0, seed=SEED, **options)
    sampler.set_epoch(epoch)
    indices = sampler.permutation()[: sizes.batch * sizes.batches].tolist()
    return [indices[k : k + sizes.batch] for k in range(0, len(indices), sizes.batch)]


def spread(batch: list[int], ds: dataset.LMDBDataset) -> dict[str, float]:
    """How far one batch's records lie apart: separate runs of neighbours, file span, classes."""
    ordered = np.sort(np.asarray(batch))
    runs = 1 + int(np.count_nonzero(np.diff(ordered) != 1))
    offsets, lengths = ds._offsets, ds._lengths
    span = float(offsets[ordered].max() + lengths[ordered[-1]] - offsets[ordered].min()) if offsets is not None else 0.0
    return {"places": runs, "span_mb": span / 1e6, "classes": len({ds.targets[i] for i in batch})}


def disk_reads(path: str) -> np.ndarray:
    """The read requests completed and the sectors read so far by the block device holding ``path``
    (zeros where the kernel does not say)."""
    device = os.stat(path).st_dev
    stat = Path(f"/sys/dev/block/{os.major(device)}:{os.minor(device)}/stat")
    if not stat.exists():
        return np.zeros(2)
    fields = stat.read_text().split()
    return np.array([int(fields[0]), int(fields[2])], dtype=np.float64)


def read_run(lmdb_path: str, batches: list[list[int]], cache: bench_cold.PageCache) -> dict[str, float]:
    """One cold run: reads/s of ``batches`` through ``__getitems__``, the disk's read requests per
    batch and KB per request, and the file's fraction still cached right after emptying (mincore)."""
    dataset.close_all_envs()
    cache.empty()
    still = bench_cold.cached_fraction([Path(lmdb_path)])
    ds = dataset.LMDBDataset(lmdb_path, decode="bytes")
    try:
        before = disk_reads(lmdb_path)
        seconds = timed(lambda: [ds.__getitems__(batch) for batch in batches])
        requests, sectors = disk_reads(lmdb_path) - before
    finally:
        dataset.close_all_envs()
    return {
        "reads_s": sum(map(len, batches)) / seconds,
        "requests": requests / len(batches),
        "request_kb": sectors * 512 / 1e3 / max(requests, 1),
        "still": still,
    }


def measure_sampler(tree: Path, sizes: Sizes, method: str) -> dict[str, Any]:
    lmdb_path, _ = bench_cold.convert(tree, sizes.shards, name="sampler")
    ds = dataset.LMDBDataset(str(lmdb_path), decode="bytes")
    if not ds.reads_by_offset:
        raise RuntimeError(f"{lmdb_path} is not read by offset: the benchmark measures the located reads")
    count, cache = len(ds), bench_cold.PageCache(method, [lmdb_path])
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in ORDERS}
    spreads: dict[str, list[dict[str, float]]] = {name: [] for name in ORDERS}
    load_at_start = os.getloadavg()
    for turn in range(sizes.repeats):
        for name in rotated(list(ORDERS), turn):
            batches = batches_of(ORDERS[name], count, epoch=turn, sizes=sizes)
            spreads[name] += [spread(batch, ds) for batch in batches]
            runs[name].append(read_run(str(lmdb_path), batches, cache))
    rows = {}
    for name in ORDERS:
        rates = [run["reads_s"] for run in runs[name]]
        ratios = [run["reads_s"] / base["reads_s"] for run, base in zip(runs[name], runs["full"], strict=True)]
        per_batch = {key: median([s[key] for s in spreads[name]]) for key in ("places", "span_mb", "classes")}
        disk = {key: median([run[key] for run in runs[name]]) for key in ("requests", "request_kb")}
        rows[name] = {"reads_s": median(rates), "runs": rates, "ratio": median(ratios), **per_batch, **disk}
    return {
        "sizes": asdict(sizes),
        "method": method,
        "seed": SEED,
        "images": count,
        "lmdb_bytes": lmdb_path.stat().st_size,
        "classes": len(ds.classes),
        "load_average": [load_at_start[0], os.getloadavg()[0]],
        "still_cached_after_emptying": max(run["still"] for name in ORDERS for run in runs[name]),
        "orders": {name: list(order) if order else None for name, order in ORDERS.items()},
        "rows": rows,
    }
