"""Section 9 (issue 23): training input, a DataLoader as a training loop runs it, warm and cold.

An ImageNet-like tree (make_images.py: ~110 KB JPEGs, ~480x400, q90) is converted by the real
workflow twice: pass-through (the defaults, ``check: decode``) and prepared for training
(``encode.short_side: 256``, ``quality: 90``; skipped with a note where the workflow's schema does
not know the key yet). Contenders, each a DataLoader (2 workers, batch 64, shuffled with one fixed
generator, so every contender delivers the same images with the same random crops):
- ``imagefolder``: torchvision's ImageFolder over the originals (the reference);
- ``lmdb``: LMDBDataset of the pass-through file; ``lmdb_short``: of the ``short_side`` file;
- ``lmdb_tensor``: the pass-through file with ``decode="tensor"`` and the same transforms on tensors;
- ``lmdb_glibc_malloc``: ``lmdb`` with ``IMAGEFOLDER_LMDB_MALLOC=default`` (glibc's own malloc
  settings), to show what the reader's malloc settings move.
for the ImageNet train transform (RandomResizedCrop(224), RandomHorizontalFlip, PILToTensor) and
the val transform (Resize(256), CenterCrop(224), PILToTensor). Each repeat runs every contender in
rotating order, cold (page cache emptied, dataset made, then the clock, from ``iter(loader)`` to the
last batch, worker start included) and warm (the same run again at once). The DataLoaders run
before anything in this process reads a batch, so ImageFolder's forked workers start with glibc's
own malloc settings, as they would in a training job.

Pixels: the val transform's output of every contender against ImageFolder's on the originals,
PSNR (median, worst) over a fixed sample, and of ``short_side: 256`` on real photographs
(bench_data.photo_tree). Conversion: each run's wall and encode CPU, and the floor of any resizing
conversion (a full-size decode) against the pass-through's check, in this process.
Cold batches (task 1 of the issue): on the pass-through file, the hinted-pread limit
(bench_cold.hinted_preads) against ``__getitems__(decode="bytes")`` and plain files read one at a
time, each contender its own random batches, batch after batch in rotating order after one emptying
of the cache, so the shared disk's slow phases hit all alike.
"""

from __future__ import annotations

import io
import math
import os
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image
from torch.utils.data import DataLoader
from torchvision.datasets import ImageFolder
from torchvision.transforms import v2

from benchmarks import bench_cold, bench_common, bench_data
from benchmarks.bench_common import median, rotated
from benchmarks.bench_reader import check_same_order
from imagefolder_lmdb import dataset  # the reader's public names (imagefolder_lmdb.reader)
from imagefolder_lmdb.reader import memory
from imagefolder_lmdb.writing.reencode import check_decodes
from tests.support.workflow import write_config

SEED = 23
TRANSFORMS = ("train", "val")
LOADERS = ("imagefolder", "lmdb", "lmdb_short", "lmdb_tensor", "lmdb_glibc_malloc")
#: The prepared-for-training conversion of the issue: shorter side 256, JPEG quality 90.
SHORT_SIDE = {"short_side": 256, "quality": 90}


@dataclass(frozen=True)
class Sizes:
    images: int
    classes: int
    loader_images: int  # images each DataLoader run delivers (a multiple of batch)
    batch: int
    workers: int
    repeats: int
    psnr_images: int
    cold_batches: int  # batches of ``batch`` each cold-batch contender reads per repeat
    shards: int


def make_sizes(quick: bool, classes: int, shards: int, images: int | None = None) -> Sizes:
    if quick:
        return Sizes(images or 640, min(classes, 10), 256, 64, 2, 2, 40, 3, shards)
    return Sizes(images or 12_000, classes, 3_200, 64, 2, 5, 400, 40, shards)


def pil_transform(kind: str) -> v2.Compose:
    """torchvision's ImageNet transforms, on PIL images, to a uint8 tensor."""
    if kind == "train":
        return v2.Compose([v2.RandomResizedCrop(224), v2.RandomHorizontalFlip(), v2.PILToTensor()])
    return v2.Compose([v2.Resize(256), v2.CenterCrop(224), v2.PILToTensor()])


def tensor_transform(kind: str) -> v2.Compose:
    """The same transforms on uint8 (3, H, W) tensors (decode="tensor")."""
    if kind == "train":
        return v2.Compose([v2.RandomResizedCrop(224), v2.RandomHorizontalFlip()])
    return v2.Compose([v2.Resize(256), v2.CenterCrop(224)])


# --------------------------------------------------------------------------------------------------
# The conversions.
# --------------------------------------------------------------------------------------------------


