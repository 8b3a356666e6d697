"""Section 14 (issue 45; issue 41's CRC-32 point): decoding at the size training needs, and the cost of
checking every record read against its CRC-32.

    PYTHONPATH=src .venv/bin/python -m benchmarks.bench_decode_size [--quick] [--repeats 3]
    .venv/bin/python -m benchmarks.run --sections decode_size      # the same, into the report

Four sets, each an ImageFolder tree converted by the real workflow (pass-through, the defaults):
real photographs (plasma-workspace-wallpapers, tests/support/photos.py: 4.1 MP, two progressive;
each photo under several names to fill a run), generated JPEGs of 2000x1500 and 4000x3000
(make_images.photo_like, grain sigma 8, quality 90) and the ImageNet-like set (bench_data.image_tree).
Contenders per set, each a DataLoader (2 workers, shuffled by one fixed generator, so all deliver the
same images with the same random crops): torchvision's transforms over ImageFolder; torchvision's
over LMDBDataset, twice (an A/A pair: the noise); this project's (imagefolder_lmdb.transforms) over
the same LMDBDataset; on the ImageNet-like set also torchvision's with ``crc_check=False``. Train:
RandomResizedCrop(224), RandomHorizontalFlip, PILToTensor; val: Resize(256), CenterCrop(224),
PILToTensor. Every repeat runs each contender once per transform, in rotating order; figures are
medians, ratios the medians of the ratios within a repeat; CPU is the workers' user + system time per
image delivered (their start included), the figure a shared machine disturbs least.

The CRC-32's own cost, in this process: zlib.crc32 over every record of a set, per image, against
the workers' CPU per image. Cold batches: section 9's row again, ``__getitems__(decode="bytes")``
checked and unchecked against the hinted-pread limit, the page cache of these files emptied with
posix_fadvise (DONTNEED) so that other jobs on the machine keep theirs.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import shutil
import time
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader
from torchvision.datasets import ImageFolder
from torchvision.transforms import v2

from benchmarks import bench_cold, bench_common, bench_data, bench_training
from benchmarks.bench_common import OUT, median, rotated
from benchmarks.make_images import photo_like
from imagefolder_lmdb import dataset
from imagefolder_lmdb import transforms as project
from tests.support.photos import photo_paths

SEED = 45
KINDS = ("train", "val")
BASE = ("imagefolder", "lmdb_tv", "lmdb_tv_again", "lmdb_ours")
NO_CRC = "lmdb_tv_nocrc"
GRAIN = 8.0


@dataclass(frozen=True)
class Sizes:
    repeats: int
    photo_copies: int  # each photograph under this many names
    generated: int  # images of each generated size
    imagenet: int  # images of the ImageNet-like set
    imagenet_loader: int  # images a run over it delivers
    cold_batches: int  # batches of 64 each cold contender reads per repeat


def make_sizes(quick: bool, repeats: int | None = None) -> Sizes:
    if quick:
        return Sizes(repeats or 2, 2, 8, 400, 128, 2)
    return Sizes(repeats or 3, 6, 32, 3000, 640, 10)


# -- the sets ---------------------------------------------------------------------------------------


def generated_tree(width: int, height: int, count: int) -> Path:
    """``count`` generated JPEGs of ``width`` x ``height`` in two classes (cached)."""
    root = bench_data.DATA / f"decode-{width}x{height}-{count}"
    if not bench_data.cached(root):
        images = bench_common.fresh_dir(root / "images")
        for index in range(count):
            folder = images / "ab"[index % 2]
            folder.mkdir(exist_ok=True)
            image = photo_like(np.random.default_rng(SEED * 1000 + index), width, height, GRAIN)
            image.save(folder / f"{index:04d}.jpg", quality=90)
        bench_data.mark_done(root)
    return root / "images"


def photo_tree(copies: int) -> Path | None:
    """The real photographs, each under ``copies`` names, in two classes; None where not installed."""
    photos = photo_paths()
    if len(photos) < 4:
        return None
    root = bench_common.fresh_dir(bench_data.DATA / f"decode-photos-{copies}") / "images"
    for copy in range(copies):
        for index, photo in enumerate(photos):
            folder = root / "ab"[index % 2]
            folder.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(photo, folder / f"{photo.parent.parent.parent.name}-{copy}.jpg")
    return root


SETS = ("photos", "gen2000", "gen4000", "imagenet")


def make_tree(name: str, sizes: Sizes) -> Path | None:
    if name == "photos":
        return photo_tree(sizes.photo_copies)
    if name == "imagenet":
        return bench_data.image_tree(sizes.imagenet, 10)
    width = int(name.removeprefix("gen"))
    return generated_tree(width, width * 3 // 4, sizes.generated)


# -- the DataLoader contenders ---------------------------------------------------------------------


def pipeline(kind: str, ours: bool) -> v2.Compose:
    crop, resize = (project.RandomResizedCrop, project.Resize) if ours else (v2.RandomResizedCrop, v2.Resize)
    if kind == "train":
        return v2.Compose([crop(224), v2.RandomHorizontalFlip(), v2.PILToTensor()])
    return v2.Compose([resize(256), v2.CenterCrop(224), v2.PILToTensor()])


def contender(name: str, kind: str, tree: Path, lmdb_path: str) -> Any:
    if name == "imagefolder":
        return ImageFolder(str(tree), transform=pipeline(kind, ours=False))
    return dataset.LMDBDataset(lmdb_path, transform=pipeline(kind, name == "lmdb_ours"), crc_check=name != NO_CRC)


def loader_run(ds: Any, images: int, batch: int) -> tuple[float, float]:
    """img/s from ``iter(loader)`` to the last batch, and the workers' CPU seconds per image."""
    generator = torch.Generator().manual_seed(SEED)
    loader = DataLoader(ds, batch_size=batch, shuffle=True, num_workers=2, generator=generator)
    cpu = bench_common.children_cpu_seconds()
    seconds = bench_training.timed_iteration(loader, images // batch)
    return images / seconds, (bench_common.children_cpu_seconds() - cpu) / images


def measure_set(tree: Path, lmdb_path: str, names: list[str], sizes: Sizes, images: int, batch: int) -> dict:
    runs: dict[str, dict[str, list[tuple[float, float]]]] = {k: {n: [] for n in names} for k in KINDS}
    for turn in range(sizes.repeats):
        for kind in KINDS:
            for name in rotated(names, turn):
                runs[kind][name].append(loader_run(contender(name, kind, tree, lmdb_path), images, batch))
                dataset.close_all_envs()
    return {kind: summarise(by_name) for kind, by_name in runs.items()}


def summarise(runs: dict[str, list[tuple[float, float]]]) -> dict[str, dict[str, Any]]:
    """Medians per contender, and medians of its within-repeat ratios to torchvision's transforms
    over the same dataset (``lmdb_tv``) and to ImageFolder: speed, and images per CPU second."""

    def ratios(name: str, base: str, column: int, inverse: bool) -> float:
        pairs = zip(runs[name], runs[base], strict=True)
        return median([(b[column] / a[column]) if inverse else (a[column] / b[column]) for a, b in pairs])

    return {
        name: {
            "img_s": median([rate for rate, _ in pairs]),
            "cpu_ms": 1e3 * median([cpu for _, cpu in pairs]),
            "cpu_runs_ms": [1e3 * cpu for _, cpu in pairs],
            "vs_tv": ratios(name, "lmdb_tv", 0, False),
            "vs_tv_cpu": ratios(name, "lmdb_tv", 1, True),
            "vs_folder": ratios(name, "imagefolder", 0, False),
            "vs_folder_cpu": ratios(name, "imagefolder", 1, True),
        }
        for name, pairs in runs.items()
    }


# -- the CRC-32's own cost, and cold batches --------------------------------------------------------


def crc_us_per_image(lmdb_path: str, repeats: int) -> float:
    """zlib.crc32 over every record's stored bytes, microseconds per image (median of repeats)."""
    ds = dataset.LMDBReader(lmdb_path, decode="bytes", crc_check=False)
    values = [ds.get_bytes(i) for i in range(len(ds))]
    dataset.close_all_envs()
    runs = []
    for _ in range(max(3, repeats)):
        started = time.perf_counter()
        for value in values:
            zlib.crc32(value)
        runs.append(1e6 * (time.perf_counter() - started) / len(values))
    return median(runs)


def cold_batches(lmdb_path: str, tree: Path, sizes: Sizes) -> dict[str, Any]:
    """Section 9's cold row again: reads/s of the hinted-pread limit and of ``__getitems__`` with and
    without the CRC-32 check, each on its own random batches, batch after batch in rotating order."""
    files = [Path(lmdb_path), *(Path(p) for p, _ in ImageFolder(str(tree)).samples)]
    cache = bench_cold.PageCache("fadvise", files)
    count, batch = len(files) - 1, 64
    names = ["limit", "getitems", "getitems_nocrc"]
    per = min(sizes.cold_batches, count // (batch * len(names)))
    rates: dict[str, list[float]] = {name: [] for name in names}
    for turn in range(sizes.repeats):
        order = random.Random(SEED + turn).sample(range(count), count)
        chosen = {name: order[k * per * batch : (k + 1) * per * batch] for k, name in enumerate(names)}
        dataset.close_all_envs()
        cache.empty()
        readers, close = bench_training.cold_batch_readers(lmdb_path, tree)
        readers["getitems_nocrc"] = dataset.LMDBDataset(lmdb_path, decode="bytes", crc_check=False).__getitems__
        seconds = dict.fromkeys(names, 0.0)
        try:
            for number in range(per):
                for name in rotated(names, number + turn):
                    indices = chosen[name][number * batch : (number + 1) * batch]
                    seconds[name] += bench_common.timed(functools.partial(readers[name], indices))
        finally:
            close()
        for name in names:
            rates[name].append(per * batch / seconds[name])
    return {
        "batches_per_repeat": per,
        "rows": {
            n: {
                "reads_s": median(rates[n]),
                "runs": rates[n],
                "vs_limit": median([v / base for v, base in zip(rates[n], rates["limit"], strict=True)]),
            }
            for n in names
        },
    }


# -- the section ------------------------------------------------------------------------------------

#: The batch size of each set's DataLoaders.
BATCH = {"photos": 10, "gen2000": 8, "gen4000": 8, "imagenet": 64}


def measure(quick: bool = False, repeats: int | None = None, only: tuple[str, ...] = SETS) -> dict[str, Any]:
    sizes = make_sizes(quick, repeats)
    load_at_start = os.getloadavg()[0]
    result: dict[str, Any] = {"sizes": asdict(sizes), "reader": bench_cold.reader_version(), "sets": {}}
    lmdbs: dict[str, str] = {}
    for name in only:
        tree = make_tree(name, sizes)
        if tree is None:
            result["sets"][name] = {"skipped": "the photographs are not installed (tests/support/photos.py)"}
            continue
        converted = bench_training.convert(tree, f"decode-{name}", 2, {})
        lmdbs[name] = converted["lmdb"]
        count = len(ImageFolder(str(tree)))
        batch = BATCH[name]
        images = sizes.imagenet_loader if name == "imagenet" else count - count % batch
        names = [*BASE, NO_CRC] if name == "imagenet" else list(BASE)
        measured = measure_set(tree, converted["lmdb"], names, sizes, images, batch)
        megapixels = median([w * h / 1e6 for w, h in np.asarray(dataset.LMDBReader(converted["lmdb"]).image_sizes)])
        result["sets"][name] = {"images": count, "loader_images": images, "batch": batch, "megapixels": megapixels}
        result["sets"][name].update(loaders=measured, crc_us=crc_us_per_image(converted["lmdb"], sizes.repeats))
        dataset.close_all_envs()
    if "imagenet" in lmdbs:  # last: its batches settle this process's malloc (bench_training.measure_loaders)
        result["cold"] = cold_batches(lmdbs["imagenet"], bench_data.image_tree(sizes.imagenet, 10), sizes)
    result["load_average"] = [load_at_start, os.getloadavg()[0]]
    return result


# -- the report -------------------------------------------------------------------------------------

TITLES = {
    "photos": "real photographs (4.1 MP)",
    "gen2000": "generated 2000x1500",
    "gen4000": "generated 4000x3000",
    "imagenet": "ImageNet-like (~480x400)",
}
ROWS = {
    "imagefolder": "ImageFolder, torchvision's transforms",
    "lmdb_tv": "LMDBDataset, torchvision's transforms",
    "lmdb_tv_again": "the same again (A/A)",
    "lmdb_ours": "LMDBDataset, imagefolder_lmdb.transforms",
    NO_CRC: "LMDBDataset, torchvision's, `crc_check=False`",
}


def report_lines(result: dict[str, Any]) -> list[str]:
    """The section's tables, in BENCHMARKS.md's form."""
    head = (
        "| set | DataLoader over | train img/s | train CPU ms/img | **vs torchvision's (CPU)** | vs ImageFolder (CPU) "
    )
    head += "| val img/s | val CPU ms/img | **vs torchvision's (CPU)** | vs ImageFolder (CPU) |"
    lines = [head, "| --- | --- | " + " | ".join(["---:"] * 8) + " |"]
    for key, data in result["sets"].items():
        if "skipped" in data:
            lines.append(f"| {TITLES[key]} | not measured: {data['skipped']} |" + " |" * 8)
            continue
        for name, label in ROWS.items():
            if name not in data["loaders"]["train"]:
                continue
            cells = []
            for kind in KINDS:
                row = data["loaders"][kind][name]
                cells += [f"{row['img_s']:,.0f}", f"{row['cpu_ms']:.1f}", f"**{row['vs_tv_cpu']:.2f}x**"]
                cells.append(f"{row['vs_folder_cpu']:.2f}x")
            lines.append(f"| {TITLES[key]} | {label} | " + " | ".join(cells) + " |")
    lines += ["", "| set | median MP | CRC-32 per image | share of the checked reader's worker CPU (train / val) |"]
    lines.append("| --- | ---: | ---: | ---: |")
    for key, data in result["sets"].items():
        if "skipped" not in data:
            shares = [data["crc_us"] / (10 * data["loaders"][k]["lmdb_tv"]["cpu_ms"]) for k in KINDS]
            lines.append(
                f"| {TITLES[key]} | {data['megapixels']:.1f} | {data['crc_us']:.0f} us | "
                + " / ".join(f"{s:.1f} %" for s in shares)
                + " |"
            )
    cold = result.get("cold")
    if cold:
        lines += ["", "| cold batches, ImageNet-like file | reads/s | each repeat | **vs limit** |"]
        lines.append("| --- | ---: | ---: | ---: |")
        for name, row in cold["rows"].items():
            each = ", ".join(f"{r:,.0f}" for r in row["runs"])
            lines.append(f"| {name} | {row['reads_s']:,.0f} | {each} | **{row['vs_limit']:.2f}x** |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--sets", nargs="+", choices=SETS, default=list(SETS))
    args = parser.parse_args()
    result = measure(args.quick, args.repeats, tuple(args.sets))
    OUT.mkdir(parents=True, exist_ok=True)
    name = "decode_size.json" if len(args.sets) == len(SETS) else f"decode_size.{'-'.join(args.sets)}.json"
    (OUT / name).write_text(json.dumps(result, indent=1))
    print("\n".join(report_lines(result)))


if __name__ == "__main__":
    main()
