"""Benchmark the workflow and the reader, side by side in one invocation, and write BENCHMARKS.md.

    .venv/bin/python -m benchmarks.run                  # 20,000 images (N = 10,000 and 2N = 20,000)
    .venv/bin/python -m benchmarks.run --quick          # a few hundred images, to try it out
    .venv/bin/python -m benchmarks.run --report-only    # rewrite BENCHMARKS.md from the last results
    .venv/bin/python -m benchmarks.run --sections cold  # only section 8, cold reads (issue 14)
    .venv/bin/python -m benchmarks.run --sections training  # only section 9, training input (issue 23)
    .venv/bin/python -m benchmarks.run --sections sampler   # only section 10, the sampler's locality (issue 32)
    .venv/bin/python -m benchmarks.run --sections decode_size   # only section 14, decode at size (issue 45)

Generated data is cached in benchmarks/out/data/ (ignored by git); raw figures go to
benchmarks/out/results.json, the report to BENCHMARKS.md and benchmarks/benchmarks.png. A
``--sections`` run with no full run's results of the same sizes to add to writes its report to
benchmarks/out/BENCHMARKS.partial.md instead, so the committed figures stay whole.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchmarks import (
    bench_archives,
    bench_cold,
    bench_convert,
    bench_data,
    bench_decode_size,
    bench_front_door,
    bench_memory,
    bench_merge,
    bench_reader,
    bench_sampler,
    bench_scale,
    bench_startup,
    bench_training,
    report,
)
from benchmarks.bench_common import CORES, OUT, WorkflowFailed

REPO = Path(__file__).resolve().parents[1]


def results_path(quick: bool) -> Path:
    """Raw figures of the last run; a quick try-out keeps its own, next to the full run's."""
    return OUT / ("results.quick.json" if quick else "results.json")


SECTIONS = (
    "convert",
    "memory",
    "merge",
    "reader",
    "scale",
    "archives",
    "cold",
    "training",
    "sampler",
    "front_door",
    "decode_size",
)
#: LitData's own venv (section 11): litdata 0.2.76 with torch 2.14.1, apart from this project's.
LITDATA_PYTHON = os.environ.get("LITDATA_PYTHON", "/work/litdata-venv/bin/python")
#: Sections that make their own data rather than use the 2N / N trees.
OWN_DATA = frozenset({"cold", "training", "sampler", "front_door", "decode_size"})


@dataclass(frozen=True)
class Plan:
    """Sizes and repeat counts of one invocation."""

    quick: bool
    images: int  # 2N: the larger tree; N = images // 2
    classes: int
    shards: int
    convert_repeats: int
    merge_repeats: int
    reader_reads: int
    reader_repeats: int
    cold_reads: int
    dry_run_shards: tuple[int, ...]
    listing_files: int
    archive_repeats: int
    decode_sample: int


def make_plan(images: int, quick: bool) -> Plan:
    if quick:
        return Plan(True, images, 10, 2 * CORES, 2, 3, 200, 3, 200, (4, 1024), 10_000, 1, 200)
    return Plan(False, images, 100, 2 * CORES, 3, 5, 1000, 5, 1000, (4, 1024, 4096), 100_000, 3, 1000)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def run_section(name: str, results: dict[str, Any], function: Any, *args: Any) -> None:
    """Run one section; a failure is recorded in the results, the other sections still run."""
    log(f"section {name}")
    start = time.perf_counter()
    try:
        results[name] = function(*args)
    except (WorkflowFailed, OSError, RuntimeError, AssertionError, ValueError) as exc:
        results[name] = {"error": f"{type(exc).__name__}: {exc}"}
        log(f"section {name} FAILED: {exc}")
    results.setdefault("section_seconds", {})[name] = time.perf_counter() - start
    results_path(results["plan"]["quick"]).write_text(json.dumps(results, indent=1))


