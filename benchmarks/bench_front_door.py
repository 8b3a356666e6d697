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
import functools
import json
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import yaml

from benchmarks import prose
from benchmarks.bench_common import OUT, REPO, children_cpu_seconds, fresh_dir, rotated, snakemake_env
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


@functools.cache
def takes_settings() -> bool:
    """Whether this checkout's command takes ``--set KEY=VALUE`` (then ``check: header`` goes that way,
    with the command's own shard count, as the defaults run gets)."""
    shown = subprocess.run(
        [sys.executable, "-m", "imagefolder_lmdb.cli", "convert", "--help"], capture_output=True, text=True
    )
    return "--set" in shown.stdout


def run_cli(source: Path, out: Path, header: bool) -> dict[str, Any]:
    """One ``imagefolder-lmdb convert`` (defaults, or ``check: header`` through a config file)."""
    fresh_dir(out)
    command = [sys.executable, "-m", "imagefolder_lmdb.cli", "convert", "--cores", "2"]
    if header and takes_settings():
        command += [str(source), str(out), "--set", "encode.check=header"]
    elif header:
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
    cpu = children_cpu_seconds()
    completed = subprocess.run(command, cwd=out, capture_output=True, text=True, env=snakemake_env(), check=False)
    seconds = time.perf_counter() - started
    done.set()
    if completed.returncode != 0:
        raise RuntimeError(f"{command} failed:\n{completed.stderr[-3000:]}")
    return {
        "seconds": seconds,
        "cpu": children_cpu_seconds() - cpu,
        "first_image": found[0] if found else None,
        "jobs": job_seconds(out / "work"),
    }


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
    started, cpu = time.perf_counter(), children_cpu_seconds()
    completed = subprocess.run(command, cwd=out, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if completed.returncode != 0:
        raise RuntimeError(f"litdata failed:\n{completed.stderr[-3000:]}")
    return {"seconds": seconds, "cpu": children_cpu_seconds() - cpu}


def measure(sizes: list[int], repeats: int, python: str) -> dict[str, Any]:
    """Every contender at every size, ``repeats`` times in rotating order; raw runs by size."""
    runs: dict[str, Any] = {str(size): {name: [] for name in CONTENDERS} for size in sizes}
    for size in sizes:
        source = tree(size)
        for turn in range(repeats):
            for name in rotated(CONTENDERS, turn):
                out = OUT / "front_door_runs" / name
                if name == "litdata":
                    result = run_litdata(python, source, out)
                else:
                    result = run_cli(source, out, header=name == "cli_header")
                runs[str(size)][name].append(result)
                print(f"{size} {name} {result['seconds']:.1f} s", flush=True)
    return {"sizes": sizes, "repeats": repeats, "runs": runs, "figures": figures(runs)}


def figures(runs: dict[str, Any]) -> dict[str, Any]:
    """Medians, the ratios to LitData (the median of each repeat's ratio), the time to the first image,
    the fixed cost and the per-image cost of each contender (a line through its two sizes' medians)."""
    result: dict[str, Any] = {}
    for size, by_name in runs.items():
        seconds = {name: [run["seconds"] for run in by_name[name]] for name in CONTENDERS}
        first = [run["first_image"] for run in by_name["cli"] if run.get("first_image") is not None]
        jobs = [run["jobs"] for run in by_name["cli"]]
        result[size] = {
            "median": {name: statistics.median(values) for name, values in seconds.items()},
            "ratio": {
                name: statistics.median(a / b for a, b in zip(seconds[name], seconds["litdata"], strict=True))
                for name in ("cli", "cli_header")
            },
            "cpu": {name: statistics.median(run["cpu"] for run in by_name[name]) for name in CONTENDERS},
            "first_image": statistics.median(first) if first else None,
            "jobs": {rule: statistics.median(job.get(rule, 0.0) for job in jobs) for rule in jobs[0]},
        }
    sizes = sorted(runs, key=int)
    if len(sizes) >= 2:
        small, large = sizes[0], sizes[-1]
        for name in CONTENDERS:
            slope = (result[large]["median"][name] - result[small]["median"][name]) / (int(large) - int(small))
            fixed = result[small]["median"][name] - slope * int(small)
            result.setdefault("cost", {})[name] = {"fixed_s": fixed, "ms_per_image": 1000 * slope}
    return result


def summary(data: dict[str, Any]) -> list[str]:
    """The markdown table: medians and ratios to LitData, the CLI's time to its first image encoded."""
    lines = [
        "| images | CLI, defaults | CLI, `check: header` | LitData `optimize()` | ratio defaults | ratio header | "
        "CLI to first image encoded | CPU seconds: defaults / header / LitData |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for size in sorted(data["runs"], key=int):
        row = data["figures"][size]
        med, ratio, first = row["median"], row["ratio"], row["first_image"]
        lines.append(
            f"| {int(size):,} | {med['cli']:.1f} s | {med['cli_header']:.1f} s | {med['litdata']:.1f} s | "
            f"**{ratio['cli']:.2f}x** | **{ratio['cli_header']:.2f}x** | {first:.1f} s | "
            f"{row['cpu']['cli']:.1f} / {row['cpu']['cli_header']:.1f} / {row['cpu']['litdata']:.1f} |"
        )
    cost = data["figures"].get("cost")
    if cost:
        lines += ["", "| contender | fixed cost | per image |", "| --- | ---: | ---: |"]
        for name in CONTENDERS:
            lines.append(f"| {name} | {cost[name]['fixed_s']:.1f} s | {cost[name]['ms_per_image']:.2f} ms |")
    lines += [
        "",
        "| rule (job seconds, summed over its jobs, CLI defaults) | "
        + " | ".join(f"{int(size):,} images" for size in sorted(data["runs"], key=int))
        + " |",
    ]
    lines.append("| --- |" + " ---: |" * len(data["runs"]))
    rules = sorted({rule for size in data["runs"] for rule in data["figures"][size]["jobs"]})
    for rule in rules:
        cells = [f"{data['figures'][size]['jobs'].get(rule, 0.0):.1f} s" for size in sorted(data["runs"], key=int)]
        lines.append(f"| {rule} | " + " | ".join(cells) + " |")
    return lines


def front_door_section(data: dict[str, Any]) -> list[str]:
    """Section 11 of BENCHMARKS.md: templates/front_door.md around this run's tables."""
    figures = data["figures"]
    sizes = sorted(data["runs"], key=int)
    values = {
        "repeats": data["repeats"],
        "small": f"{int(sizes[0]):,}",
        "large": f"{int(sizes[-1]):,}",
        "tables": "\n".join(summary(data)),
    }
    for name in CONTENDERS:
        cost = figures.get("cost", {}).get(name, {"fixed_s": float("nan"), "ms_per_image": float("nan")})
        values[f"{name}_fixed"] = f"{cost['fixed_s']:.1f}"
        values[f"{name}_per_image"] = f"{cost['ms_per_image']:.2f}"
    return prose.fill("front_door", "section", keep_lines=True, **values).rstrip("\n").split("\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[300, 12000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--litdata-python", default="/work/litdata-venv/bin/python")
    args = parser.parse_args()
    data = measure(args.sizes, args.repeats, args.litdata_python)
    (OUT / "front_door.json").write_text(json.dumps(data, indent=1))
    print("\n".join(summary(data)))


if __name__ == "__main__":
    main()
