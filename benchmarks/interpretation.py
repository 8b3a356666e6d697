"""What the figures mean: formatting, the targets, the ImageNet projection, and the summary.

Every target is a ratio computed from the results of one run (Target, targets); the summary counts
the targets met and names the cause of each miss, found by profiling (py-spy, cProfile): the words
are blocks of benchmarks/templates/summary.md, picked here (MISS_CAUSES). The notes under each
section's table are notes.py's; tables and the document's assembly are report.py's; prose.py loads
and fills in the templates.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any

from benchmarks import prose

R = dict[str, Any]
IMAGENET_TRAIN = 1_281_167
IMAGENET_IMAGES = IMAGENET_TRAIN + 50_000  # train and val, as the archive routes convert both


def fmt(value: float | None, digits: int = 0) -> str:
    """A number with thousands separators and ``digits`` decimals, or ``n/a``."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:,.{digits}f}"


def times(value: float | None) -> str:
    """A ratio as ``1.23x``, or ``n/a``."""
    text = fmt(value, 2)
    return text if text == "n/a" else text + "x"


def ratio(a: float | None, b: float | None) -> float:
    """``a / b``, or NaN when either is missing or ``b`` is zero."""
    if a is None or b is None or b == 0 or (isinstance(b, float) and math.isnan(b)):
        return float("nan")
    return a / b


def section(results: R, name: str) -> R | None:
    """A section's results, or None when it was not run or failed."""
    value = results.get(name)
    return value if isinstance(value, dict) and "error" not in value else None


def warm(results: R, name: str) -> float | None:
    """A warm-cache reader contender's img/s (section 4), or None."""
    reader = section(results, "reader")
    entry = reader["warm"].get(name) if reader else None
    return entry["img_s"] if entry else None


# --------------------------------------------------------------------------------------------------
# Targets, all ratios from the same run.
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """A ratio measured in this run against its goal."""

    name: str
    ratio: float
    goal: float
    at_most: bool = False  # True: the ratio must not exceed the goal
    unit: str = "x"  # what the ratio and the goal are in: "x" (a ratio) or e.g. "dB"

    @property
    def passed(self) -> bool | None:
        """Whether the goal is met; None when the ratio could not be measured."""
        if math.isnan(self.ratio):
            return None
        return self.ratio <= self.goal if self.at_most else self.ratio >= self.goal

    def row(self) -> str:
        """The target's row in a targets table."""
        verdict = {True: "pass", False: "**MISS**", None: "n/a"}[self.passed]
        sign = "≤" if self.at_most else "≥"
        if self.unit == "x":
            return f"| {self.name} | {times(self.ratio)} | {sign} {self.goal}x | {verdict} |"
        return f"| {self.name} | {fmt(self.ratio, 1)} {self.unit} | {sign} {self.goal} {self.unit} | {verdict} |"


def conversion_targets(convert: R) -> list[Target]:
    """Section 1's targets, and section 3's (output size)."""
    c, limit = convert["contenders"], convert["limit"]
    base = c["baseline"]["marginal_img_s"]
    decode, header = c["workflow"]["marginal_img_s"], c["workflow_header"]["marginal_img_s"]
    output = ratio(c["workflow"]["output_bytes_large"], convert["source_bytes_large"])
    return [
        Target("1. conversion, `check: decode`, vs baseline (marginal)", ratio(decode, base), 1.6),
        Target("1. conversion, `check: header`, vs baseline (marginal)", ratio(header, base), 4),
        Target("1. conversion, `check: decode`, vs decode limit (marginal)", ratio(decode, limit["img_s"]), 0.7),
        Target("3. output bytes vs source bytes", output, 1.03, at_most=True),
    ]


def merge_target(merge: R) -> Target:
    """Section 2's target."""
    return Target("2. merge vs plain LMDB write", ratio(merge["mb_s"]["merge"], merge["mb_s"]["plain_write"]), 0.8)


