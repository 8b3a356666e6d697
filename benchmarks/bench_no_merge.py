"""Issue 60: a conversion without the serial merge (``--no-merge``), and reading a split of many data files.

    PYTHONPATH=src:. .venv/bin/python -m benchmarks.bench_no_merge --images 12000 --repeats 2

1. ``imagefolder-lmdb convert SRC OUT --cores 2`` with and without ``--no-merge``, with ``--set
   encode.check=header`` and with the default check (every image decoded), and LitData's ``optimize()`` on the
   same images (benchmarks/litdata_optimize.py, in its own venv: ``--litdata-python``), in rotating order, on
   the 12,000-image ImageNet-like tree of section 11 (benchmarks/bench_front_door.py's): wall and CPU seconds
   of the whole command, each rule's job seconds and CPU seconds, and the bytes every job wrote (Snakemake's
   benchmark records, ``io_out``) against the output's size. The decode check's CPU seconds: the encode
   jobs' with the default check less theirs with ``check: header``. ``--skip-reads``: this part alone.
2. Reads: a split of N data files made from the one-file output (its records cut into N runs, each file
   written with write_meta's builder, the pointer by writing/first_revision.py): ``ds[i]`` (decode="bytes",
   random indices, warm) over 256 files against the one file, in alternating chunks of 20 reads; a worker's
   first batch (256 random indices, every file closed first as a fork closes them, warm cache) over 256
   files against the one file; and the open of 1,000 files (time, descriptors held after it and after
   reading a record of each file). ``--one-file OUT/train.lmdb``: these over an existing one-file output.
3. Last (root: drop_caches; ``--cold BATCHES``, 40 by default, 0: none): cold batches of 64 random indices
   (``__getitems__``, decode="bytes", as bench_cold measures one file) over the 256 files against the disk's
   hinted-pread limit of the same records in the same files (their ranges from each file's record locations,
   hinted with posix_fadvise(WILLNEED), then one pread each), and the one file's batches against its own
   limit: the four take turns batch by batch, the page cache dropped before each; medians of the per-batch
   ratios (limit seconds over batch seconds).

Raw figures: benchmarks/out/no_merge.json.
"""

from __future__ import annotations

import argparse
import csv
import functools
import itertools
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import bench_cold
from benchmarks.bench_common import (
    OUT,
    children_cpu_seconds,
    dir_bytes,
    drop_page_cache,
    fresh_dir,
    median,
    rotated,
    timed,
)
from benchmarks.bench_front_door import run_litdata, tree
from imagefolder_lmdb.reader import LMDBReader, Meta, decode_meta, encode_meta, record_key
from imagefolder_lmdb.reader.handles import close_all_envs, open_env_readonly
from imagefolder_lmdb.writing import meta_document
from imagefolder_lmdb.writing.first_revision import first_revision
from imagefolder_lmdb.writing.lmdb_writer import atomic_lmdb
from imagefolder_lmdb.writing.record_locations import add_locations

RUNS = OUT / "no_merge"
CONTENDERS = ("one_file", "no_merge")
#: The conversions timed: (name, --no-merge, check: header), and LitData's optimize().
CONVERSIONS = {
    "one_file_header": (False, True),
    "no_merge_header": (True, True),
    "one_file": (False, False),
    "no_merge": (True, False),
}
LITDATA = "litdata"


def convert(source: Path, out: Path, no_merge: bool, header: bool = True) -> dict[str, Any]:
    """One whole conversion (``check: header``, or the default check): wall and CPU seconds, job seconds and
    CPU seconds per rule, bytes the jobs wrote, the output's bytes."""
    fresh_dir(out)
    command = [sys.executable, "-m", "imagefolder_lmdb.cli", "convert", str(source), str(out), "--cores", "2"]
    command += [*(["--set", "encode.check=header"] if header else []), *(["--no-merge"] if no_merge else [])]
    started, cpu = time.perf_counter(), children_cpu_seconds()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    rules, rules_cpu, written = job_records(out / "work" / "benchmarks")
    output = dir_bytes(out) - dir_bytes(out / "work")
    output -= sum(p.stat().st_size for p in out.glob("*.png")) + sum(p.stat().st_size for p in out.glob("*.json"))
    return {
        "wall": wall,
        "cpu": children_cpu_seconds() - cpu,
        "rules": rules,
        "rules_cpu": rules_cpu,
        "written_mb": written,
        "output_mb": output / 1e6,
    }


def job_records(folder: Path) -> tuple[dict[str, float], dict[str, float], float]:
    """Seconds and CPU seconds per rule (summed over its jobs) and MB written by every job (Snakemake's
    ``s``, ``cpu_time`` and ``io_out``)."""
    seconds: dict[str, float] = {}
    cpu: dict[str, float] = {}
    written = 0.0
    for path in folder.rglob("*.tsv"):
        rule = path.relative_to(folder).parts[0]
        with open(path, newline="", encoding="utf-8") as stream:
            for row in csv.DictReader(stream, delimiter="\t"):
                seconds[rule] = seconds.get(rule, 0.0) + float(row["s"])
                cpu[rule] = cpu.get(rule, 0.0) + float(row.get("cpu_time") or 0.0)
                written += float(row.get("io_out") or 0.0)
    return seconds, cpu, written


