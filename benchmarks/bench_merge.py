"""Section 2: the merge rule's throughput against a plain LMDB write and ``cp`` of the same bytes.

A real run is stopped after its parts are written (target: the merged file, ``--notemp``; a
complete run's clean-up would delete the parts). Then, alternating and repeated, each in a fresh
process as the rule runs (the allocator's state matters, see below), only the work itself timed:
- ``merge``: imagefolder_lmdb.steps.merge's ``merge()`` on those parts, exactly as the rule calls it (it
  copies passed-through images from the source, which is in the page cache here, CRC-checked);
- ``plain_write``: the merged records' values, already in memory, appended to a new LMDB with
  py-lmdb and 64 MB commits, as the workflow's writer opens it (no reading, no checks);
- ``cp``: ``cp`` of the merged file.
All end with the output on disk (fsync). Afterwards the run is completed; the reader benchmarks
use its result.

    python -m benchmarks.bench_merge CONTENDER RUNDIR OUTPUT   # one timed contender, JSON seconds
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import lmdb

from benchmarks.bench_common import BIN, OUT, REPO, fresh_dir, median, rotated, run_snakemake
from imagefolder_lmdb.writing.atomic import fsync_path
from tests.support.workflow import write_config

BATCH_BYTES = 64 << 20
CONTENDERS = ("merge", "plain_write", "cp")


def run_until_merge(tree: Path, shards: int) -> tuple[Path, Path]:
    """A run stopped before the merge, its parts kept; returns the run folder and its config."""
    rundir = fresh_dir(OUT / "runs" / "merge-parts")
    # header check: the parts hold the same bytes as with the full check, and come sooner
    config = write_config(rundir, {"train": {"source": str(tree), "shards": shards}}, encode={"check": "header"})
    run_snakemake(rundir, config, "--notemp", "work/train/merged.lmdb")
    return rundir, config


def part_inputs(rundir: Path) -> tuple[list[str], list[str], str]:
    parts_dir = rundir / "work" / "train" / "parts"
    parts = sorted(str(p) for p in parts_dir.glob("*.lmdb"))
    reports = [p.removesuffix(".lmdb") + ".json" for p in parts]
    return parts, reports, str(rundir / "work" / "train" / "manifest.jsonl")


def merged_path(rundir: Path) -> Path:
    return rundir / "work" / "train" / "merged.lmdb"


def record_values(path: Path) -> list[bytes]:
    env = lmdb.open(str(path), subdir=False, readonly=True, lock=False)
    with env.begin() as txn:
        values = [value for _, value in txn.cursor()]
    env.close()
    return values


def plain_write(values: list[bytes], output: Path) -> None:
    """Sequential appends, 64 MB commits, one fsync at the end: LMDBWriter without its checks."""
    total = sum(map(len, values))
    env = lmdb.open(str(output), subdir=False, map_size=4 * total + (1 << 30), lock=False, meminit=False)
    batch_start, batch_bytes = 0, 0
    for index, value in enumerate(values):
        batch_bytes += len(value)
        if batch_bytes >= BATCH_BYTES or index == len(values) - 1:
            with env.begin(write=True) as txn:
                for key in range(batch_start, index + 1):
                    txn.put(b"%08d" % key, values[key], append=True)
            batch_start, batch_bytes = index + 1, 0
    env.sync(True)
    env.close()


def timed_contender(contender: str, rundir: Path, output: Path) -> float:
    """Prepare (untimed), then time one contender; runs in a fresh process (main below)."""
    if contender == "cp":
        start = time.perf_counter()
        subprocess.run(["cp", str(merged_path(rundir)), str(output)], check=True)
        fsync_path(str(output))
        return time.perf_counter() - start
    if contender == "plain_write":
        values = record_values(merged_path(rundir))
        start = time.perf_counter()
        plain_write(values, output)
        return time.perf_counter() - start
    from imagefolder_lmdb.steps.merge import merge  # imported before the clock: importing torch is not merging

    parts, reports, manifest = part_inputs(rundir)
    start = time.perf_counter()
    merge(parts, reports, manifest, str(output), {"disable": True})
    return time.perf_counter() - start


def run_contender(contender: str, rundir: Path, scratch: Path) -> float:
    for path in scratch.iterdir():
        path.unlink()
    os.sync()  # earlier writes must not be flushed on this contender's clock
    command = [str(BIN / "python"), "-m", "benchmarks.bench_merge", contender, str(rundir), str(scratch / "out.lmdb")]
    completed = subprocess.run(command, cwd=REPO, check=True, capture_output=True, text=True)
    return float(json.loads(completed.stdout.strip().splitlines()[-1]))


def measure_merge(tree: Path, shards: int, repeats: int) -> dict[str, Any]:
    rundir, config = run_until_merge(tree, shards)
    values = record_values(merged_path(rundir))
    total, records = sum(map(len, values)), len(values)
    del values
    scratch = fresh_dir(OUT / "runs" / "merge-out")
    seconds: dict[str, list[float]] = {name: [] for name in CONTENDERS}
    for turn in range(repeats):
        for name in rotated(CONTENDERS, turn):
            seconds[name].append(run_contender(name, rundir, scratch))
    fresh_dir(scratch)
    run_snakemake(rundir, config)  # complete the run: its result is the reader benchmarks' dataset
    return {
        "bytes": total,
        "records": records,
        "seconds": seconds,
        "mb_s": {name: total / 1e6 / median(times) for name, times in seconds.items()},
        "rundir": str(rundir),
    }


def main() -> None:
    contender, rundir, output = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    print(json.dumps(timed_contender(contender, rundir, output)))


if __name__ == "__main__":
    main()
