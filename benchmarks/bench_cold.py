"""Section 8 (issue 14): cold reads, LMDB against plain files, with the page cache emptied.

An ImageNet-like tree (make_images.py: ~110 KB JPEGs, ~480x400, q90) is converted by the real
workflow (the snakemake CLI) into one LMDB; the tree itself is the ImageFolder contender. Every
contender reads the same random indices (one fixed seed). Each repeat runs every contender, in
rotating order, twice: cold (every mapping closed, the page cache emptied, the dataset object
made, then the clock) and warm (right after, the cache primed by the cold pass). Contenders:
- ``files``: ``open`` + ``read`` of the image files, one at a time (paths from ImageFolder);
- ``get_bytes``: ``LMDBDataset(path, decode="bytes").get_bytes(i)``, one at a time;
- ``getitems``: ``__getitems__`` on batches of 64 indices, ``decode="bytes"``;
- ``limit``: the disk's limit for those batches (issue 23): each batch's ranges hinted with
  ``posix_fadvise(WILLNEED)``, then read with one ``os.pread`` each, nothing else;
- ``txn_get`` / ``txn_get_readahead``: reference rows, raw py-lmdb ``txn.get`` on an environment
  opened as the reader opened it before issue 14 (``readahead=False``), and with readahead;
- ``loader_lmdb`` / ``loader_imagefolder``: a DataLoader (2 workers, batch 32, shuffled with a
  fixed generator, PIL decode + CenterCrop(224) + PILToTensor) over LMDBDataset and over
  torchvision's ImageFolder, the same number of batches, timed from ``iter(loader)`` (worker
  start included) to the last batch.

Emptying the cache: ``drop_caches`` (``sync; echo 3 > /proc/sys/vm/drop_caches``, root) or
``posix_fadvise(POSIX_FADV_DONTNEED)`` on the LMDB and every image file after a ``sync`` (no root;
file data only). Right after each emptying, ``mincore`` measures how much of the LMDB and of the
indexed files is still cached, so a drop that did not take shows in the results.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import random
import subprocess
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import lmdb
import numpy as np
import torch
from torch.utils.data import DataLoader
from torchvision.datasets import ImageFolder
from torchvision.transforms import v2

from benchmarks import bench_data
from benchmarks.bench_common import OUT, REPO, drop_page_cache, fresh_dir, median, rotated, run_snakemake, timed
from benchmarks.bench_reader import check_same_order
from imagefolder_lmdb import dataset  # the reader's public names (imagefolder_lmdb.reader)
from tests.support.workflow import write_config

SEED = 14
METHODS = ("drop_caches", "fadvise")
#: The DataLoader contenders: their ratios are to ``loader_imagefolder``, the others' to ``files``.
LOADERS = ("loader_imagefolder", "loader_lmdb")


@dataclass(frozen=True)
class Sizes:
    images: int
    classes: int
    reads: int  # random indices of the raw-read contenders
    batch: int  # __getitems__ batch
    loader_images: int  # images each DataLoader run delivers (a multiple of loader_batch)
    loader_batch: int
    loader_workers: int
    repeats: int
    shards: int


def make_sizes(quick: bool, classes: int, shards: int) -> Sizes:
    if quick:
        return Sizes(300, min(classes, 10), 200, 64, 160, 32, 2, 3, shards)
    return Sizes(5000, classes, 1000, 64, 1600, 32, 2, 3, shards)


def default_method() -> str:
    """``drop_caches`` where permitted (root), else ``fadvise``."""
    return "drop_caches" if os.geteuid() == 0 else "fadvise"


# --------------------------------------------------------------------------------------------------
# The page cache.
# --------------------------------------------------------------------------------------------------


class PageCache:
    """Empties the page cache of the benchmark's files and tells how much of them is cached."""

    def __init__(self, method: str, files: list[Path]) -> None:
        if method not in METHODS:
            raise ValueError(f"cold method {method!r}: choose one of {', '.join(METHODS)}")
        self.method, self.files = method, files

    def empty(self) -> None:
        os.sync()  # dirty pages cannot be dropped
        if self.method == "drop_caches":
            if not drop_page_cache():
                raise PermissionError("drop_caches needs root: use --cold-method fadvise")
            return
        for path in self.files:
            fd = os.open(path, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


_LIBC = ctypes.CDLL(None, use_errno=True)
_LIBC.mmap.restype = ctypes.c_void_p
_LIBC.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long)
_LIBC.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
_LIBC.mincore.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)
_MAP_FAILED = ctypes.c_void_p(-1).value


