"""Section 6: does the workflow itself scale? Planning (``snakemake -n``) with many shards, and
count_check listing a 100,000-file tree (tiny files: it only lists, it never opens them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.bench_common import OUT, fresh_dir, median, read_benchmark_tsvs, run_snakemake
from tests.support.workflow import write_config


def dry_run_seconds(tree: Path, shards: int, repeats: int) -> list[float]:
    rundir = fresh_dir(OUT / "runs" / f"dry-run-{shards}")
    config = write_config(rundir, {"train": {"source": str(tree), "shards": shards}})
    seconds = [run_snakemake(rundir, config, "-n") for _ in range(repeats)]
    fresh_dir(rundir)
    return seconds


def measure_dry_runs(tree: Path, shard_counts: list[int], repeats: int) -> dict[str, Any]:
    runs = {shards: dry_run_seconds(tree, shards, repeats) for shards in shard_counts}
    return {str(shards): {"seconds": median(s), "runs": s} for shards, s in runs.items()}


def listing_once(tree: Path, files: int) -> dict[str, Any]:
    """count_check alone (and the no-op extract of a folder) on ``tree``: the rule's own time and
    peak memory from Snakemake's benchmark record; the wall time includes the snakemake start."""
    rundir = fresh_dir(OUT / "runs" / "listing")
    config = write_config(rundir, {"train": {"source": str(tree), "shards": 4}})
    wall = run_snakemake(rundir, config, "work/train/manifest.jsonl")
    record = read_benchmark_tsvs(rundir / "work")["count_check"][0]
    fresh_dir(rundir)
    return {
        "files": files,
        "wall_seconds": wall,
        "count_check_seconds": record["s"],
        "files_per_s": files / record["s"],
        "max_rss": record.get("max_rss"),
        "max_uss": record.get("max_uss"),
    }


def measure_listing(trees: dict[int, Path]) -> dict[str, Any]:
    """count_check on trees of tiny files of different sizes: its time, and whether its memory
    grows with the file count (the manifest it writes holds one line per image)."""
    runs = [listing_once(tree, files) for files, tree in sorted(trees.items())]
    small, large = runs[0], runs[-1]
    growth = None
    if small.get("max_uss") is not None and large.get("max_uss") is not None and large["files"] > small["files"]:
        growth = (large["max_uss"] - small["max_uss"]) * 1e6 / (large["files"] - small["files"])
    return {"runs": runs, "uss_bytes_per_file": growth, **large}
