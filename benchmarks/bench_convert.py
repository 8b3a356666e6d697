"""Sections 1, 3 and 5: conversion speed, output size, peak memory per rule.

Contenders, each run at N and 2N images, alternating, repeated:
- ``workflow``: the real workflow through the snakemake CLI, default settings;
- ``workflow_header``: the same with ``encode.check: header``;
- ``baseline``: benchmarks/baseline_article.py (Pool, re-encode at q95, pickled values, merge);
- ``limit``: cores x single-core PIL decode img/s of the same in-memory bytes, measured in the
  same rotation (the work the default check must do at the least).
Per-run img/s includes every fixed start-up cost; the marginal figure N / (t(2N) - t(N)) cancels
them and is what the targets are judged on.
"""

from __future__ import annotations

import io
import subprocess
import sys
import time
from dataclasses import dataclass
from multiprocessing import Pool
from pathlib import Path
from typing import Any

from PIL import Image

from benchmarks.bench_common import (
    BIN,
    CORES,
    OUT,
    REPO,
    children_cpu_seconds,
    fresh_dir,
    median,
    read_benchmark_tsvs,
    rotated,
    run_snakemake,
    timed,
)
from benchmarks.bench_data import sample_files
from tests.support.workflow import write_config

WORKFLOWS = {"workflow": {}, "workflow_header": {"encode": {"check": "header"}}}
CONTENDERS = (*WORKFLOWS, "baseline")


@dataclass
class Sizes:
    """The two trees of a marginal measurement: ``small`` holds N images, ``large`` 2N."""

    small: Path
    large: Path
    n_small: int
    n_large: int


def run_workflow(tree: Path, rundir: Path, shards: int, sections: dict[str, Any]) -> dict[str, Any]:
    """One conversion with the real workflow; returns seconds, output bytes and the job records."""
    fresh_dir(rundir)
    config = write_config(rundir, {"train": {"source": str(tree), "shards": shards}}, **sections)
    seconds = run_snakemake(rundir, config)
    return {
        "seconds": seconds,
        "output_bytes": (rundir / "results" / "train.lmdb").stat().st_size,
        "jobs": read_benchmark_tsvs(rundir / "work"),
    }


def run_baseline(tree: Path, rundir: Path) -> dict[str, Any]:
    """One conversion with the article's method, in its own process as a user would run it."""
    fresh_dir(rundir)
    output = rundir / "train.lmdb"
    command = [str(BIN / "python"), str(REPO / "benchmarks" / "baseline_article.py"), str(tree), str(output)]
    seconds = timed(lambda: subprocess.run([*command, "--workers", str(CORES)], check=True, capture_output=True))
    return {"seconds": seconds, "output_bytes": output.stat().st_size}


def decode_rate(blobs: list[bytes]) -> float:
    """Single-core img/s of a full PIL decode (what ``check: decode`` does) of in-memory bytes."""
    return len(blobs) / timed(lambda: decode_all(blobs))


def decode_all(blobs: list[bytes]) -> None:
    for blob in blobs:
        Image.open(io.BytesIO(blob)).load()


def decode_cpu_rate(blobs: list[bytes]) -> float:
    """Images decoded per CPU second of this process: the single-core rate with the load of
    other processes taken out (time shared with them is not counted)."""
    start = time.process_time()
    decode_all(blobs)
    return len(blobs) / (time.process_time() - start)


_WORKER_BLOBS: list[bytes] = []


def _keep_blobs(blobs: list[bytes]) -> None:
    _WORKER_BLOBS[:] = blobs


def _decode_kept(_: int) -> float:
    return decode_rate(_WORKER_BLOBS)


def parallel_decode_rate(blobs: list[bytes], processes: int = CORES) -> float:
    """img/s of ``processes`` processes decoding the sample at once: what the machine gives now.
    The bytes reach the workers before the clock starts."""
    with Pool(processes, initializer=_keep_blobs, initargs=(blobs,)) as pool:
        pool.map(abs, range(processes))  # wait until every worker is up
        return processes * len(blobs) / timed(lambda: pool.map(_decode_kept, range(processes), chunksize=1))