def reader_targets(results: R) -> list[Target]:
    """Section 4's targets, warm cache."""
    pil, folder = warm(results, "lmdb_getitem_pil"), warm(results, "imagefolder_getitem")
    two, zero = warm(results, "dataloader_2_workers"), warm(results, "dataloader_0_workers")
    return [
        Target("4. `__getitem__` (PIL) vs pure PIL decode", ratio(pil, warm(results, "pure_decode_pil")), 0.95),
        Target("4. `__getitem__` (PIL) vs ImageFolder, warm cache", ratio(pil, folder), 1.0),
        Target("4. tensor path vs PIL path", ratio(warm(results, "lmdb_getitem_tensor"), pil), 1.1),
        Target("4. DataLoader 2 workers vs 0", ratio(two, zero), 1.7),
    ]


def archive_targets(archives: R) -> list[Target]:
    """Section 7's targets: streaming against both extract routes, measured and projected."""
    routes, images = archives["routes"], archives["images"]["large"]
    rows = []
    for route, label in (("extract", "`extract: true`"), ("tar_then_convert", "`tar xf` + convert")):
        measured = ratio(routes[route]["seconds"]["large"], routes["stream"]["seconds"]["large"])
        rows.append(Target(f"7. archives: streaming vs {label}, end to end, {images:,} images", measured, 2))
        projected = ratio(imagenet_seconds(archives, route), imagenet_seconds(archives, "stream"))
        rows.append(Target(f"7. archives: streaming vs {label}, end to end, projected to ImageNet", projected, 2))
    return rows


def cold_targets(cold: R) -> list[Target]:
    """Issue 14's targets for reads with the page cache emptied (section 8)."""
    c, w, batch = cold["cold"], cold["warm"], cold["sizes"]["batch"]
    return [
        Target("8. cold `get_bytes` vs files read one at a time", c["get_bytes"]["ratio"], 1.2),
        Target(f"8. cold `__getitems__` ({batch}) vs files read one at a time", c["getitems"]["ratio"], 3),
        Target("8. cold DataLoader over LMDBDataset vs over ImageFolder", c["loader_lmdb"]["ratio"], 1.0),
        Target("8. warm `get_bytes` vs files read one at a time", w["get_bytes"]["ratio"], 1.0),
    ]


def per_repeat_ratio(rows: R, key: str, reference: str) -> float:
    """The median over repeats of ``rows[key]``'s rate over ``rows[reference]``'s in the same repeat."""
    pairs = zip(rows[key]["runs"], rows[reference]["runs"], strict=True)
    return statistics.median(ratio(a, b) for a, b in pairs)


def cold_limit_target(cold: R) -> list[Target]:
    """Issue 23's target for section 8: cold batches against the hinted-pread limit of the same batches."""
    if "limit" not in cold["cold"]:
        return []
    measured = per_repeat_ratio(cold["cold"], "getitems", "limit")
    return [Target("8. cold `__getitems__` vs the hinted-pread limit", measured, 0.8)]


def psnr_target(training: R) -> Target:
    """The val-output PSNR target, on the real photographs where they were measured (generated
    images carry grain no JPEG keeps, see bench_training.measure_photo_pixels), else on the tree."""
    photos = training.get("photo_pixels", {})
    if "median_db" in photos:
        name, measured = "real photos", photos["median_db"]
    else:
        name, measured = "generated images", training["pixels"].get("lmdb_short", {}).get("median_db", float("nan"))
    return Target(f"9. `short_side: 256` val output vs originals', PSNR median, {name}", measured, 35, unit="dB")


