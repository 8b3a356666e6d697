"""The notes under each section's table in BENCHMARKS.md: the figures they state, and which blocks apply.

The words are templates, benchmarks/templates/<section>.md (convert, merge, size, reader, memory,
scale, archives), filled in by prose.py. This module computes every number a note states from the
results, so a rerun cannot leave stale prose, and picks the blocks that apply: the cold reads of
section 4 or the results' note on why they were skipped, memory that grows with the split or not,
the cores model of section 7 when the results have per-rule times. The fixes that profiling led to
are in the product; the figures measured before them are kept here (BEFORE) for comparison.
Section 8's text is one template with its tables (report.py); the targets and the summary are
interpretation.py's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from benchmarks import prose
from benchmarks.interpretation import (
    IMAGENET_IMAGES,
    IMAGENET_TRAIN,
    R,
    fmt,
    imagenet_seconds,
    ratio,
    section,
    times,
    warm,
)

#: Shards of the shipped ImageNet config, config/imagenet.yaml: train's and val's.
IMAGENET_SHARDS = 256 + 16


# --------------------------------------------------------------------------------------------------
# Derived figures.
# --------------------------------------------------------------------------------------------------


def fixed_seconds(convert: R, contender: str) -> float:
    """Seconds of a run that do not depend on its size: t(N) - N / marginal rate."""
    row = convert["contenders"][contender]
    small = sorted(row["seconds_small"])[len(row["seconds_small"]) // 2]
    return small - convert["n_small"] / row["marginal_img_s"]


def ms_per_image(img_s: float | None) -> float:
    """Milliseconds per image at ``img_s`` images a second, or NaN."""
    return 1000 / img_s if img_s else float("nan")


def merge_ms_per_image(results: R) -> float:
    """Wall milliseconds per image of the merge at section 2's rate, or NaN without section 2."""
    merge = section(results, "merge")
    if not merge:
        return float("nan")
    return 1000 * merge["bytes"] / merge["records"] / (merge["mb_s"]["merge"] * 1e6)


def grows(row: R) -> bool:
    """Own memory up by more than noise (2 MB) and by more than 0.2 KB per extra image."""
    small, large = row.get("rss_anon_mb_small"), row.get("rss_anon_mb_large")
    return small is not None and large is not None and large - small > 2 and row["anon_kb_per_image"] > 0.2


#: Rules whose jobs share the cores; every other rule runs one job per split, in a chain.
PARALLEL_RULES = frozenset({"encode_shard"})
#: What config/imagenet.yaml's shard counts are sized for.
MODEL_CORES = 16


@dataclass
class RouteCost:
    """A route's job seconds per extra image, from Snakemake's benchmark records at both sizes."""

    chained_ms: float  # one job per split (index or unpack, count_check, merge, meta, verify)
    shared_ms: float  # encode_shard jobs, spread over the cores

    def ms_per_image(self, cores: int) -> float:
        """Wall milliseconds per image on ``cores`` cores."""
        return self.chained_ms + self.shared_ms / cores


def route_cost(archives: R, route: str) -> RouteCost | None:
    """A route's cost per extra image, or None for results from before the rules were timed."""
    row = archives["routes"][route]
    if "rule_seconds" not in row:
        return None
    small, large = row["rule_seconds"]["small"], row["rule_seconds"]["large"]
    extra = archives["images"]["large"] - archives["images"]["small"]
    growth = {rule: 1000 * (large.get(rule, 0.0) - small.get(rule, 0.0)) / extra for rule in large}
    untar = 1000 * (row["untar_seconds"]["large"] - row["untar_seconds"]["small"]) / extra
    chained = untar + sum(ms for rule, ms in growth.items() if rule not in PARALLEL_RULES)
    return RouteCost(chained, sum(ms for rule, ms in growth.items() if rule in PARALLEL_RULES))


# --------------------------------------------------------------------------------------------------
# The notes under each section's table (templates/<section>.md).
# --------------------------------------------------------------------------------------------------