def convert(tree: Path, name: str, shards: int, encode: dict[str, Any]) -> dict[str, Any]:
    """One conversion by the real workflow in a fresh run folder: the file, wall seconds, encode CPU."""
    rundir = bench_common.fresh_dir(bench_common.OUT / "runs" / f"training-{name}")
    config = write_config(rundir, {"train": {"source": str(tree), "shards": shards}}, encode=encode)
    try:
        seconds = bench_common.run_snakemake(rundir, config)
    except bench_common.WorkflowFailed as exc:
        if "short_side" in str(exc):
            return {"skipped": "this workflow's config schema does not know encode.short_side yet"}
        raise
    jobs = bench_common.read_benchmark_tsvs(rundir / "work")
    lmdb_path = rundir / "results" / "train.lmdb"
    return {
        "lmdb": str(lmdb_path),
        "bytes": lmdb_path.stat().st_size,
        "seconds": seconds,
        "encode_cpu_seconds": sum(row.get("cpu_time", 0.0) for row in jobs.get("encode_shard", [])),
    }


def conversions(tree: Path, shards: int) -> dict[str, dict[str, Any]]:
    return {
        "passthrough": convert(tree, "passthrough", shards, {}),
        "short_side": convert(tree, "short", shards, SHORT_SIDE),
    }


# --------------------------------------------------------------------------------------------------
# The DataLoader contenders.
# --------------------------------------------------------------------------------------------------


def loader_dataset(name: str, kind: str, tree: Path, files: dict[str, dict[str, Any]]) -> Any | None:
    """The dataset contender ``name`` reads with transform ``kind``; None where its file is missing."""
    if name == "imagefolder":
        return ImageFolder(str(tree), transform=pil_transform(kind))
    source = files["short_side" if name == "lmdb_short" else "passthrough"]
    if "lmdb" not in source:
        return None
    if name == "lmdb_tensor":
        return dataset.LMDBDataset(source["lmdb"], transform=tensor_transform(kind), decode="tensor")
    return dataset.LMDBDataset(source["lmdb"], transform=pil_transform(kind))