def conversions(source: Path, repeats: int, litdata_python: str) -> list[dict[str, Any]]:
    """Every conversion of CONVERSIONS and LitData's, ``repeats`` times in rotating order."""
    runs = []
    for turn in range(repeats):
        for name in rotated([*CONVERSIONS, LITDATA], turn):
            if name == LITDATA:
                litdata = run_litdata(litdata_python, source, RUNS / LITDATA)
                run = {"wall": litdata["seconds"], "cpu": litdata["cpu"]}
            else:
                no_merge, header = CONVERSIONS[name]
                run = convert(source, RUNS / name, no_merge, header)
            runs.append({"contender": name, "turn": turn, **run})
            print(name, json.dumps(run), flush=True)
    return runs


def conversion_figures(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The medians and the ratios the issue asks for: ``--no-merge`` against the one file and against LitData,
    with either check; the decode check's CPU seconds (encode jobs, default less header); bytes written."""

    def med(name: str, key: str = "wall") -> float:
        return median([run[key] for run in runs if run["contender"] == name])

    def encode_cpu(name: str) -> float:
        return median([run["rules_cpu"].get("encode_shard", 0.0) for run in runs if run["contender"] == name])

    figures: dict[str, Any] = {"wall": {name: med(name) for name in [*CONVERSIONS, LITDATA]}}
    figures["cpu"] = {name: med(name, "cpu") for name in [*CONVERSIONS, LITDATA]}
    for check, suffix in (("header", "_header"), ("default", "")):
        no_merge = figures["wall"][f"no_merge{suffix}"]
        figures[f"ratio_one_file_{check}"] = no_merge / figures["wall"][f"one_file{suffix}"]
        figures[f"ratio_litdata_{check}"] = no_merge / figures["wall"][LITDATA]
    figures["decode_check_cpu_s"] = {
        "no_merge": encode_cpu("no_merge") - encode_cpu("no_merge_header"),
        "one_file": encode_cpu("one_file") - encode_cpu("one_file_header"),
    }
    figures["written_over_output"] = {name: med(name, "written_mb") / med(name, "output_mb") for name in CONVERSIONS}
    return figures


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
                    value = txn.get(record_key(index))
                    if value is None:
                        raise RuntimeError(f"{one_file}: record {index} is missing: convert it again")
                    writer.append(record_key(index - start), bytes(value))
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


# -- cold batches (--cold): __getitems__ against the disk's hinted-pread limit, the page cache dropped --------

#: Where each record lies: (number of its data file, offset, length), by index.
Places = list[tuple[int, int, int]]


def data_files(path: Path) -> list[Path]:
    """The data files of ``path``: the one file, or a split_of_files split's parts in the pointer's order."""
    if path.parent.joinpath("parts").is_dir():
        return sorted(path.parent.joinpath("parts").glob("*.lmdb"))
    return [path]


def record_places(files: list[Path]) -> Places:
    """Each record's data file, offset and length, from each file's record locations (``meta/locations``)."""
    places: Places = []
    for number, file in enumerate(files):
        reader = LMDBReader(str(file), decode="bytes")
        offsets, lengths = reader._offsets, reader._lengths
        if offsets is None or lengths is None:
            raise RuntimeError(f"{file}: not read by offset (no meta/locations): no hinted-pread limit to compare with")
        places += [(number, int(offset), int(length)) for offset, length in zip(offsets, lengths, strict=True)]
    close_all_envs()
    return places


class HintedLimit:
    """The disk's limit for a batch of ``path``'s records (bench_cold.hinted_preads_in_files): each record's
    range hinted, then read with one pread, on descriptors opened once."""

    def __init__(self, path: Path) -> None:
        files = data_files(path)
        self.places = record_places(files)
        self.fds = [os.open(file, os.O_RDONLY) for file in files]

    def __call__(self, batch: list[int]) -> list[bytes]:
        return bench_cold.hinted_preads_in_files(
            [(self.fds[f], o, n) for f, o, n in map(self.places.__getitem__, batch)]
        )

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)


def check_same_records(one: HintedLimit, many: HintedLimit, indices: list[int], split: Path) -> None:
    """The split's places must hold the one file's bytes, record for record (else the limit reads other data):
    a split made earlier from another one-file output does not."""
    if len(one.places) != len(many.places) or one(indices) != many(indices):
        raise RuntimeError(
            f"{split}: not a split of this one-file output's records: delete {split.parent} to remake it"
        )


def first_of_each_file(places: Places) -> list[int]:
    """The index of each data file's first record."""
    firsts: dict[int, int] = {}
    for index, (file, _, _) in enumerate(places):
        firsts.setdefault(file, index)
    return list(firsts.values())