def notes(part: str, results: R) -> list[str]:
    """The lines of a section's notes, each block followed by a blank line."""
    writer: dict[str, Callable[[R], list[str]]] = {
        "convert": convert_notes,
        "merge": merge_notes,
        "size": size_notes,
        "reader": reader_notes,
        "memory": memory_notes,
        "scale": scale_notes,
        "archives": archive_notes,
        "cold": lambda results: [],  # section 8 is one template with its tables (report.py's cold_section)
        "training": lambda results: [],  # section 9 likewise (report.py's training_section)
        "sampler": lambda results: [],  # section 10 likewise (sampler_report.py)
        "front_door": lambda results: [],  # section 11 likewise (bench_front_door.py's front_door_section)
        "decode_size": lambda results: [],  # section 14: its tables (bench_decode_size.report_lines); notes by hand
    }
    return [line for text in writer[part](results) for line in (*text.split("\n"), "")]


#: The same benchmark before the changes in the summary (run of 2026-11-30 14:35, the same sizes and
#: machine): ratios from within that run, so they compare with this run's ratios.
BEFORE = {
    "date": "2026-11-30 14:35",
    "decode_vs_baseline": 1.35,
    "header_vs_baseline": 3.36,
    "decode_vs_limit": 0.49,
    "merge_vs_plain": 1.11,
    "decode_cpu_ms": 2.09,
    "header_cpu_ms": 0.58,
    "archive_marginal": {"extract": 1.74, "tar_then_convert": 2.05},
}


def convert_notes(results: R) -> list[str]:
    """Section 1: fixed costs, CPU and wall time per image, the merge's share, before and after."""
    return [prose.fill("convert", "notes", **conversion_costs(results), **conversion_before_after(results))]


def conversion_costs(results: R) -> dict[str, str]:
    """Section 1's fixed seconds, CPU milliseconds and wall milliseconds per image."""
    convert = results["convert"]
    c, limit = convert["contenders"], convert["limit"]
    cpu = {name: ms_per_image(row["marginal_img_per_cpu_s"]) for name, row in c.items()}
    decode_cpu = ms_per_image(limit["img_per_cpu_s"])
    return {
        "workflow_fixed_s": fmt(fixed_seconds(convert, "workflow"), 1),
        "baseline_fixed_s": fmt(fixed_seconds(convert, "baseline"), 1),
        "decode_cpu_ms": fmt(cpu["workflow"], 2),
        "header_cpu_ms": fmt(cpu["workflow_header"], 2),
        "baseline_cpu_ms": fmt(cpu["baseline"], 2),
        "pil_cpu_ms": fmt(decode_cpu, 2),
        "ceiling": times(ratio(cpu["baseline"], decode_cpu)),
        "extra_cpu_ms": fmt(cpu["workflow"] - decode_cpu, 2),
        "merge_ms": fmt(merge_ms_per_image(results), 2),
        "decode_wall_ms": fmt(ms_per_image(c["workflow"]["marginal_img_s"]), 2),
        "header_wall_ms": fmt(ms_per_image(c["workflow_header"]["marginal_img_s"]), 2),
        "parallel": times(ratio(limit["parallel_img_s"], limit["img_s"])),
    }


def conversion_before_after(results: R) -> dict[str, str]:
    """Section 1's target ratios before the changes in the summary (BEFORE) and in this run."""
    c, limit = results["convert"]["contenders"], results["convert"]["limit"]["img_s"]
    base = c["baseline"]["marginal_img_s"]
    decode, header = c["workflow"]["marginal_img_s"], c["workflow_header"]["marginal_img_s"]
    return {
        "before_date": BEFORE["date"],
        "before_decode_vs_baseline": times(BEFORE["decode_vs_baseline"]),
        "before_decode_vs_limit": times(BEFORE["decode_vs_limit"]),
        "before_decode_cpu_ms": fmt(BEFORE["decode_cpu_ms"], 2),
        "before_header_vs_baseline": times(BEFORE["header_vs_baseline"]),
        "before_header_cpu_ms": fmt(BEFORE["header_cpu_ms"], 2),
        "decode_vs_baseline": times(ratio(decode, base)),
        "decode_vs_limit": times(ratio(decode, limit)),
        "header_vs_baseline": times(ratio(header, base)),
    }


def merge_notes(results: R) -> list[str]:
    """Section 2: what the merge pays for, before and after, and why single writes vary."""
    mb_s = results["merge"]["mb_s"]
    return [
        prose.fill(
            "merge",
            "notes",
            before_merge_vs_plain=times(BEFORE["merge_vs_plain"]),
            before_date=BEFORE["date"],
            merge_vs_plain=times(ratio(mb_s["merge"], mb_s["plain_write"])),
        )
    ]


