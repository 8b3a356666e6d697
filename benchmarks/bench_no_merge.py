"""Issue 60: a conversion without the serial merge (``--no-merge``), and reading a split of many data files.

    .venv/bin/python -m benchmarks.bench_no_merge --images 12000 --repeats 2

1. ``imagefolder-lmdb convert SRC OUT --cores 2 --set encode.check=header`` with and without ``--no-merge``,
   alternating, on the 12,000-image ImageNet-like tree of section 11 (benchmarks/bench_front_door.py's):
   wall, each rule's job seconds, and the bytes every job wrote (Snakemake's benchmark records, ``io_out``)
   against the output's size.
2. Reads: a split of N data files made from the one-file output (its records cut into N runs, each file
   written with write_meta's builder, the pointer by writing/first_revision.py): ``ds[i]`` (decode="bytes",
   random indices) over 256 files against the one file, alternating; and the open of 1,000 files (time,
   descriptors held).

Raw figures: benchmarks/out/no_merge.json.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.bench_common import OUT, dir_bytes, fresh_dir, median, rotated
from benchmarks.bench_front_door import tree
from imagefolder_lmdb.reader import LMDBReader, Meta, decode_meta, encode_meta, record_key
from imagefolder_lmdb.reader.handles import close_all_envs, open_env_readonly
from imagefolder_lmdb.writing import meta_document
from imagefolder_lmdb.writing.first_revision import first_revision
from imagefolder_lmdb.writing.lmdb_writer import atomic_lmdb
from imagefolder_lmdb.writing.record_locations import add_locations

RUNS = OUT / "no_merge"
CONTENDERS = ("one_file", "no_merge")


def convert(source: Path, out: Path, no_merge: bool) -> dict[str, Any]:
    """One whole conversion with ``check: header``: wall, job seconds per rule, bytes the jobs wrote."""
    fresh_dir(out)
    command = [sys.executable, "-m", "imagefolder_lmdb.cli", "convert", str(source), str(out), "--cores", "2"]
    command += ["--set", "encode.check=header", *(["--no-merge"] if no_merge else [])]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    rules, written = job_records(out / "work" / "benchmarks")
    output = dir_bytes(out) - dir_bytes(out / "work")
    output -= sum(p.stat().st_size for p in out.glob("*.png")) + sum(p.stat().st_size for p in out.glob("*.json"))
    return {"wall": wall, "rules": rules, "written_mb": written, "output_mb": output / 1e6}


def job_records(folder: Path) -> tuple[dict[str, float], float]:
    """Seconds per rule (summed over its jobs) and MB written by every job (Snakemake's ``io_out``)."""
    seconds: dict[str, float] = {}
    written = 0.0
    for path in folder.rglob("*.tsv"):
        rule = path.relative_to(folder).parts[0]
        with open(path, newline="", encoding="utf-8") as stream:
            for row in csv.DictReader(stream, delimiter="\t"):
                seconds[rule] = seconds.get(rule, 0.0) + float(row["s"])
                written += float(row.get("io_out") or 0.0)
    return seconds, written


def cut_meta(meta: Meta, start: int, stop: int) -> Meta:
    """The meta of records ``start..stop-1`` of a one-file dataset, as a data file of them holds it."""
    document = meta.document
    return meta_document.build_meta(
        tool="bench_no_merge",
        classes=list(meta.classes),
        storage=meta.storage[start:stop].tolist(),
        settings=document["settings"],
        source={**document["source"], "images": stop - start},
        source_bytes=meta.source_bytes[start:stop].tolist(),
        stored_bytes=[0] * (stop - start),
        skipped=[],
        sizes=meta.sizes[start:stop],
        crc32=meta.crc32[start:stop].tolist(),
        paths=meta.paths[start:stop],
        labels=meta.labels[start:stop].tolist(),
    )


def split_of_files(one_file: Path, files: int, folder: Path) -> Path:
    """A pointer over ``files`` data files holding ``one_file``'s records in runs, made once."""
    pointer = folder / "train.lmdb"
    if pointer.exists():
        return pointer
    fresh_dir(folder)
    env = open_env_readonly(str(one_file))
    with env.begin(buffers=True) as txn:
        meta = decode_meta(txn, str(one_file))
        bounds = np.linspace(0, meta.length, files + 1).astype(int)
        paths = []
        for number, (start, stop) in enumerate(itertools.pairwise(bounds.tolist())):
            path = folder / "parts" / f"{number:05d}.lmdb"
            with atomic_lmdb(str(path), expected_bytes=1 << 20) as writer:
                for index in range(start, stop):
                    writer.append(record_key(index - start), bytes(txn.get(record_key(index))))
                values = encode_meta(cut_meta(meta, int(start), int(stop)))
                del values[b"meta/locations"]
                writer.put_many(values)
                add_locations(writer.env, writer.path)
            paths.append(str(path))
    env.close()
    first_revision(str(pointer), paths)
    return pointer


def reads_per_second(path: Path, indices: list[int]) -> float:
    """``ds[i]`` (decode="bytes") over ``indices``, warm (a first pass reads them into the page cache)."""
    close_all_envs()
    ds = LMDBReader(str(path), decode="bytes")
    for index in indices:
        ds[index]
    started = time.perf_counter()
    for index in indices:
        ds[index]
    return len(indices) / (time.perf_counter() - started)


def open_many(one_file: Path, files: int) -> dict[str, float]:
    """Open a split of ``files`` data files: seconds, and descriptors held after the open and after reading each."""
    pointer = split_of_files(one_file, files, RUNS / f"files{files}")
    close_all_envs()
    before = len(os.listdir("/proc/self/fd"))
    started = time.perf_counter()
    ds = LMDBReader(str(pointer), decode="bytes")
    opened = time.perf_counter() - started
    after_open = len(os.listdir("/proc/self/fd")) - before
    for index in range(0, len(ds), max(1, len(ds) // files)):
        ds[index]
    after_reads = len(os.listdir("/proc/self/fd")) - before
    return {"files": files, "open_s": opened, "fds_after_open": after_open, "fds_after_reads": after_reads}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=12000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--skip-convert", action="store_true", help="the reads only, from an earlier one-file run")
    args = parser.parse_args()
    source = tree(args.images)
    results: dict[str, Any] = {"images": args.images, "runs": []}
    for turn in range(0 if args.skip_convert else args.repeats):
        for name in rotated(CONTENDERS, turn):
            run = convert(source, RUNS / name, name == "no_merge")
            results["runs"].append({"contender": name, "turn": turn, **run})
            print(name, json.dumps(run), flush=True)
    walls = {name: median([r["wall"] for r in results["runs"] if r["contender"] == name]) for name in CONTENDERS}
    results["wall_ratio"] = walls["no_merge"] / walls["one_file"] if results["runs"] else None
    one_file = RUNS / "one_file" / "train.lmdb"
    indices = random.Random(0).sample(range(args.images), min(args.images, 20000))
    split = split_of_files(one_file, 256, RUNS / "files256")
    ratios = []
    for turn in range(3):
        rates = {}
        for name in rotated(CONTENDERS, turn):
            rates[name] = reads_per_second(split if name == "no_merge" else one_file, indices)
        ratios.append(rates["no_merge"] / rates["one_file"])
        print("reads", json.dumps(rates), flush=True)
    results["reads_ratio_256"] = median(ratios)
    results["open_1000"] = open_many(one_file, 1000)
    print(json.dumps({k: v for k, v in results.items() if k != "runs"}, indent=1))
    (OUT / "no_merge.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