def loader_run(ds: Any, sizes: Sizes, glibc_malloc: bool) -> tuple[float, float]:
    """img/s of one pass of ``sizes.loader_images`` images, from ``iter(loader)`` to the last batch,
    and the CPU seconds per image its workers used (counted once they are joined): on a shared
    machine the figure other jobs disturb least."""
    generator = torch.Generator().manual_seed(SEED)
    loader = DataLoader(ds, batch_size=sizes.batch, shuffle=True, num_workers=sizes.workers, generator=generator)
    if glibc_malloc:
        os.environ[dataset.MALLOC_ENV] = "default"  # the workers fork at iter(), with this environment
    cpu = bench_common.children_cpu_seconds()
    try:
        seconds = timed_iteration(loader, sizes.loader_images // sizes.batch)
    finally:
        os.environ.pop(dataset.MALLOC_ENV, None)
    return sizes.loader_images / seconds, (bench_common.children_cpu_seconds() - cpu) / sizes.loader_images


def timed_iteration(loader: DataLoader, batches: int) -> float:
    """Seconds from ``iter(loader)`` (worker start included) to its ``batches``-th batch; the
    workers are stopped after the clock."""
    start = time.perf_counter()
    iterator = iter(loader)
    for _ in range(batches):
        next(iterator)
    seconds = time.perf_counter() - start
    del iterator  # its __del__ stops the workers
    return seconds


def measure_loaders(tree: Path, files: dict[str, dict[str, Any]], sizes: Sizes, cache: bench_cold.PageCache) -> dict:
    """Cold and warm img/s (and worker CPU per image) of every contender and transform, in
    ``sizes.repeats`` rotating rounds."""
    runs: dict[str, dict[str, dict[str, list[tuple[float, float]]]]] = {
        kind: {mode: {name: [] for name in LOADERS} for mode in ("cold", "warm")} for kind in TRANSFORMS
    }
    for turn in range(sizes.repeats):
        for kind in TRANSFORMS:
            for name in rotated(list(LOADERS), turn):
                for mode in ("cold", "warm"):
                    if mode == "cold":
                        dataset.close_all_envs()
                        cache.empty()
                    ds = loader_dataset(name, kind, tree, files)
                    if ds is not None:
                        runs[kind][mode][name].append(loader_run(ds, sizes, name == "lmdb_glibc_malloc"))
                dataset.close_all_envs()
    assert not memory._malloc_settled, "this process read a batch: ImageFolder's workers would inherit its malloc"
    return {kind: {mode: summarise(by_name) for mode, by_name in modes.items()} for kind, modes in runs.items()}


def summarise(runs: dict[str, list[tuple[float, float]]]) -> dict[str, dict[str, Any]]:
    """Median img/s and worker CPU ms per image of each contender, and the medians of its ratios to
    ImageFolder within each repeat (img/s; images per worker CPU second)."""
    rows = {}
    base_rates = [rate for rate, _ in runs["imagefolder"]]
    base_cpu = [cpu for _, cpu in runs["imagefolder"]]
    for name, pairs in runs.items():
        if not pairs:
            continue
        rates, cpus = [rate for rate, _ in pairs], [cpu for _, cpu in pairs]
        ratios = [rate / base for rate, base in zip(rates, base_rates, strict=True)]
        cpu_ratios = [base / cpu for cpu, base in zip(cpus, base_cpu, strict=True)]
        rows[name] = {
            "img_s": median(rates),
            "runs": rates,
            "ratio": median(ratios),
            "ratios": ratios,
            "cpu_ms": 1e3 * median(cpus),
            "cpu_runs_ms": [1e3 * cpu for cpu in cpus],
            "cpu_ratio": median(cpu_ratios),
        }
    return rows


# --------------------------------------------------------------------------------------------------
# Pixels: the val transform's output against ImageFolder's on the originals.
# --------------------------------------------------------------------------------------------------


def psnr(got: torch.Tensor, want: torch.Tensor) -> float:
    """Peak signal-to-noise ratio of two uint8 images in dB; inf where they are equal."""
    error = float(((got.double() - want.double()) ** 2).mean())
    return math.inf if error == 0 else 10 * math.log10(255**2 / error)


def val_psnr(ds: Any, wanted: list[torch.Tensor], indices: list[int]) -> dict[str, Any]:
    """PSNR (median, worst, each) of ``ds``'s val output at ``indices`` against ``wanted``, one at a
    time (``ds[i]``: no batch in this process, see measure_loaders)."""
    values = [psnr(ds[i][0], want) for i, want in zip(indices, wanted, strict=True)]
    return {"median_db": float(np.median(values)), "worst_db": min(values), "images": len(values), "each_db": values}


def measure_pixels(tree: Path, files: dict[str, dict[str, Any]], sizes: Sizes) -> dict[str, dict[str, Any]]:
    """PSNR of each LMDB contender's val output against ImageFolder's, on a sample of the tree."""
    reference = ImageFolder(str(tree), transform=pil_transform("val"))
    indices = random.Random(SEED).sample(range(len(reference)), min(sizes.psnr_images, len(reference)))
    wanted = [reference[i][0] for i in indices]
    results = {}
    for name in ("lmdb", "lmdb_short", "lmdb_tensor"):
        ds = loader_dataset(name, "val", tree, files)
        if ds is not None:
            results[name] = val_psnr(ds, wanted, indices)
    dataset.close_all_envs()
    return results


def measure_photo_pixels() -> dict[str, Any]:
    """The same PSNR for ``short_side: 256`` on real photographs (bench_data.photo_tree): generated
    images carry film grain, white noise no JPEG below quality 100 keeps, so they understate it."""
    try:
        tree = bench_data.photo_tree()
    except OSError as exc:
        return {"skipped": str(exc)}
    converted = convert(tree, "photos", 1, SHORT_SIDE)
    if "lmdb" not in converted:
        return {"skipped": converted["skipped"]}
    reference = ImageFolder(str(tree), transform=pil_transform("val"))
    indices = list(range(len(reference)))
    result = val_psnr(
        dataset.LMDBDataset(converted["lmdb"], transform=pil_transform("val")),
        [reference[i][0] for i in indices],
        indices,
    )
    dataset.close_all_envs()
    result["photos"] = [Path(path).name for path, _ in reference.samples]
    result["wheels"] = list(bench_data.PHOTO_WHEELS)
    return result


def measure_decode_floor(tree: Path, sizes: Sizes) -> dict[str, float]:
    """CPU ms per image, in this process, on a sample of the tree's files, interleaved and repeated:
    the pass-through's ``check: decode`` (image_policy.check_decodes) and a full-size decode to RGB,
    which any resize starts from, so no resizing conversion can cost less per image."""
    paths = random.Random(SEED).sample(sorted(tree.rglob("*.JPEG")), sizes.psnr_images)
    datas = [path.read_bytes() for path in paths]
    steps: dict[str, Callable[[bytes], Any]] = {
        "check_decode_ms": lambda data: check_decodes(Image.open(io.BytesIO(data))),
        "full_decode_ms": lambda data: Image.open(io.BytesIO(data)).convert("RGB"),
    }
    runs: dict[str, list[float]] = {name: [] for name in steps}
    for turn in range(sizes.repeats):
        for name in rotated(list(steps), turn):
            started = time.process_time()
            for data in datas:
                steps[name](data)
            runs[name].append(1e3 * (time.process_time() - started) / len(datas))
    return {name: median(values) for name, values in runs.items()}


# --------------------------------------------------------------------------------------------------
# Cold batches: the reader against the disk's limit, interleaved batch by batch.
# --------------------------------------------------------------------------------------------------

BatchReader = Callable[[list[int]], Any]


def cold_batch_readers(lmdb_path: str, tree: Path) -> tuple[dict[str, BatchReader], Callable[[], None]]:
    """What each cold-batch contender does with one batch of indices, and how to close them."""
    ds = dataset.LMDBDataset(lmdb_path, decode="bytes")
    assert ds.reads_by_offset and ds._offsets is not None and ds._lengths is not None
    offsets, lengths = ds._offsets, ds._lengths
    fd = os.open(lmdb_path, os.O_RDONLY)
    paths = [path for path, _ in ImageFolder(str(tree)).samples]
    readers: dict[str, BatchReader] = {
        "limit": lambda batch: bench_cold.hinted_preads(fd, [(int(offsets[i]), int(lengths[i])) for i in batch]),
        "getitems": ds.__getitems__,
        "files": lambda batch: [bench_cold.read_file(paths[i]) for i in batch],
    }

    def close() -> None:
        os.close(fd)
        dataset.close_all_envs()

    return readers, close


def measure_cold_batches(lmdb_path: str, tree: Path, sizes: Sizes, cache: bench_cold.PageCache) -> dict[str, Any]:
    """Reads/s of each contender: per repeat one emptying, then batch after batch in rotating order,
    each contender on its own random batches (disjoint: every read is cold)."""
    count = len(ImageFolder(str(tree)))
    names = ["limit", "getitems", "files"]
    per = min(sizes.cold_batches, count // (sizes.batch * len(names)))
    rates: dict[str, list[float]] = {name: [] for name in names}
    for turn in range(sizes.repeats):
        order = random.Random(SEED + turn).sample(range(count), count)
        need = per * sizes.batch
        batches = {name: order[k * need : (k + 1) * need] for k, name in enumerate(names)}
        dataset.close_all_envs()
        cache.empty()
        readers, close = cold_batch_readers(lmdb_path, tree)
        seconds = dict.fromkeys(names, 0.0)
        try:
            for number in range(per):
                for name in rotated(names, number + turn):
                    batch = batches[name][number * sizes.batch : (number + 1) * sizes.batch]
                    seconds[name] += bench_common.timed(lambda reader=readers[name], batch=batch: reader(batch))
        finally:
            close()
        for name in names:
            rates[name].append(per * sizes.batch / seconds[name])
    ratios = {name: [v / base for v, base in zip(rates[name], rates["limit"], strict=True)] for name in names}
    rows = {
        n: {"reads_s": median(rates[n]), "runs": rates[n], "ratio": median(ratios[n]), "ratios": ratios[n]}
        for n in names
    }
    return {"batches_per_repeat": per, "rows": rows}


# --------------------------------------------------------------------------------------------------
# The section.
# --------------------------------------------------------------------------------------------------


def measure_training(tree: Path, sizes: Sizes, method: str) -> dict[str, Any]:
    files = conversions(tree, sizes.shards)
    folder = ImageFolder(str(tree))
    check_same_order(dataset.LMDBDataset(files["passthrough"]["lmdb"]), folder, tree)
    dataset.close_all_envs()
    image_paths = [Path(path) for path, _ in folder.samples]
    cache = bench_cold.PageCache(method, [Path(f["lmdb"]) for f in files.values() if "lmdb" in f] + image_paths)
    load_at_start = os.getloadavg()
    loaders = measure_loaders(tree, files, sizes, cache)  # first: no batch read in this process before
    pixels = measure_pixels(tree, files, sizes)
    photo_pixels = measure_photo_pixels()
    decode_floor = measure_decode_floor(tree, sizes)
    cold_batches = measure_cold_batches(files["passthrough"]["lmdb"], tree, sizes, cache)
    return {
        "sizes": asdict(sizes),
        "method": method,
        "seed": SEED,
        "reader": bench_cold.reader_version(),
        "images": len(folder),
        "source_bytes": sum(p.stat().st_size for p in image_paths),
        "files": files,
        "load_average": [load_at_start[0], os.getloadavg()[0]],
        "loaders": loaders,
        "pixels": pixels,
        "photo_pixels": photo_pixels,
        "decode_floor": decode_floor,
        "cold_batches": cold_batches,
    }
