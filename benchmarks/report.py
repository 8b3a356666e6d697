"""BENCHMARKS.md and its plot, from the results run.py collected (benchmarks/out/results.json).

This module draws the tables and the plot and puts the document together: the opening, the targets,
the summary, each section's table and notes, how to reproduce. The words are templates under
benchmarks/templates/ (prose.py fills them in): document.md for the frame, cold.md for section 8,
which is one template with its tables. The targets and the summary come from interpretation.py,
the notes under the other sections' tables from notes.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt

from benchmarks import prose
from benchmarks.bench_decode_size import report_lines as decode_size_lines
from benchmarks.bench_front_door import front_door_section
from benchmarks.interpretation import (
    IMAGENET_IMAGES,
    R,
    cold_limit_target,
    cold_targets,
    fmt,
    imagenet_seconds,
    ratio,
    section,
    summary_lines,
    targets,
    times,
    training_targets,
    warm,
)
from benchmarks.notes import notes
from benchmarks.sampler_report import sampler_section

CONTENDER_NAMES = {
    "workflow": "workflow, `check: decode` (default)",
    "workflow_header": "workflow, `check: header`",
    "baseline": "article's method (baseline_article.py)",
}
MERGE_NAMES = {
    "merge": "merge rule's `merge()`",
    "plain_write": "plain sequential LMDB write",
    "cp": "`cp` + fsync",
}
READER_NAMES = {
    "lmdb_getitem_pil": "LMDBDataset `ds[i]`, PIL (default)",
    "lmdb_getitem_tensor": 'LMDBDataset `ds[i]`, `decode="tensor"`',
    "imagefolder_getitem": "torchvision ImageFolder `ds[i]`",
    "pure_decode_pil": "pure PIL decode + RGB of in-memory bytes",
    "pure_decode_tensor": "pure `decode_jpeg` of in-memory bytes",
    "lmdb_get_bytes": "LMDBDataset `get_bytes(i)`",
    "file_open_read": "file open + read",
    "dataloader_0_workers": "DataLoader, 0 workers (batch 32, CenterCrop(224) + PILToTensor)",
    "dataloader_2_workers": "DataLoader, 2 workers (same)",
    "cold_lmdb_get_bytes": "cold page cache: LMDBDataset `get_bytes(i)`",
    "cold_file_open_read": "cold page cache: file open + read",
}
COLD_NAMES = {
    "files": "files: `open` + `read`, one at a time",
    "get_bytes": '`LMDBDataset(decode="bytes").get_bytes(i)`, one at a time',
    "getitems": '`__getitems__`, batches of {batch}, `decode="bytes"`',
    "limit": "limit: the same batches hinted (`posix_fadvise(WILLNEED)`), then `os.pread` each",
    "txn_get": "reference: py-lmdb `txn.get`, `readahead=False` (the reader before issue 14)",
    "txn_get_readahead": "reference: py-lmdb `txn.get`, `readahead=True`",
    "loader_imagefolder": "torchvision ImageFolder",
    "loader_lmdb": "LMDBDataset",
}
#: Section 8's raw-read contenders, in table order (results from before issue 23 have no limit).
COLD_READS = ("files", "get_bytes", "getitems", "limit", "txn_get", "txn_get_readahead")
TRAINING_NAMES = {
    "imagefolder": "torchvision ImageFolder, the original files",
    "lmdb": "LMDBDataset, pass-through",
    "lmdb_short": "LMDBDataset, `short_side: 256`, quality 90",
    "lmdb_tensor": 'LMDBDataset, pass-through, `decode="tensor"`, transforms on tensors',
    "lmdb_glibc_malloc": "LMDBDataset, pass-through, glibc's malloc settings",
}
TRAINING_FILES = {"passthrough": "pass-through (`check: decode`)", "short_side": "`short_side: 256`, quality 90"}
TRAINING_COLD = {
    "limit": "limit: `posix_fadvise(WILLNEED)` on the batch, then `os.pread` each",
    "getitems": '`__getitems__`, `decode="bytes"`',
    "files": "files: `open` + `read`, one at a time",
}
ROUTE_NAMES = {
    "stream": "streaming (default: read in place)",
    "extract": "`extract: true` (workflow unpacks first)",
    "tar_then_convert": "`tar xf` by hand, then convert the trees",
}


def median_of(values: list[float]) -> float:
    """The median of ``values``."""
    values = sorted(values)
    middle = len(values) // 2
    return values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2


# --------------------------------------------------------------------------------------------------
# Tables.
# --------------------------------------------------------------------------------------------------


def convert_table(convert: R) -> list[str]:
    """Section 1: each contender's times and rates at N and 2N, and the decode limit."""
    c, limit = convert["contenders"], convert["limit"]
    base = c["baseline"]["marginal_img_s"]
    lines = [
        f"| contender | s at N = {convert['n_small']:,} | s at 2N = {convert['n_large']:,} | per run img/s | "
        "**marginal img/s** | vs baseline | vs limit | marginal img per CPU-s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for key, name in CONTENDER_NAMES.items():
        row = c[key]
        marginal = row["marginal_img_s"]
        lines.append(
            f"| {name} | {fmt(median_of(row['seconds_small']), 1)} | {fmt(median_of(row['seconds_large']), 1)} | "
            f"{fmt(row['per_run_img_s'])} | **{fmt(marginal)}** | "
            f"{times(ratio(marginal, base))} | {times(ratio(marginal, limit['img_s']))} | "
            f"{fmt(row['marginal_img_per_cpu_s'])} |"
        )
    lines += [
        f"| limit: {limit['cores']} cores x single-core PIL decode ({fmt(limit['single_core_img_s'])} img/s) | | | | "
        f"**{fmt(limit['img_s'])}** | {times(ratio(limit['img_s'], base))} | 1.00x | {fmt(limit['img_per_cpu_s'])} |",
        f"| (measured: {limit['cores']} processes decoding at once) | | | | {fmt(limit['parallel_img_s'])} | | "
        f"{times(ratio(limit['parallel_img_s'], limit['img_s']))} | |",
    ]
    return lines


def merge_table(merge: R) -> list[str]:
    """Section 2: the merge, a plain LMDB write and ``cp``, in MB/s."""
    mb_s, megabytes = merge["mb_s"], merge["bytes"] / 1e6
    lines = [
        f"{merge['records']:,} records, {megabytes:,.0f} MB; medians of {len(merge['seconds']['merge'])}, and the "
        "range of the repeats (the machine's disk is shared, so single writes vary a lot).",
        "",
        "| contender | MB/s | repeats, MB/s | vs plain write |",
        "| --- | ---: | ---: | ---: |",
    ]
    for key, name in MERGE_NAMES.items():
        if key in mb_s:
            runs = [megabytes / seconds for seconds in merge["seconds"][key]]
            spread = f"{fmt(min(runs))}-{fmt(max(runs))}"
            lines.append(f"| {name} | {fmt(mb_s[key])} | {spread} | {times(ratio(mb_s[key], mb_s['plain_write']))} |")
    return lines


def size_table(convert: R) -> list[str]:
    """Section 3: the bytes of the source tree and of each output."""
    source = convert["source_bytes_large"]
    lines = ["| | bytes | vs source |", "| --- | ---: | ---: |", f"| source tree (2N images) | {source:,} | 1.000x |"]
    for key in ("workflow", "baseline"):
        output = convert["contenders"][key]["output_bytes_large"]
        lines.append(f"| {CONTENDER_NAMES[key]} | {output:,} | {fmt(ratio(output, source), 3)}x |")
    return lines


def reader_table(reader: R) -> list[str]:
    """Section 4: random-index reads of each contender, in img/s."""
    lines = [
        f"{reader['reads']:,} random indices (cold: up to 1,000), medians.",
        "",
        "| random-index reads | img/s |",
        "| --- | ---: |",
    ]
    rows = {**reader["warm"], **{k: v for k, v in reader["cold"].items() if isinstance(v, dict)}}
    for key, name in READER_NAMES.items():
        if key in rows:
            lines.append(f"| {name} | {fmt(rows[key]['img_s'])} |")
    return lines


def memory_table(memory: R) -> list[str]:
    """Section 5: each rule's peak and own memory at N and 2N."""
    n_small, n_large = memory["n_small"], memory["n_large"]
    lines = [
        f"| rule | peak RSS at N = {n_small:,} (MB) | at 2N = {n_large:,} | own (anon) memory at N | at 2N | "
        "anon KB per extra image | Snakemake max_rss at N | at 2N |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for rule, row in sorted(memory["rules"].items()):
        lines.append(
            f"| {rule} | {fmt(row.get('vm_hwm_mb_small'))} | {fmt(row.get('vm_hwm_mb_large'))} | "
            f"{fmt(row.get('rss_anon_mb_small'))} | {fmt(row.get('rss_anon_mb_large'))} | "
            f"{fmt(row.get('anon_kb_per_image'), 2)} | {fmt(row.get('tsv_max_rss_mb_small'))} | "
            f"{fmt(row.get('tsv_max_rss_mb_large'))} |"
        )
    return lines


def scale_table(scale: R) -> list[str]:
    """Section 6: planning, listing and import times."""
    lines = ["| what | seconds |", "| --- | ---: |"]
    for shards, row in scale["dry_run"].items():
        lines.append(f"| `snakemake -n`, {int(shards):,} shards | {fmt(row['seconds'], 1)} |")
    for run in scale["listing"]["runs"]:
        lines.append(
            f"| count_check rule on {run['files']:,} files ({fmt(run['files_per_s'])} files/s, "
            f"peak USS {fmt(run['max_uss'])} MB) | {fmt(run['count_check_seconds'], 1)} |"
        )
    lines.append(f"| the same, whole snakemake call | {fmt(scale['listing']['wall_seconds'], 1)} |")
    for variant, label in (
        ("writer_scripts", "`import encode_shard, merge, write_meta`"),
        ("torch", "`import torch`"),
        ("dataset_class", "`from imagefolder_lmdb import LMDBDataset`"),
    ):
        row = scale["startup"].get(variant)
        if row is None:
            continue
        lines.append(
            f"| {label} in a new process ({fmt(row['cpu'], 2)} s CPU, peak RSS {fmt(row['max_rss_mb'])} MB, "
            f"torch imported: {'yes' if row['imports_torch'] else 'no'}) | {fmt(row['wall'], 2)} |"
        )
    return lines


def archive_table(archives: R) -> list[str]:
    """Section 7: each archive route's times, rates and projection to ImageNet."""
    images = archives["images"]
    stream_seconds = archives["routes"]["stream"]["seconds"]["large"]
    stream_imagenet = imagenet_seconds(archives, "stream")
    lines = [
        f"| route | s, {images['small']:,} images | s, {images['large']:,} images | of which unpacking | final sync | "
        f"marginal img/s | projected, ImageNet ({IMAGENET_IMAGES:,} images), h | streaming faster by: "
        f"end to end, {images['large']:,} | projected, ImageNet |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for key, name in ROUTE_NAMES.items():
        row = archives["routes"][key]
        unpack = row["untar_seconds"]["large"] or row["extract_rule_seconds"]["large"]
        projected = imagenet_seconds(archives, key)
        lines.append(
            f"| {name} | {fmt(row['seconds']['small'], 1)} | {fmt(row['seconds']['large'], 1)} | {fmt(unpack, 1)} | "
            f"{fmt(row.get('sync_seconds', {}).get('large'), 1)} | "
            f"{fmt(row['marginal_img_s'])} | {fmt(projected / 3600, 2)} | "
            f"{times(ratio(row['seconds']['large'], stream_seconds))} | {times(ratio(projected, stream_imagenet))} |"
        )
    return lines


def cold_rows(cold: R, keys: tuple[str, ...], unit: str, reference: str) -> list[str]:
    """A section 8 table: cold and warm rates of ``keys``, each against ``reference``."""
    lines = [
        f"| {'contender' if unit == 'reads/s' else 'DataLoader over'} | cold {unit} | cold, each repeat | "
        f"**cold vs {reference}** | warm {unit} | warm vs {reference} |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for key in keys:
        c, w = cold["cold"][key], cold["warm"][key]
        repeats = ", ".join(fmt(run) for run in c["runs"])
        name = COLD_NAMES[key].format(batch=cold["sizes"]["batch"])
        lines.append(
            f"| {name} | {fmt(c['img_s'])} | {repeats} | **{times(c['ratio'])}** | {fmt(w['img_s'])} | "
            f"{times(w['ratio'])} |"
        )
    return lines


def cold_section(cold: R) -> list[str]:
    """Section 8: templates/cold.md with this run's tables and figures."""
    sizes, cached = cold["sizes"], cold["still_cached_after_emptying"]
    target_rows = ["| target | measured | goal | |", "| --- | ---: | ---: | --- |"]
    target_rows += [t.row() for t in cold_targets(cold) + cold_limit_target(cold)]
    text = prose.fill(
        "cold",
        "section",
        keep_lines=True,
        images=f"{cold['images']:,}",
        image_kb=fmt(cold["image_bytes"] / cold["images"] / 1e3),
        lmdb_mb=fmt(cold["lmdb_bytes"] / 1e6),
        reads=f"{cold['reads']:,}",
        seed=cold["seed"],
        repeats=sizes["repeats"],
        method=prose.fill("cold", f"method_{cold['method']}"),
        cached_lmdb=f"{100 * cached['lmdb']:.1f} %",
        cached_files=f"{100 * cached['files']:.1f} %",
        reader=measured_reader(cold["reader"]),
        located=located_records(cold),
        reads_table="\n".join(cold_rows(cold, tuple(k for k in COLD_READS if k in cold["cold"]), "reads/s", "files")),
        loader_images=f"{sizes['loader_images']:,}",
        loader_batches=sizes["loader_images"] // sizes["loader_batch"],
        loader_batch=sizes["loader_batch"],
        workers=sizes["loader_workers"],
        loader_table="\n".join(cold_rows(cold, ("loader_imagefolder", "loader_lmdb"), "img/s", "ImageFolder")),
        targets_table="\n".join(target_rows),
    )
    return text.rstrip("\n").split("\n")


def measured_reader(reader: R) -> str:
    """Which reader section 8 measured: its package's tree (results from before the reader was a
    package: scripts/dataset.py's blob), HEAD, and whether it was committed."""
    state = prose.fill("cold", "modified" if reader["modified"] else "committed")
    if "reader_tree" in reader:
        return prose.fill("cold", "reader_package", tree=reader["reader_tree"], head=reader["head"], state=state)
    return prose.fill("cold", "reader", blob=reader["dataset_py_blob"], head=reader["head"], state=state)


def located_records(cold: R) -> str:
    """How many of section 8's records have a recorded file offset, or that the format has none."""
    located = cold["reader"].get("located_records")
    if located is None:
        return prose.fill("cold", "not_located")
    return prose.fill("cold", "located", located=f"{located:,}", images=f"{cold['images']:,}")


def training_psnr(training: R, key: str) -> str:
    """Section 9's PSNR cell of contender ``key``: median / worst, "identical", or empty."""
    pixels = training["pixels"].get(key)
    if pixels is None:
        return ""
    if math.isinf(pixels["worst_db"]):
        return prose.fill("training", "identical")
    return prose.fill("training", "psnr", median=fmt(pixels["median_db"], 1), worst=fmt(pixels["worst_db"], 1))


def training_table_rows(training: R, cell: Callable[[R], list[str]], last: Callable[[str], list[str]]) -> list[str]:
    """Rows of a section 9 table: each contender's ``cell(row)`` for each transform, warm then cold,
    then ``last(contender)``; contenders not measured are left out."""
    loaders, rows = training["loaders"], []
    for key, name in TRAINING_NAMES.items():
        cells = []
        for kind in ("train", "val"):
            for mode in ("warm", "cold"):
                row = loaders[kind][mode].get(key)
                cells += cell(row) if row else ["", ""]
        if any(cells):
            rows.append("| " + " | ".join([name, *cells, *last(key)]) + " |")
    return rows


def training_loader_rows(training: R) -> list[str]:
    """Section 9's DataLoader table rows: img/s and ratios to ImageFolder, and the val PSNR."""
    return training_table_rows(
        training,
        lambda row: [fmt(row["img_s"]), f"**{times(row['ratio'])}**"],
        lambda key: [training_psnr(training, key)],
    )


def training_cpu_rows(training: R) -> list[str]:
    """Section 9's worker-CPU table rows: ms per image and images per CPU-second vs ImageFolder."""
    return training_table_rows(
        training,
        lambda row: [fmt(row["cpu_ms"], 2), f"**{times(row['cpu_ratio'])}**"] if "cpu_ms" in row else ["", ""],
        lambda key: [],
    )


def training_file_rows(training: R) -> list[str]:
    """Section 9's file table rows: the source tree and each conversion."""
    images, source = training["images"], training["source_bytes"]
    rows = [f"| the original files (ImageFolder) | {fmt(source / 1e6)} | 1.00x | | | |"]
    for key, name in TRAINING_FILES.items():
        f = training["files"][key]
        if "bytes" not in f:
            continue
        per_image = f"{fmt(1e3 * f['seconds'] / images, 2)} ms"
        cpu = f"{fmt(1e3 * f['encode_cpu_seconds'] / images, 2)} ms"
        size = f"{fmt(f['bytes'] / 1e6)} | {times(f['bytes'] / source)}"
        rows.append(f"| {name} | {size} | {fmt(f['seconds'], 1)} s | {per_image} | {cpu} |")
    return rows


def training_cold_rows(training: R) -> list[str]:
    rows = []
    for key, name in TRAINING_COLD.items():
        row = training["cold_batches"]["rows"][key]
        repeats = ", ".join(fmt(run) for run in row["runs"])
        rows.append(f"| {name} | {fmt(row['reads_s'])} | {repeats} | **{times(row['ratio'])}** |")
    return rows


def training_photos(training: R) -> str:
    """Section 9's paragraph on the real photographs' PSNR, or why they were not measured."""
    photos = training.get("photo_pixels")
    if photos is None:
        return ""
    if "skipped" in photos:
        return prose.fill("training", "photos_skipped", why=photos["skipped"])
    each = ", ".join(f"{name} {fmt(db, 1)}" for name, db in zip(photos["photos"], photos["each_db"], strict=True))
    return prose.fill(
        "training",
        "photos",
        count=photos["images"],
        wheels=" and ".join(f"`{wheel}`" for wheel in photos["wheels"]),
        median=fmt(photos["median_db"], 1),
        worst=fmt(photos["worst_db"], 1),
        each=each,
        generated=fmt(training["pixels"].get("lmdb_short", {}).get("median_db", float("nan")), 1),
    )


def training_floor(training: R) -> str:
    """Section 9's sentence on the cheapest a resizing conversion can be: a full-size decode."""
    floor = training.get("decode_floor")
    if floor is None:
        return ""
    return prose.fill(
        "training",
        "floor",
        images=training["sizes"]["psnr_images"],
        check=fmt(floor["check_decode_ms"], 2),
        full=fmt(floor["full_decode_ms"], 2),
        times=times(floor["full_decode_ms"] / floor["check_decode_ms"]),
    )


def training_skipped(training: R) -> str:
    """The note on a conversion that could not run (the short_side one, before the workflow knows it)."""
    notes = [
        prose.fill("training", "skipped", what=TRAINING_FILES[key], why=f["skipped"])
        for key, f in training["files"].items()
        if "skipped" in f
    ]
    return "\n" + "\n".join(notes) + "\n" if notes else ""


def training_section(training: R) -> list[str]:
    """Section 9: templates/training.md with this run's tables and figures."""
    sizes = training["sizes"]
    target_rows = ["| target | measured | goal | |", "| --- | ---: | ---: | --- |"]
    target_rows += [t.row() for t in training_targets(training)]
    text = prose.fill(
        "training",
        "section",
        keep_lines=True,
        images=f"{training['images']:,}",
        source_mb=fmt(training["source_bytes"] / 1e6),
        classes=sizes["classes"],
        workers=sizes["workers"],
        batch=sizes["batch"],
        seed=training["seed"],
        loader_images=f"{sizes['loader_images']:,}",
        repeats=sizes["repeats"],
        method=prose.fill("training", f"method_{training['method']}"),
        reader=measured_reader(training["reader"]),
        skipped=training_skipped(training),
        loader_rows="\n".join(training_loader_rows(training)),
        cpu_rows="\n".join(training_cpu_rows(training)),
        psnr_images=f"{sizes['psnr_images']:,}",
        file_rows="\n".join(training_file_rows(training)),
        shards=sizes["shards"],
        cold_batches=training["cold_batches"]["batches_per_repeat"],
        cold_rows="\n".join(training_cold_rows(training)),
        photos=training_photos(training),
        floor=training_floor(training),
        targets_table="\n".join(target_rows),
    )
    return text.rstrip("\n").split("\n")


# --------------------------------------------------------------------------------------------------
# The document.
# --------------------------------------------------------------------------------------------------


def header(results: R, plot: str) -> list[str]:
    """The title, what was measured on what machine, the sections measured again, the plot."""
    plan, host = results["plan"], results["machine"]
    intro = prose.fill(
        "document",
        "intro",
        date=host["date"],
        cores=host["cores"],
        load_start=fmt(host["load_average_at_start"][0], 1),
        load_end=fmt(host.get("load_average_at_end", [math.nan])[0], 1),
        invocation=invocation(results),
        minutes=fmt(results.get("total_seconds", 0) / 60, 1),
        images=f"{plan['images']:,}",
        classes=plan["classes"],
        shards=plan["shards"],
    )
    return ["# Benchmarks", "", intro, "", *rerun_note(results), f"![benchmarks]({plot})", ""]


def rerun_note(results: R) -> list[str]:
    """Which sections were measured again after the full run, each with its latest measurement."""
    reruns = results.get("reruns", [])
    latest: dict[str, int] = {}
    for number, rerun in enumerate(reruns):
        latest.update(dict.fromkeys(rerun["sections"], number))
    if not latest:
        return []
    parts = []
    for number, rerun in enumerate(reruns):
        names = sorted(name for name, last in latest.items() if last == number)
        if names:
            minutes = fmt(rerun["seconds"] / 60, 1)
            parts.append(
                prose.fill("document", "rerun", sections=", ".join(names), date=rerun["date"], minutes=minutes)
            )
    return [prose.fill("document", "reruns", reruns="; ".join(parts)), ""]


def target_lines(results: R) -> list[str]:
    """The targets table."""
    lines = ["## Targets", "", "| target | measured | goal | |", "| --- | ---: | ---: | --- |"]
    lines += [t.row() for t in targets(results)]
    return [*lines, ""]


PARTS: list[tuple[str, str, str, Callable[[R], list[str]]]] = [
    ("convert", "convert", "## 1. Conversion speed", convert_table),
    ("merge", "merge", "## 2. Merge throughput", merge_table),
    ("size", "convert", "## 3. Output size", size_table),
    ("reader", "reader", "## 4. Reader", reader_table),
    ("memory", "memory", "## 5. Peak memory per rule", memory_table),
    ("scale", "scale", "## 6. Scale and fixed costs", scale_table),
    ("archives", "archives", "## 7. ILSVRC2012 archives: streaming vs extract-then-convert (issue 4)", archive_table),
    ("cold", "cold", "## 8. Cold reads: LMDB vs plain files, page cache emptied (issue 14)", cold_section),
    ("training", "training", "## 9. Training input (issue 23)", training_section),
    (
        "sampler",
        "sampler",
        "## 10. Sampler locality: block-window shuffle, cold batch reads (issue 32)",
        sampler_section,
    ),
    ("front_door", "front_door", "## 11. The front door against LitData's optimize() (issue 30)", front_door_section),
    (
        "decode_size",
        "decode_size",
        "## 14. Decoding at the size training needs; the CRC-32 check (issues 45, 41)",
        decode_size_lines,
    ),
]


def body(results: R) -> list[str]:
    """Every section: its title, then its table and notes, or why it was not measured."""
    lines: list[str] = []
    for part, name, title, table in PARTS:
        data = section(results, name)
        lines += [title, ""]
        if data is None:
            entry = results.get(name)
            error = entry.get("error", "not run") if isinstance(entry, dict) else "not run"
            lines += [prose.fill("document", "not_measured", error=error), ""]
            continue
        lines += [*table(data), "", *notes(part, results)]
    return lines


def invocation(results: R) -> str:
    """The arguments of run.py that made these results."""
    plan = results["plan"]
    return "--quick" if plan["quick"] else f"--images {plan['images']}"


def reproduce(results: R) -> list[str]:
    """How to run the benchmark, this run's invocation among the commands."""
    text = prose.fill("document", "reproduce", invocation=invocation(results))
    return ["## How to reproduce", "", *text.split("\n"), ""]


def write_report(results: R, markdown: Path, plot: Path) -> None:
    """Write the document to ``markdown`` and its plot to ``plot``."""
    link = plot.relative_to(markdown.parent).as_posix() if plot.is_relative_to(markdown.parent) else str(plot)
    lines = [
        *header(results, link),
        *target_lines(results),
        *summary_lines(results),
        *body(results),
        *reproduce(results),
    ]
    markdown.write_text("\n".join(lines).rstrip() + "\n")
    draw(results, plot)


# --------------------------------------------------------------------------------------------------
# The plot.
# --------------------------------------------------------------------------------------------------


def bars(axis: Any, title: str, unit: str, values: dict[str, float | None]) -> None:
    """One panel of the plot: a horizontal bar per measured value."""
    shown = {k: v for k, v in values.items() if v is not None and not math.isnan(v) and v > 0}
    axis.barh(list(shown), list(shown.values()), color="tab:blue")
    axis.invert_yaxis()
    axis.set_title(title, fontsize=10)
    axis.set_xlabel(unit)
    for y, value in enumerate(shown.values()):
        axis.text(value, y, f" {value:,.0f}", va="center", fontsize=8)
    axis.margins(x=0.25)


def draw(results: R, path: Path) -> None:
    """The plot: conversion, merge, reader and archive figures."""
    figure, axes = plt.subplots(2, 2, figsize=(14, 8))
    convert, merge, archives = section(results, "convert"), section(results, "merge"), section(results, "archives")
    if convert:
        c = convert["contenders"]
        values = {CONTENDER_NAMES[k].split(" (")[0]: c[k]["marginal_img_s"] for k in CONTENDER_NAMES}
        values["limit: 2 x single-core decode"] = convert["limit"]["img_s"]
        bars(axes[0][0], "1. Conversion, marginal (per image)", "img/s", values)
    if merge:
        bars(
            axes[0][1],
            "2. Merge vs plain LMDB write vs cp",
            "MB/s",
            {MERGE_NAMES[k]: v for k, v in merge["mb_s"].items()},
        )
    if section(results, "reader"):
        keys = ("lmdb_getitem_pil", "lmdb_getitem_tensor", "imagefolder_getitem", "pure_decode_pil")
        keys += ("dataloader_0_workers", "dataloader_2_workers")
        values = {READER_NAMES[k].split(" (")[0]: warm(results, k) for k in keys}
        bars(axes[1][0], "4. Reader, random index, warm cache", "img/s", values)
    if archives:
        routes = archives["routes"]
        values = {ROUTE_NAMES[k].split(" (")[0]: routes[k]["seconds"]["large"] for k in ROUTE_NAMES}
        bars(axes[1][1], f"7. ILSVRC archives, {archives['images']['large']:,} images, end to end", "seconds", values)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