def cold_batches(one_file: Path, split: Path, indices: list[int], batch: int = 64) -> dict[str, Any]:
    """``__getitems__`` (decode="bytes") of batches of ``batch`` random indices over the split and over the one
    file, each against the hinted-pread limit of the same records in the same files, the four taking turns
    batch by batch, the page cache dropped (drop_caches, root) before each batch read. Every data file is
    opened and a record of each read first (a training run's steady state: the opens are first_batches'
    figure). Per batch the ratio limit seconds / __getitems__ seconds (1.0: the disk's rate); medians."""
    limits = {"one_file": HintedLimit(one_file), "no_merge": HintedLimit(split)}
    readers = {
        "one_file": LMDBReader(str(one_file), decode="bytes"),
        "no_merge": LMDBReader(str(split), decode="bytes"),
    }
    try:
        check_same_records(limits["one_file"], limits["no_merge"], indices[:batch], split)
        for reader in readers.values():
            reader.__getitems__(first_of_each_file(limits["no_merge"].places))
        contenders: dict[str, Callable[[list[int]], Any]] = {
            **{name: reader.__getitems__ for name, reader in readers.items()},
            **{f"{name}_limit": limit for name, limit in limits.items()},
        }
        seconds, still_cached = cold_turns(contenders, indices, batch, [one_file, *data_files(split)])
    finally:
        for limit in limits.values():
            limit.close()
        close_all_envs()
    return {**cold_figures(seconds, batch), "still_cached_after_drop": max(still_cached)}


def cold_turns(
    contenders: dict[str, Callable[[list[int]], Any]], indices: list[int], batch: int, watched: list[Path]
) -> tuple[dict[str, list[float]], list[float]]:
    """Seconds of every contender on each batch, taking turns, the page cache dropped before each; and after the
    first drop of each batch the cached fraction of the ``watched`` files (mincore), so a drop that did not take
    shows."""
    seconds: dict[str, list[float]] = {name: [] for name in contenders}
    still_cached = []
    for number in range(len(indices) // batch):
        part = indices[number * batch : (number + 1) * batch]
        for turn, name in enumerate(rotated(list(contenders), number)):
            if not drop_page_cache():
                raise PermissionError("cold batches drop the page cache with drop_caches: run as root")
            if turn == 0:
                still_cached.append(bench_cold.cached_fraction(watched))
            seconds[name].append(timed(functools.partial(contenders[name], part)))
    return seconds, still_cached


def cold_figures(seconds: dict[str, list[float]], batch: int) -> dict[str, Any]:
    """Each dataset's batches against its limit (median of the per-batch ratios), each contender's images/s (median)."""
    figures: dict[str, Any] = {"batch": batch, "batches": len(seconds["one_file"])}
    for name in CONTENDERS:
        ratios = [limit / mine for limit, mine in zip(seconds[f"{name}_limit"], seconds[name], strict=True)]
        figures[f"{name}_vs_limit"] = median(ratios)
        figures[f"{name}_ratios"] = ratios
    figures["img_s"] = {name: batch / median(values) for name, values in seconds.items()}
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=12000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--skip-convert", action="store_true", help="the reads only, from an earlier one-file run")
    parser.add_argument("--one-file", type=Path, help="the reads over this one-file output (implies --skip-convert)")
    parser.add_argument("--skip-reads", action="store_true", help="the conversions only")
    parser.add_argument("--cold", type=int, default=40, metavar="BATCHES", help="cold batches of 64 (root; 0: none)")
    parser.add_argument("--litdata-python", default="/work/litdata-venv/bin/python")
    args = parser.parse_args()
    source = None if args.one_file else tree(args.images)
    results: dict[str, Any] = {"images": args.images, "runs": []}
    if not (args.skip_convert or args.one_file):
        assert source is not None
        results["runs"] = conversions(source, args.repeats, args.litdata_python)
        results["conversion"] = conversion_figures(results["runs"])
        print(json.dumps(results["conversion"], indent=1), flush=True)
        results["wall_ratio"] = results["conversion"]["ratio_one_file_header"]
    if args.skip_reads:
        (OUT / "no_merge_convert.json").write_text(json.dumps(results, indent=1))
        return
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
    if args.cold and os.geteuid() != 0:
        results["cold_batches_256"] = {"skipped": "dropping the page cache (drop_caches) needs root"}
    elif args.cold:  # last: dropping the page cache would make the warm figures above cold
        cold, started = random.Random(60).sample(range(length), min(length, 64 * args.cold)), time.perf_counter()
        results["cold_batches_256"] = cold_batches(one_file, split, cold)
        results["cold_batches_256"]["seconds"] = time.perf_counter() - started
    print("cold", {k: v for k, v in results.get("cold_batches_256", {}).items() if "ratios" not in k}, flush=True)
    print(json.dumps({k: v for k, v in results.items() if k != "runs"}, indent=1))
    (OUT / "no_merge.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