def size_notes(results: R) -> list[str]:
    """Section 3: where the bytes beyond the source's go."""
    convert = results["convert"]
    output = convert["contenders"]["workflow"]["output_bytes_large"]
    overhead = (output - convert["source_bytes_large"]) / convert["n_large"]
    return [prose.fill("size", "notes", overhead_bytes=fmt(overhead))]


def reader_notes(results: R) -> list[str]:
    """Section 4: warm reads against a bare decode and against files, then the cold reads."""
    return [prose.fill("reader", "warm", **warm_read_figures(results)), cold_read_note(results["reader"]["cold"])]


def warm_read_figures(results: R) -> dict[str, str]:
    """Section 4's warm-cache milliseconds, rates and ratios."""
    pil, pure = warm(results, "lmdb_getitem_pil"), warm(results, "pure_decode_pil")
    get, file_read = warm(results, "lmdb_get_bytes"), warm(results, "file_open_read")
    overhead_us = 1e6 * (1 / pil - 1 / pure) if pil and pure else None
    return {
        "pure_ms": fmt(ms_per_image(pure), 2),
        "pil_ms": fmt(ms_per_image(pil), 2),
        "folder_ms": fmt(ms_per_image(warm(results, "imagefolder_getitem")), 2),
        "overhead_us": fmt(overhead_us),
        "file_read_us": fmt(1e6 / file_read if file_read else None),
        "get_bytes": fmt(get),
        "file_read": fmt(file_read),
        "get_vs_file": times(ratio(get, file_read)),
        "tensor": fmt(warm(results, "lmdb_getitem_tensor")),
        "pure_tensor": fmt(warm(results, "pure_decode_tensor")),
        "workers_vs_main": times(ratio(warm(results, "dataloader_2_workers"), warm(results, "dataloader_0_workers"))),
    }


def cold_read_note(cold: R) -> str:
    """Section 4's cold reads, or the results' note on why they were skipped."""
    if "note" in cold:
        return cold["note"]
    lmdb, files = cold["cold_lmdb_get_bytes"]["img_s"], cold["cold_file_open_read"]["img_s"]
    return prose.fill("reader", "cold", lmdb=fmt(lmdb), files=fmt(files))


def memory_notes(results: R) -> list[str]:
    """Section 5: what the columns measure, and which rules' own memory grows with the split."""
    rules = results["memory"]["rules"]
    growing = {rule: row["anon_kb_per_image"] for rule, row in rules.items() if grows(row)}
    if not growing:
        return [prose.fill("memory", "measures"), prose.fill("memory", "flat")]
    return [prose.fill("memory", "measures"), prose.fill("memory", "growing", rules=growing_rules(growing))]


def growing_rules(growing: dict[str, float]) -> str:
    """Each growing rule with its KB per image and what that comes to for ImageNet train."""
    return ", ".join(
        prose.fill(
            "memory",
            "growing_rule",
            rule=rule,
            kb_per_image=fmt(kb, 2),
            imagenet_gb=fmt(kb * IMAGENET_TRAIN / 1e6, 1),
        )
        for rule, kb in sorted(growing.items())
    )


def scale_notes(results: R) -> list[str]:
    """Section 6: planning per shard, listing per file, a job's imports."""
    scale = results["scale"]
    dry, listing, startup = scale["dry_run"], scale["listing"], scale["startup"]
    counts = sorted(int(k) for k in dry)
    per_shard = ratio(dry[str(counts[-1])]["seconds"] - dry[str(counts[0])]["seconds"], counts[-1] - counts[0])
    writers, torch = startup["writer_scripts"], startup["torch"]
    figures = {
        "shard_ms": fmt(1000 * per_shard, 2),
        "imagenet_plan_s": fmt(dry[str(counts[0])]["seconds"] + IMAGENET_SHARDS * per_shard, 1),
        "files_per_s": fmt(listing["files_per_s"]),
        "files": f"{listing['files']:,}",
        "bytes_per_file": fmt(listing["uss_bytes_per_file"]),
        "writers_cpu_s": fmt(writers["cpu"], 2),
        "writers_mb": fmt(writers["max_rss_mb"]),
        "torch_cpu_s": fmt(torch["cpu"], 2),
        "torch_mb": fmt(torch["max_rss_mb"]),
    }
    return [prose.fill("scale", "notes", **figures)]


