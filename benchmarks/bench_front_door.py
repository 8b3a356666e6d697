"""Section 11 (issue 30): time to a verified dataset from the front door, ``imagefolder-lmdb convert
SRC OUT --cores 2``, side by side with LitData's ``optimize()`` storing the same files' bytes and
labels with 2 workers (it checks, verifies and draws nothing), as whole processes, alternating.

    .venv/bin/python -m benchmarks.bench_front_door --sizes 300 12000 --repeats 3

LitData runs in its own venv (``--litdata-python``, default /work/litdata-venv/bin/python; litdata
0.2.76, torch 2.14.1: DESIGN.md section 12) with benchmarks/litdata_optimize.py. The trees are
ImageNet-like JPEGs (benchmarks/make_images), made once under benchmarks/out/frontdoor/. For the
CLI, the time to the first image encoded (the first encode job's progress file) is taken as well:
the fixed start cost, apart from the per-image cost. Raw figures: benchmarks/out/front_door.json.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import yaml

from benchmarks.bench_common import OUT, REPO, fresh_dir, rotated, snakemake_env
from tests.support.images import make_images

DATA = OUT / "frontdoor"
CONTENDERS = ("cli", "cli_header", "litdata")


def tree(images: int) -> Path:
    """The ImageNet-like tree of ``images`` images (100 classes; 10 under 1,000 images), made once."""
    folder, complete = DATA / f"images{images}", DATA / f"images{images}.complete"
    if not complete.exists():
        fresh_dir(folder)
        make_images(str(folder), images, 10 if images < 1000 else 100)
        complete.touch()
    return folder


def first_progress(work: Path, done: threading.Event, started: float, found: list[float]) -> None:
    """Poll for the first encode job's progress file: the time to the first image encoded."""
    while not done.is_set():
        if next(work.glob("*/parts/*.progress"), None) is not None:
            found.append(time.perf_counter() - started)
            return
        time.sleep(0.05)


def run_cli(source: Path, out: Path, header: bool) -> dict[str, Any]:
    """One ``imagefolder-lmdb convert`` (defaults, or ``check: header`` through a config file)."""
    fresh_dir(out)
    command = [sys.executable, "-m", "imagefolder_lmdb.cli", "convert", "--cores", "2"]
    if header:
        config = {"results": str(out), "work": str(out / "work"), "splits": {"train": {"source": str(source)}}}
        config["encode"] = {"check": "header"}
        (out / "config.yaml").write_text(yaml.safe_dump(config))
        command += ["--configfile", str(out / "config.yaml")]
    else:
        command += [str(source), str(out)]
    done, found = threading.Event(), []
    started = time.perf_counter()
    watcher = threading.Thread(target=first_progress, args=(out / "work", done, started, found), daemon=True)
    watcher.start()
    completed = subprocess.run(command, cwd=out, capture_output=True, text=True, env=snakemake_env(), check=False)
    seconds = time.perf_counter() - started
    done.set()
    if completed.returncode != 0:
        raise RuntimeError(f"{command} failed:\n{completed.stderr[-3000:]}")
    return {"seconds": seconds, "first_image": found[0] if found else None, "jobs": job_seconds(out / "work")}


def job_seconds(work: Path) -> dict[str, float]:
    """Seconds of each rule's jobs (Snakemake's benchmark records), summed over its jobs."""
    totals: dict[str, float] = {}
    for path in (work / "benchmarks").rglob("*.tsv"):
        rule = path.relative_to(work / "benchmarks").parts[0]
        with open(path, newline="") as stream:
            for row in csv.DictReader(stream, delimiter="\t"):
                totals[rule] = totals.get(rule, 0.0) + float(row["s"])
    return totals


def run_litdata(python: str, source: Path, out: Path) -> dict[str, Any]:
    fresh_dir(out)
    command = [python, str(REPO / "benchmarks" / "litdata_optimize.py"), str(source), str(out / "optimized")]
    started = time.perf_counter()
    completed = subprocess.run(command, cwd=out, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if completed.returncode != 0:
        raise RuntimeError(f"litdata failed:\n{completed.stderr[-3000:]}")
    return {"seconds": seconds}


def measure(sizes: list[int], repeats: int, python: str) -> dict[str, Any]:
    results: dict[str, Any] = {str(size): {name: [] for name in CONTENDERS} for size in sizes}
    for size in sizes:
        source = tree(size)
        for turn in range(repeats):
            for name in rotated(CONTENDERS, turn):
                out = OUT / "front_door_runs" / name
                if name == "litdata":
                    result = run_litdata(python, source, out)
                else:
                    result = run_cli(source, out, header=name == "cli_header")
                results[str(size)][name].append(result)
                print(f"{size} {name} {result['seconds']:.1f} s", flush=True)
    return results


def summary(results: dict[str, Any]) -> list[str]:
    """The markdown table: medians and ratios to LitData, and the CLI's fixed and per-image cost."""
    lines = [
        "| images | CLI, defaults | CLI, `check: header` | LitData | ratio defaults | ratio header | "
        "CLI to first image |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for size, runs in results.items():
        med = {name: statistics.median(run["seconds"] for run in runs[name]) for name in CONTENDERS}
        first = [run["first_image"] for run in runs["cli"] if run["first_image"] is not None]
        lines.append(
            f"| {int(size):,} | {med['cli']:.1f} s | {med['cli_header']:.1f} s | {med['litdata']:.1f} s | "
            f"{med['cli'] / med['litdata']:.2f}x | {med['cli_header'] / med['litdata']:.2f}x | "
            f"{statistics.median(first) if first else float('nan'):.1f} s |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[300, 12000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--litdata-python", default="/work/litdata-venv/bin/python")
    args = parser.parse_args()
    results = measure(args.sizes, args.repeats, args.litdata_python)
    (OUT / "front_door.json").write_text(json.dumps(results, indent=1))
    print("\n".join(summary(results)))


if __name__ == "__main__":
    main()
