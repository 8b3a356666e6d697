"""Issue 60: the steps outside the parallel encode at ImageNet's count, with and without a merge.

    PYTHONPATH=src:. .venv/bin/python -m benchmarks.bench_imagenet_count            # 1,331,167 images
    PYTHONPATH=src:. .venv/bin/python -m benchmarks.bench_imagenet_count --scale 0.1  # ~133,000, same layout

The layout of ILSVRC2012's three downloads, made here (cached under benchmarks/out/data/): a train tar of
1,000 class tars (the real WNIDs) holding 1,281,167 tiny JPEGs (732-1,300 per class, as ImageNet's), a flat,
shuffled val tar of 50,000 and a devkit that labels them. Every image is one 649-byte 8x8 JPEG made unique
by a comment segment holding its number, so what is timed is the per-record work, not the decoding.

Both modes run as config/imagenet.yaml sets the splits (train 16 shards, val 2), ``--cores 2``: the one-file
default and ``merge: false``. Reported per mode: the wall, the wall outside the encode (the wall less the span
in which any encode job ran: each job's span is its benchmark record's end, the file's mtime, less its
seconds), and every rule's jobs from Snakemake's benchmark records (seconds, CPU seconds, peak RSS).

``--scale`` scales each class's count and the val count; ``--until count_check`` runs extract and count_check
only. Raw figures: benchmarks/out/imagenet_count-SCALE.json.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import struct
import tarfile
import time
from pathlib import Path
from typing import Any

from PIL import Image

from benchmarks.bench_common import OUT, fresh_dir, read_benchmark_tsvs, run_snakemake
from benchmarks.bench_data import DATA, cached, mark_done
from imagefolder_lmdb.classes.lists import shipped_list
from tests.support.ilsvrc import make_imagenet1k_devkit, shuffled_ids
from tests.support.workflow import write_config

TRAIN_IMAGES = 1_281_167
VAL_IMAGES = 50_000
#: An 8x8 baseline JPEG (Pillow, quality 75): made once, each image is it with a comment of its number.
TINY_JPEG_SIZE = 8
MODES = ("one_file", "no_merge")
ENCODE_RULES = ("encode_shard",)


def tiny_jpeg() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (TINY_JPEG_SIZE, TINY_JPEG_SIZE), (120, 30, 200)).save(buffer, "JPEG", quality=75)
    return buffer.getvalue()


def numbered(jpeg: bytes, number: int) -> bytes:
    """``jpeg`` with a COM segment after its SOI holding ``number``: a distinct, valid image."""
    comment = b"%012d" % number
    return jpeg[:2] + b"\xff\xfe" + struct.pack(">H", len(comment) + 2) + comment + jpeg[2:]


def class_counts(total: int, classes: int, seed: int = 0) -> list[int]:
    """``classes`` counts between 732 and 1,300 (ImageNet's range) summing to ``total`` at full count."""
    rng = random.Random(seed)
    counts = [rng.randint(732, 1300) for _ in range(classes)]
    while (gap := total - sum(counts)) != 0:
        index = rng.randrange(classes)
        step = max(-1, min(1, gap)) * min(abs(gap), 50)
        counts[index] = min(1300, max(732, counts[index] + step))
    return counts


def scaled(counts: list[int], scale: float) -> list[int]:
    return [max(1, round(count * scale)) for count in counts]


def add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = 1_300_000_000
    tar.addfile(info, io.BytesIO(data))


def make_train_tar(path: Path, wnids: list[str], counts: list[int], jpeg: bytes) -> None:
    """A tar of ``<wnid>.tar`` members, each holding ``<wnid>_<n>.JPEG`` flat (ILSVRC2012_img_train.tar)."""
    number = 0
    with tarfile.open(path, "w") as outer:
        for wnid, count in zip(wnids, counts, strict=True):
            buffer = io.BytesIO()
            with tarfile.open(fileobj=buffer, mode="w") as inner:
                for index in range(count):
                    number += 1
                    add_bytes(inner, f"{wnid}_{index + 1}.JPEG", numbered(jpeg, number))
            add_bytes(outer, f"{wnid}.tar", buffer.getvalue())


def make_val_tar(path: Path, images: int, jpeg: bytes) -> None:
    """Flat ``ILSVRC2012_val_NNNNNNNN.JPEG`` members in a shuffled order, as the official tar."""
    order = list(range(1, images + 1))
    random.Random(7).shuffle(order)
    with tarfile.open(path, "w") as tar:
        for number in order:
            add_bytes(tar, f"ILSVRC2012_val_{number:08d}.JPEG", numbered(jpeg, 10_000_000 + number))


def layout(scale: float) -> dict[str, Path]:
    """The three downloads at ``scale`` of ImageNet's count (cached)."""
    root = DATA / f"imagenet-count-{scale:g}"
    paths = {
        "train": root / "ILSVRC2012_img_train.tar",
        "val": root / "ILSVRC2012_img_val.tar",
        "devkit": root / "ILSVRC2012_devkit_t12.tar.gz",
    }
    if cached(root):
        return paths
    fresh_dir(root)
    wnids = list(shipped_list("imagenet1k").names)
    jpeg = tiny_jpeg()
    make_train_tar(paths["train"], wnids, scaled(class_counts(TRAIN_IMAGES, len(wnids)), scale), jpeg)
    val_images = max(1, round(VAL_IMAGES * scale))
    make_val_tar(paths["val"], val_images, jpeg)
    wnid_to_id = {wnid: number for number, wnid in shuffled_ids(wnids).items()}
    rng = random.Random(2012)
    truth = [wnid_to_id[rng.choice(wnids)] for _ in range(val_images)]
    make_imagenet1k_devkit(paths["devkit"], root / "scratch", truth)
    mark_done(root)
    return paths


def splits(paths: dict[str, Path]) -> dict[str, dict[str, Any]]:
    """The splits as config/imagenet.yaml sets them (shards, layouts), at these paths."""
    return {
        "train": {
            "source": str(paths["train"]),
            "layout": "ilsvrc-train",
            "devkit": str(paths["devkit"]),
            "shards": 16,
        },
        "val": {"source": str(paths["val"]), "layout": "ilsvrc-val", "devkit": str(paths["devkit"]), "shards": 2},
    }


def job_spans(work: Path, rules: tuple[str, ...]) -> list[tuple[float, float]]:
    """(start, end) of every job of ``rules``: its benchmark record's mtime, less its seconds."""
    spans = []
    for rule in rules:
        for path in sorted((work / "benchmarks" / rule).rglob("*.tsv")):
            with open(path) as stream:
                header, row = stream.read().splitlines()[:2]
            seconds = float(dict(zip(header.split("\t"), row.split("\t"), strict=True))["s"])
            end = path.stat().st_mtime
            spans.append((end - seconds, end))
    return spans


def union_seconds(spans: list[tuple[float, float]]) -> float:
    """Seconds covered by at least one span."""
    covered, reach = 0.0, float("-inf")
    for start, end in sorted(spans):
        if end > reach:
            covered += end - max(start, reach)
            reach = end
    return covered


def per_rule(records: dict[str, list[dict[str, float]]]) -> dict[str, dict[str, float]]:
    """Per rule: jobs, seconds summed, longest job, CPU seconds summed, peak RSS (MB) of any job."""
    table = {}
    for rule, rows in records.items():
        table[rule] = {
            "jobs": len(rows),
            "s": sum(row["s"] for row in rows),
            "max_s": max(row["s"] for row in rows),
            "cpu_s": sum(row.get("cpu_time", 0.0) for row in rows),
            "max_rss_mb": max(row.get("max_rss", 0.0) for row in rows),
        }
    return table


def run_mode(mode: str, paths: dict[str, Path], scale: float, until: str | None = None) -> dict[str, Any]:
    """One conversion in ``mode``; ``until``: stop after that rule's jobs (Snakemake's ``--until``)."""
    rundir = fresh_dir(OUT / "runs" / f"imagenet-count-{scale:g}-{mode}")
    sections = {"merge": False} if mode == "no_merge" else {}
    config = write_config(rundir, splits(paths), **sections)
    os.sync()
    wall = run_snakemake(rundir, config, *(["--until", until] if until else []))
    work = rundir / "work"
    encode = union_seconds(job_spans(work, ENCODE_RULES))
    result = {"mode": mode, "wall": wall, "encode_span": encode, "outside_encode": wall - encode}
    result["rules"] = per_rule(read_benchmark_tsvs(work))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of ImageNet's count (same layout)")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--until", help="stop after this rule (count_check: extract and count_check only)")
    args = parser.parse_args()
    started = time.perf_counter()
    paths = layout(args.scale)
    print(f"layout: {time.perf_counter() - started:.0f} s", flush=True)
    results: dict[str, Any] = {"scale": args.scale, "load_before": os.getloadavg(), "runs": []}
    for mode in args.modes:
        run = run_mode(mode, paths, args.scale, args.until)
        results["runs"].append(run)
        print(json.dumps(run, indent=1), flush=True)
    results["load_after"] = os.getloadavg()
    suffix = f"-until-{args.until}" if args.until else ""
    (OUT / f"imagenet_count-{args.scale:g}{suffix}.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