#: The routes of section 7 as the notes name them.
ROUTE_LABELS = {"stream": "streaming", "extract": "`extract: true`", "tar_then_convert": "`tar xf` + convert"}


def archive_notes(results: R) -> list[str]:
    """Section 7: unpacking against converting, syncs, fixed costs, ImageNet, and more cores."""
    archives = results["archives"]
    return [prose.fill("archives", "routes", **archive_figures(archives)), *cores_model_note(archives)]


def archive_figures(archives: R) -> dict[str, str]:
    """Section 7's milliseconds per image, ratios, syncs, fixed seconds and projected hours."""
    routes, large = archives["routes"], archives["images"]["large"]
    stream, extract, by_hand = routes["stream"], routes["extract"], routes["tar_then_convert"]
    fixed = {
        name: imagenet_seconds(archives, name) - IMAGENET_IMAGES / row["marginal_img_s"] for name, row in routes.items()
    }
    hours = {name: imagenet_seconds(archives, name) / 3600 for name in routes}
    return {
        "extract_ms": fmt(ratio(1000 * extract["extract_rule_seconds"]["large"], large), 2),
        "tar_ms": fmt(ratio(1000 * by_hand["untar_seconds"]["large"], large), 2),
        "stream_ms": fmt(ms_per_image(stream["marginal_img_s"]), 2),
        "vs_extract": times(ratio(stream["marginal_img_s"], extract["marginal_img_s"])),
        "vs_tar": times(ratio(stream["marginal_img_s"], by_hand["marginal_img_s"])),
        "before_vs_extract": times(BEFORE["archive_marginal"]["extract"]),
        "before_vs_tar": times(BEFORE["archive_marginal"]["tar_then_convert"]),
        "syncs": route_syncs(routes),
        "images": f"{large:,}",
        "stream_fixed_s": fmt(fixed["stream"], 1),
        "extract_fixed_s": fmt(fixed["extract"], 1),
        "imagenet_images": f"{IMAGENET_IMAGES:,}",
        "stream_h": fmt(hours["stream"], 2),
        "extract_h": fmt(hours["extract"], 2),
        "tar_h": fmt(hours["tar_then_convert"], 2),
    }


def route_syncs(routes: R) -> str:
    """Each route's final ``sync`` at the larger size."""
    return ", ".join(
        prose.fill(
            "archives", "sync", route=ROUTE_LABELS[name], seconds=fmt(row.get("sync_seconds", {}).get("large"), 1)
        )
        for name, row in routes.items()
    )


def cores_model_note(archives: R) -> list[str]:
    """Section 7's model of more cores, when every route has its per-rule times."""
    costs = {route: route_cost(archives, route) for route in archives["routes"]}
    if any(cost is None for cost in costs.values()):
        return []
    known = {route: cost for route, cost in costs.items() if cost is not None}
    others = [route for route in known if route != "stream"]
    routes = archives["routes"]
    measured = (times(ratio(routes["stream"]["marginal_img_s"], routes[r]["marginal_img_s"])) for r in others)
    cost_parts = (
        prose.fill(
            "archives",
            "cores_cost",
            route=ROUTE_LABELS[r],
            chained_ms=fmt(c.chained_ms, 2),
            shared_ms=fmt(c.shared_ms, 2),
        )
        for r, c in known.items()
    )
    return [
        prose.fill(
            "archives",
            "cores",
            costs="; ".join(cost_parts),
            modelled_2=modelled_speedups(known, 2),
            measured=" and ".join(measured),
            model_cores=MODEL_CORES,
            modelled_many=modelled_speedups(known, MODEL_CORES),
        )
    ]


def modelled_speedups(costs: dict[str, RouteCost], cores: int) -> str:
    """How much faster streaming is than each other route on ``cores`` cores, by the model."""
    stream = costs["stream"].ms_per_image(cores)
    return " and ".join(
        prose.fill(
            "archives", "cores_ratio", ratio=times(ratio(cost.ms_per_image(cores), stream)), route=ROUTE_LABELS[r]
        )
        for r, cost in costs.items()
        if r != "stream"
    )
