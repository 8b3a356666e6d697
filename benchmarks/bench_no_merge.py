"""Issue 60: a conversion without the serial merge (``--no-merge``), and reading a split of many data files.

    .venv/bin/python -m benchmarks.bench_no_merge --images 12000 --repeats 2

1. ``imagefolder-lmdb convert SRC OUT --cores 2 --set encode.check=header`` with and without ``--no-merge``,
   alternating, on the 12,000-image ImageNet-like tree of section 11 (benchmarks/bench_front_door.py's):
   wall, each rule's job seconds, and the bytes every job wrote (Snakemake's benchmark records, ``io_out``)
   against the output's size.
2. Reads: a split of N data files made from the one-file output (its records cut into N runs, each file
   written with write_meta's builder, the pointer by writing/first_revision.py): ``ds[i]`` (decode="bytes",
   random indices, warm) over 256 files against the one file, in alternating chunks of 20 reads; a worker's
   first batch (256 random indices, every file closed first as a fork closes them, warm cache) over 256
   files against the one file; and the open of 1,000 files (time, descriptors held after it and after
   reading a record of each file). ``--one-file OUT/train.lmdb``: these over an existing one-file output.

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


def read_ratio(one_file: Path, split: Path, indices: list[int], chunk: int = 20) -> float:
    """``ds[i]`` (decode="bytes") of ``indices`` over the split against the one file, warm (a first pass reads
    them into the page cache), timed in alternating chunks of ``chunk`` reads (a busy machine's drift falls on
    both alike), in CPU seconds of this thread (time.thread_time: without the waits for a core that other
    processes add on a shared machine): the one file's seconds over the split's (1.0: the same speed)."""
    close_all_envs()
    one, many = LMDBReader(str(one_file), decode="bytes"), LMDBReader(str(split), decode="bytes")
    for index in indices:
        one[index], many[index]
    seconds = {"one": 0.0, "many": 0.0}
    for start in range(0, len(indices), chunk):
        part = indices[start : start + chunk]
        for name in rotated(("one", "many"), start // chunk):
            ds = one if name == "one" else many
            started = time.thread_time()
            for index in part:
                ds[index]
            seconds[name] += time.thread_time() - started
    return seconds["one"] / seconds["many"]


def first_batch_seconds(path: Path, batch: list[int]) -> float:
    """A worker's first batch: the dataset made, every file closed (as a fork does), one batch read (warm)."""
    ds = LMDBReader(str(path), decode="bytes")
    ds.__getitems__(batch)
    close_all_envs()
    started = time.perf_counter()
    ds.__getitems__(batch)
    return time.perf_counter() - started


def first_batches(one_file: Path, split: Path, batch: list[int], repeats: int) -> dict[str, Any]:
    """The split's first batch over the one file's, alternating, medians of ``repeats``."""
    times: dict[str, list[float]] = {"one_file": [], "no_merge": []}
    for turn in range(repeats):
        for name in rotated(CONTENDERS, turn):
            times[name].append(first_batch_seconds(split if name == "no_merge" else one_file, batch))
    one, many = median(times["one_file"]), median(times["no_merge"])
    return {"one_file_s": one, "no_merge_s": many, "ratio": many / one, "batch": len(batch)}


def held_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def open_many(one_file: Path, files: int, repeats: int = 3) -> dict[str, float]:
    """Open a split of ``files`` data files: seconds (median; wall, and CPU seconds of this thread, which
    leave out a shared machine's waits for a core), the load average meanwhile, and descriptors held after
    the open and after reading a record of each file."""
    pointer = split_of_files(one_file, files, RUNS / f"files{files}")
    walls, cpus, load = [], [], os.getloadavg()[0]
    for _ in range(repeats):
        close_all_envs()
        before = held_descriptors()
        started, started_cpu = time.perf_counter(), time.thread_time()
        ds = LMDBReader(str(pointer), decode="bytes")
        cpus.append(time.thread_time() - started_cpu)
        walls.append(time.perf_counter() - started)
        after_open = held_descriptors() - before
    for index in range(0, len(ds), max(1, len(ds) // files)):
        ds[index]
    after_reads = held_descriptors() - before
    return {
        "files": files,
        "open_s": median(walls),
        "open_cpu_s": median(cpus),
        "load": (load + os.getloadavg()[0]) / 2,
        "fds_after_open": after_open,
        "fds_after_reads": after_reads,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=12000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--skip-convert", action="store_true", help="the reads only, from an earlier one-file run")
    parser.add_argument("--one-file", type=Path, help="the reads over this one-file output (implies --skip-convert)")
    args = parser.parse_args()
    source = None if args.one_file else tree(args.images)
    results: dict[str, Any] = {"images": args.images, "runs": []}
    for turn in range(0 if args.skip_convert or args.one_file else args.repeats):
        for name in rotated(CONTENDERS, turn):
            assert source is not None
            run = convert(source, RUNS / name, name == "no_merge")
            results["runs"].append({"contender": name, "turn": turn, **run})
            print(name, json.dumps(run), flush=True)
    walls = {name: median([r["wall"] for r in results["runs"] if r["contender"] == name]) for name in CONTENDERS}
    results["wall_ratio"] = walls["no_merge"] / walls["one_file"] if results["runs"] else None
    one_file = args.one_file or RUNS / "one_file" / "train.lmdb"
    length = len(LMDBReader(str(one_file), decode="bytes"))
    close_all_envs()  # split_of_files opens it on its own
    results["images"] = length
    indices = random.Random(0).sample(range(length), min(length, 20000))
    split = split_of_files(one_file, 256, RUNS / "files256")
    results["reads_load"] = [os.getloadavg()[0]]
    results["reads_ratios_256"] = [read_ratio(one_file, split, indices) for _ in range(5)]
    results["reads_load"].append(os.getloadavg()[0])
    results["reads_ratio_256"] = median(results["reads_ratios_256"])
    print("reads", results["reads_ratios_256"], flush=True)
    results["first_batch_256"] = first_batches(one_file, split, indices[:256], repeats=5)
    results["open_1000"] = open_many(one_file, 1000)
    print(json.dumps({k: v for k, v in results.items() if k != "runs"}, indent=1))
    (OUT / "no_merge.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