def prepare_data(plan: Plan) -> dict[str, Any]:
    log(f"data: {plan.images} images in {plan.classes} classes (cached in {bench_data.DATA})")
    large = bench_data.image_tree(plan.images, plan.classes)
    small = bench_data.first_part(large, plan.images // 2)
    return {"large": large, "small": small}


def convert_section(plan: Plan, trees: dict[str, Path]) -> dict[str, Any]:
    small, large = trees["small"], trees["large"]
    sizes = bench_convert.Sizes(small, large, image_count(small), image_count(large))
    result = bench_convert.measure_conversions(sizes, plan.convert_repeats, plan.shards, plan.decode_sample)
    result["source_bytes_large"] = bench_data.tree_bytes(trees["large"])
    for contender in result["contenders"].values():
        contender.pop("jobs")  # memory is measured by its own section, with a finer poll
    return result


def image_count(tree: Path) -> int:
    return len(bench_data.image_files(tree))


def memory_section(plan: Plan, trees: dict[str, Path]) -> dict[str, Any]:
    small, large = trees["small"], trees["large"]
    return bench_memory.measure_memory(small, large, image_count(small), image_count(large), plan.shards)


def scale_section(plan: Plan, trees: dict[str, Path]) -> dict[str, Any]:
    sizes = (plan.listing_files // 10, plan.listing_files)
    tiny = {files: bench_data.tiny_tree(files) for files in sizes}
    return {
        "dry_run": bench_scale.measure_dry_runs(trees["small"], list(plan.dry_run_shards), repeats=2),
        "listing": bench_scale.measure_listing(tiny),
        "startup": bench_startup.measure_startup(repeats=3),
    }


def archives_section(plan: Plan, trees: dict[str, Path]) -> dict[str, Any]:
    # N and 2N, as in section 1: the larger the sizes, the less the fixed cost of a run weighs
    sets = {"small": bench_data.ilsvrc_archives(trees["small"]), "large": bench_data.ilsvrc_archives(trees["large"])}
    return bench_archives.measure_archives(sets, plan.shards, plan.archive_repeats)


def cold_section(plan: Plan, method: str) -> dict[str, Any]:
    sizes = bench_cold.make_sizes(plan.quick, plan.classes, plan.shards)
    log(f"cold: {sizes.images} images, cache emptied with {method}")
    tree = bench_data.image_tree(sizes.images, sizes.classes)
    return bench_cold.measure_cold(tree, sizes, method)


def training_section(plan: Plan, method: str) -> dict[str, Any]:
    sizes = bench_training.make_sizes(plan.quick, plan.classes, plan.shards)
    log(f"training: {sizes.images} images, cache emptied with {method}")
    tree = bench_data.image_tree(sizes.images, sizes.classes)
    return bench_training.measure_training(tree, sizes, method)


def sampler_section(plan: Plan, method: str) -> dict[str, Any]:
    sizes = bench_sampler.make_sizes(plan.quick, plan.classes, plan.shards)
    log(f"sampler: {sizes.images} images, cache emptied with {method}")
    tree = bench_data.image_tree(sizes.images, sizes.classes)
    return bench_sampler.measure_sampler(tree, sizes, method)


def machine() -> dict[str, Any]:
    return {
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average_at_start": os.getloadavg(),
        "date": time.strftime("%Y-%m-%d %H:%M"),
    }


def previous_results(plan: Plan, sections: list[str]) -> dict[str, Any] | None:
    """The last results of the same plan, when only some sections run: they keep the others."""
    path = results_path(plan.quick)
    if set(sections) == set(SECTIONS) or not path.exists():
        return None
    previous = json.loads(path.read_text())
    return previous if previous.get("plan") == json.loads(json.dumps(asdict(plan))) else None


def run(plan: Plan, sections: list[str], cold_method: str) -> dict[str, Any]:
    OUT.mkdir(parents=True, exist_ok=True)
    previous = previous_results(plan, sections)
    results: dict[str, Any] = previous or {"plan": asdict(plan), "machine": machine()}
    start = time.perf_counter()
    trees = prepare_data(plan) if set(sections) - OWN_DATA else {}
    if "convert" in sections:
        run_section("convert", results, convert_section, plan, trees)
    if "memory" in sections:
        run_section("memory", results, memory_section, plan, trees)
    merge_dir = None
    if "merge" in sections or "reader" in sections:
        run_section("merge", results, bench_merge.measure_merge, trees["large"], plan.shards, plan.merge_repeats)
        merge_dir = results["merge"].get("rundir")
    if "reader" in sections and merge_dir:
        lmdb_path = str(Path(merge_dir) / "results" / "train.lmdb")
        reader_args = (lmdb_path, trees["large"], plan.reader_reads, plan.reader_repeats, plan.cold_reads)
        run_section("reader", results, bench_reader.measure_reader, *reader_args)
    if "scale" in sections:
        run_section("scale", results, scale_section, plan, trees)
    if "archives" in sections:
        run_section("archives", results, archives_section, plan, trees)
    if "cold" in sections:
        run_section("cold", results, cold_section, plan, cold_method)
    if "training" in sections:
        run_section("training", results, training_section, plan, cold_method)
    if "sampler" in sections:
        run_section("sampler", results, sampler_section, plan, cold_method)
    if "front_door" in sections:
        sizes = [100, 600] if plan.quick else [300, 12_000]
        run_section("front_door", results, bench_front_door.measure, sizes, plan.convert_repeats, LITDATA_PYTHON)
    if "decode_size" in sections:
        run_section("decode_size", results, bench_decode_size.measure, plan.quick)
    seconds = time.perf_counter() - start
    if previous is None:
        results["total_seconds"] = seconds
        results["machine"]["load_average_at_end"] = os.getloadavg()
    else:  # the header keeps describing the full run, and says what was measured again, when
        rerun = sorted(set(sections) | ({"merge"} if "reader" in sections else set()))
        rerun_record = {"sections": rerun, "date": time.strftime("%Y-%m-%d %H:%M"), "seconds": seconds}
        results.setdefault("reruns", []).append(rerun_record)
    results_path(plan.quick).write_text(json.dumps(results, indent=1))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=None, help="2N, the larger dataset (default 20000; quick 400)")
    parser.add_argument("--quick", action="store_true", help="a few hundred images and fewer repeats")
    parser.add_argument("--sections", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="rewrite the report from the last results (with --quick: of the last quick run)",
    )
    parser.add_argument(
        "--cold-method",
        choices=bench_cold.METHODS,
        default=bench_cold.default_method(),
        help="how section 8 empties the page cache (default: drop_caches as root, else fadvise)",
    )
    args = parser.parse_args()
    quick = args.quick
    # some sections with no full run's results to join: a report of those alone
    partial = False
    if args.report_only:
        results = json.loads(results_path(quick).read_text())
    else:
        plan = make_plan(args.images or (400 if quick else 20000), quick)
        partial = set(args.sections) != set(SECTIONS) and previous_results(plan, args.sections) is None
        results = run(plan, args.sections, args.cold_method)
    # a quick try-out, or a partial run, must not overwrite the committed figures
    markdown, plot = (
        (OUT / "BENCHMARKS.quick.md", OUT / "benchmarks.quick.png")
        if quick
        else (OUT / "BENCHMARKS.partial.md", OUT / "benchmarks.partial.png")
        if partial
        else (REPO / "BENCHMARKS.md", REPO / "benchmarks" / "benchmarks.png")
    )
    if partial and not quick:
        log(f"no full results of these sizes in {results_path(quick)} to add to: BENCHMARKS.md is left as it is")
    report.write_report(results, markdown, plot)
    log(f"wrote {markdown} and {plot}")


if __name__ == "__main__":
    main()