def training_targets(training: R) -> list[Target]:
    """Issue 23's targets (section 9): DataLoader ratios to ImageFolder, size, pixels, conversion, cold batches."""
    loaders, rows = training["loaders"], []
    for kind in ("train", "val"):
        for mode in ("warm", "cold"):
            row = loaders[kind][mode]["lmdb"]
            rows.append(Target(f"9. pass-through vs ImageFolder, {kind} transform, {mode}", row["ratio"], 1.0))
    short, files = training["files"]["short_side"], training["files"]
    if "bytes" in short:
        for kind, goal in (("train", 1.6), ("val", 2.5)):
            measured = loaders[kind]["warm"].get("lmdb_short", {}).get("ratio", float("nan"))
            rows.append(Target(f"9. `short_side: 256` vs ImageFolder, {kind} transform, warm", measured, goal))
        size = ratio(short["bytes"], training["source_bytes"])
        rows.append(Target("9. `short_side: 256` file vs source bytes", size, 0.5, at_most=True))
        rows.append(psnr_target(training))
        speed = ratio(files["passthrough"]["seconds"], short["seconds"])
        rows.append(Target("9. conversion speed, `short_side: 256` vs pass-through `check: decode`", speed, 1.0))
    limit = training["cold_batches"]["rows"]["getitems"]["ratio"]
    rows.append(Target("9. cold `__getitems__` batches vs the hinted-pread limit", limit, 0.8))
    return rows


def targets(results: R) -> list[Target]:
    """Every target of the sections that ran, by name."""
    rows: list[Target] = []
    if convert := section(results, "convert"):
        rows += conversion_targets(convert)
    if merge := section(results, "merge"):
        rows.append(merge_target(merge))
    if section(results, "reader"):
        rows += reader_targets(results)
    if archives := section(results, "archives"):
        rows += archive_targets(archives)
    if cold := section(results, "cold"):
        rows += cold_targets(cold) + cold_limit_target(cold)
    if training := section(results, "training"):
        rows += training_targets(training)
    return sorted(rows, key=lambda t: t.name)


# --------------------------------------------------------------------------------------------------
# The projection to ImageNet (section 7's targets and table).
# --------------------------------------------------------------------------------------------------


def imagenet_seconds(archives: R, route: str) -> float:
    """A route's end-to-end time on ImageNet's train + val: its fixed cost plus every image at its
    marginal rate (both from the two measured sizes; page cache assumed, see the notes)."""
    row, small = archives["routes"][route], archives["images"]["small"]
    fixed = row["seconds"]["small"] - small / row["marginal_img_s"]
    return fixed + IMAGENET_IMAGES / row["marginal_img_s"]


# --------------------------------------------------------------------------------------------------
# The summary (templates/summary.md).
# --------------------------------------------------------------------------------------------------

#: Why a target can miss on this machine, by the start of its name: the block of summary.md that
#: names the cause found by profiling.
MISS_CAUSES = {
    "1. conversion, `check: header`": "cause_merge_serial",
    "1. conversion, `check: decode`, vs decode limit": "cause_shared_cores",
    "4. DataLoader": "cause_loader_cores",
    "7. archives": "cause_unpacking",
}


def miss_cause(name: str) -> str:
    """Why the target ``name`` can miss here, or where to read about it."""
    block = next((cause for start, cause in MISS_CAUSES.items() if name.startswith(start)), "cause_elsewhere")
    return prose.fill("summary", block)


def missed_items(names: list[str]) -> str:
    """One list item per cause, naming the missed targets it explains."""
    by_cause: dict[str, list[str]] = {}
    for name in names:
        by_cause.setdefault(miss_cause(name), []).append(name)
    items = (prose.fill("summary", "missed", targets="; ".join(n), cause=cause) for cause, n in by_cause.items())
    return "\n".join(items)


def verdict(rows: list[Target]) -> str:
    """How many targets were met, and why the others missed."""
    met, missed = sum(t.passed is True for t in rows), [t.name for t in rows if t.passed is False]
    if not missed:
        return prose.fill("summary", "verdict", met=met, total=len(rows))
    return prose.fill("summary", "verdict_missed", met=met, total=len(rows), missed=missed_items(missed))


def summary_lines(results: R) -> list[str]:
    """The summary: the targets met, the causes of the misses, what the benchmark changed."""
    text = prose.fill("summary", "summary", verdict=verdict(targets(results)))
    return ["## Summary", "", *text.split("\n"), ""]