def convert_once(contender: str, tree: Path, shards: int) -> dict[str, Any]:
    rundir = OUT / "runs" / f"convert-{contender}"
    cpu = children_cpu_seconds()
    if contender == "baseline":
        result = run_baseline(tree, rundir)
    else:
        result = run_workflow(tree, rundir, shards, WORKFLOWS[contender])
    result["cpu_seconds"] = children_cpu_seconds() - cpu
    fresh_dir(rundir)  # free the disk; the figures are kept
    return result


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def measure_conversions(sizes: Sizes, repeats: int, shards: int, decode_sample: int) -> dict[str, Any]:
    """Every contender at both sizes, ``repeats`` times in rotating order; the decode limit too."""
    blobs = [p.read_bytes() for p in sample_files(sizes.large, decode_sample)]
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {c: {"small": [], "large": []} for c in CONTENDERS}
    limit: dict[str, list[float]] = {"single_core": [], "parallel": [], "per_cpu_second": []}
    for turn in range(repeats):
        for contender in rotated([*CONTENDERS, "limit"], turn):
            if contender == "limit":
                limit["single_core"].append(decode_rate(blobs))
                limit["parallel"].append(parallel_decode_rate(blobs))
                limit["per_cpu_second"].append(decode_cpu_rate(blobs))
                log(f"  decode limit: {limit['single_core'][-1]:.0f} img/s per core")
                continue
            for size in ("small", "large") if turn % 2 == 0 else ("large", "small"):
                tree = sizes.small if size == "small" else sizes.large
                runs[contender][size].append(convert_once(contender, tree, shards))
                log(f"  {contender} {size}: {runs[contender][size][-1]['seconds']:.1f} s")
    return summarize(sizes, runs, limit)


def marginal(n_small: int, n_large: int, small: float, large: float) -> float:
    """Images per second of the extra N images: fixed costs cancel out."""
    return (n_large - n_small) / (large - small) if large > small else float("nan")


def summarize(sizes: Sizes, runs: dict[str, dict[str, list[dict[str, Any]]]], limit: dict[str, list[float]]) -> dict:
    contenders = {}
    for contender, by_size in runs.items():
        wall = {size: median([r["seconds"] for r in rs]) for size, rs in by_size.items()}
        cpu = {size: median([r["cpu_seconds"] for r in rs]) for size, rs in by_size.items()}
        contenders[contender] = {
            "seconds_small": [r["seconds"] for r in by_size["small"]],
            "seconds_large": [r["seconds"] for r in by_size["large"]],
            "cpu_seconds_small": [r["cpu_seconds"] for r in by_size["small"]],
            "cpu_seconds_large": [r["cpu_seconds"] for r in by_size["large"]],
            "per_run_img_s": sizes.n_large / wall["large"],
            "marginal_img_s": marginal(sizes.n_small, sizes.n_large, wall["small"], wall["large"]),
            # images per CPU second of the extra images, all processes together
            "marginal_img_per_cpu_s": marginal(sizes.n_small, sizes.n_large, cpu["small"], cpu["large"]),
            "output_bytes_large": by_size["large"][-1]["output_bytes"],
            "jobs": {size: [r.get("jobs", {}) for r in by_size[size]] for size in ("small", "large")},
        }
    single = median(limit["single_core"])
    return {
        "n_small": sizes.n_small,
        "n_large": sizes.n_large,
        "contenders": contenders,
        "limit": {
            "single_core_img_s": single,
            "single_core_runs": limit["single_core"],
            "cores": CORES,
            "img_s": CORES * single,
            "parallel_img_s": median(limit["parallel"]),
            "img_per_cpu_s": median(limit["per_cpu_second"]),
        },
    }