def cached_pages(path: Path) -> tuple[int, int]:
    """(pages of ``path`` in the page cache, pages in all), from ``mincore`` on a mapping that is
    never touched (mapping a file does not read it)."""
    size = path.stat().st_size
    pages = -(-size // mmap.PAGESIZE)
    if size == 0:
        return 0, 0
    fd = os.open(path, os.O_RDONLY)
    try:
        address = _LIBC.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if address in (None, _MAP_FAILED):
            raise OSError(ctypes.get_errno(), f"mmap {path}")
        try:
            vector = (ctypes.c_ubyte * pages)()
            if _LIBC.mincore(address, size, vector) != 0:
                raise OSError(ctypes.get_errno(), f"mincore {path}")
            return sum(byte & 1 for byte in vector), pages
        finally:
            _LIBC.munmap(address, size)
    finally:
        os.close(fd)


def cached_fraction(paths: list[Path]) -> float:
    cached = total = 0
    for path in paths:
        c, t = cached_pages(path)
        cached, total = cached + c, total + t
    return cached / total if total else 0.0


# --------------------------------------------------------------------------------------------------
# Contenders: each makes its dataset object (untimed) and returns what to time and how to close.
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Data:
    lmdb: str
    tree: Path
    indices: list[int]
    sizes: Sizes


Run = Callable[[], Any]
Contender = Callable[[Data], tuple[Run, Callable[[], None]]]


def read_file(path: str) -> bytes:
    with open(path, "rb") as stream:
        return stream.read()


def files(data: Data) -> tuple[Run, Callable[[], None]]:
    folder = ImageFolder(str(data.tree))  # lists the tree, as a training job does before reading
    paths = [folder.samples[i][0] for i in data.indices]
    return (lambda: [read_file(p) for p in paths]), lambda: None


def get_bytes(data: Data) -> tuple[Run, Callable[[], None]]:
    ds = dataset.LMDBDataset(data.lmdb, decode="bytes")
    return (lambda: [ds.get_bytes(i) for i in data.indices]), dataset.close_all_envs


def getitems(data: Data) -> tuple[Run, Callable[[], None]]:
    ds = dataset.LMDBDataset(data.lmdb, decode="bytes")
    step = data.sizes.batch
    batches = [data.indices[k : k + step] for k in range(0, len(data.indices), step)]
    return (lambda: [ds.__getitems__(batch) for batch in batches]), dataset.close_all_envs


def hinted_preads(fd: int, ranges: list[tuple[int, int]]) -> None:
    """The disk's limit for one batch: every ``(offset, length)`` hinted at once
    (``posix_fadvise(WILLNEED)``), then each read with one ``os.pread``, nothing else."""
    hinted_preads_in_files([(fd, offset, length) for offset, length in ranges])


def hinted_preads_in_files(ranges: list[tuple[int, int, int]]) -> list[bytes]:
    """hinted_preads over several files: every ``(fd, offset, length)`` hinted first, then each read
    with one ``os.pread`` (a batch of a split of many data files); the bytes read."""
    for fd, offset, length in ranges:
        os.posix_fadvise(fd, offset, length, os.POSIX_FADV_WILLNEED)
    return [os.pread(fd, length, offset) for fd, offset, length in ranges]


def limit(data: Data) -> tuple[Run, Callable[[], None]]:
    """hinted_preads on getitems' batches, at the offsets the reader reads them from."""
    ds = dataset.LMDBDataset(data.lmdb, decode="bytes")
    offsets, lengths = ds._offsets, ds._lengths
    if offsets is None or lengths is None:
        raise RuntimeError(f"{data.lmdb} is not read by offset: no limit to compare with")
    step = data.sizes.batch
    batches = [
        [(int(offsets[i]), int(lengths[i])) for i in data.indices[k : k + step]]
        for k in range(0, len(data.indices), step)
    ]
    fd = os.open(data.lmdb, os.O_RDONLY)

    def close() -> None:
        os.close(fd)
        dataset.close_all_envs()

    def run() -> None:
        for batch in batches:
            hinted_preads(fd, batch)

    return run, close


def raw_txn_get(readahead: bool) -> Contender:
    """py-lmdb's ``txn.get``, one transaction per read, on an environment opened with the options
    the reader used before issue 14 (``dataset.open_env_readonly``), ``readahead`` aside."""

    def contender(data: Data) -> tuple[Run, Callable[[], None]]:
        try:
            env = lmdb.open(data.lmdb, subdir=False, readonly=True, lock=False, readahead=readahead, meminit=False)
        except lmdb.Error as exc:  # e.g. the reader left the file open in this process
            raise RuntimeError(f"py-lmdb cannot open {data.lmdb}: {exc}") from exc
        keys = [dataset.record_key(i) for i in data.indices]

        def run() -> list[bytes]:
            values = []
            for key in keys:
                with env.begin(buffers=True) as txn:
                    values.append(bytes(txn.get(key)))
            return values

        return run, env.close

    return contender


def loader(kind: str) -> Contender:
    def contender(data: Data) -> tuple[Run, Callable[[], None]]:
        s = data.sizes
        transform = v2.Compose([v2.CenterCrop(224), v2.PILToTensor()])
        ds: Any = (
            dataset.LMDBDataset(data.lmdb, transform=transform)
            if kind == "lmdb"
            else ImageFolder(str(data.tree), transform=transform)
        )
        generator = torch.Generator().manual_seed(SEED)
        batches = s.loader_images // s.loader_batch
        data_loader = DataLoader(
            ds, batch_size=s.loader_batch, shuffle=True, num_workers=s.loader_workers, generator=generator
        )
        running: list[Any] = []

        def run() -> None:
            iterator = iter(data_loader)
            for _ in range(batches):
                next(iterator)
            running.append(iterator)  # its workers are stopped after the clock

        def close() -> None:
            running.clear()  # the iterator's __del__ stops the workers, which unmaps their pages
            dataset.close_all_envs()

        return run, close

    return contender


CONTENDERS: dict[str, Contender] = {
    "files": files,
    "get_bytes": get_bytes,
    "getitems": getitems,
    "limit": limit,
    "txn_get": raw_txn_get(readahead=False),
    "txn_get_readahead": raw_txn_get(readahead=True),
    "loader_imagefolder": loader("imagefolder"),
    "loader_lmdb": loader("lmdb"),
}


# --------------------------------------------------------------------------------------------------
# The data and the measurement.
# --------------------------------------------------------------------------------------------------


def convert(tree: Path, shards: int, name: str = "cold") -> tuple[Path, float]:
    """The tree through the real workflow, in a fresh run folder (benchmarks/out/runs/<name>): returns
    the LMDB and seconds. A fresh run each time, so the file is what today's workflow writes."""
    rundir = fresh_dir(OUT / "runs" / name)
    # header check: the same stored bytes as the full check (valid JPEGs pass through), sooner
    config = write_config(rundir, {"train": {"source": str(tree), "shards": shards}}, encode={"check": "header"})
    seconds = run_snakemake(rundir, config)
    return rundir / "results" / "train.lmdb", seconds


#: The reader measured: its package (scripts/dataset.py only re-exports it).
READER = "src/imagefolder_lmdb/reader"


def reader_version() -> dict[str, Any]:
    """Which reader was measured: the git tree id of its package at HEAD, and whether the working
    tree differs from it."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=False)
        return done.stdout.strip() if done.returncode == 0 else ""

    head = git("rev-parse", "--short", "HEAD")
    tree = git("rev-parse", f"HEAD:{READER}")
    modified = bool(git("status", "--porcelain", "--", READER))
    return {"reader_tree": tree[:10], "head": head, "modified": modified}


def located_records(lmdb_path: Path) -> int | None:
    """Records whose file offset the workflow recorded (issue 14's ``meta/locations``, offset 0 =
    not located), or None where this version of the reader knows no such array."""
    key, dtype = dataset.META_KEYS.get("locations"), getattr(dataset, "LOCATION_DTYPE", None)
    if key is None or dtype is None:
        return None
    env = lmdb.open(str(lmdb_path), subdir=False, readonly=True, lock=False)  # before any dataset opens it
    try:
        with env.begin() as txn:
            raw = txn.get(key)
    finally:
        env.close()
    try:
        return 0 if raw is None else int(np.count_nonzero(np.frombuffer(raw, dtype)["offset"]))
    except (ValueError, KeyError, TypeError):
        return None


def measure_cold(tree: Path, sizes: Sizes, method: str) -> dict[str, Any]:
    lmdb_path, convert_seconds = convert(tree, sizes.shards)
    located = located_records(lmdb_path)
    image_paths = bench_data.image_files(tree)
    folder = ImageFolder(str(tree))
    check_same_order(dataset.LMDBDataset(str(lmdb_path), decode="bytes"), folder, tree)
    dataset.close_all_envs()
    count = len(folder)
    indices = random.Random(SEED).sample(range(count), min(sizes.reads, count))
    data = Data(str(lmdb_path), tree, indices, sizes)
    cache = PageCache(method, [lmdb_path, *image_paths])
    watched = [lmdb_path], [Path(folder.samples[i][0]) for i in indices]  # mincore checks them after emptying
    load_at_start = os.getloadavg()
    items = {name: sizes.loader_images if name in LOADERS else len(indices) for name in CONTENDERS}
    rates: dict[str, dict[str, list[float]]] = {
        "cold": {n: [] for n in CONTENDERS},
        "warm": {n: [] for n in CONTENDERS},
    }
    still_cached: dict[str, list[float]] = {"lmdb": [], "files": []}
    for turn in range(sizes.repeats):
        for name in rotated(list(CONTENDERS), turn):
            cache.empty()
            still_cached["lmdb"].append(cached_fraction(watched[0]))
            still_cached["files"].append(cached_fraction(watched[1]))
            for mode in ("cold", "warm"):  # warm: the same run again, primed by the cold one
                run, close = CONTENDERS[name](data)
                try:
                    rates[mode][name].append(items[name] / timed(run))
                finally:
                    close()
    return {
        "sizes": asdict(sizes),
        "method": method,
        "seed": SEED,
        "reader": {**reader_version(), "located_records": located},
        "images": count,
        "image_bytes": sum(p.stat().st_size for p in image_paths),
        "lmdb_bytes": lmdb_path.stat().st_size,
        "convert_seconds": convert_seconds,
        "reads": len(indices),
        "load_average": [load_at_start[0], os.getloadavg()[0]],
        "still_cached_after_emptying": {k: max(v) for k, v in still_cached.items()},
        **{mode: summarise(runs) for mode, runs in rates.items()},
    }


def summarise(runs: dict[str, list[float]]) -> dict[str, dict[str, Any]]:
    """Median rate of each contender, and the median of its ratios to its reference within each
    repeat (raw reads against ``files``, loaders against ``loader_imagefolder``)."""
    rows = {}
    for name, values in runs.items():
        reference = runs["loader_imagefolder" if name in LOADERS else "files"]
        ratios = [value / base for value, base in zip(values, reference, strict=True)]
        rows[name] = {"img_s": median(values), "runs": values, "ratio": median(ratios), "ratios": ratios}
    return rows
