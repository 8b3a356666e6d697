"""The end-of-run summary: per split, what was stored, how fast, and where the outputs are.

Printed by the Snakefile's ``onsuccess`` handler from the verify reports and the per-job
Snakemake benchmark records; it reads files only, so it costs nothing at ImageNet scale.
"""

import csv
import glob
import json
import os
from typing import Any

from imagefolder_lmdb.board.rule_table import TIMED_RULES, WorkflowRule
from imagefolder_lmdb.printable import printable
from imagefolder_lmdb.work.paths import RunPaths


def counted(number: int, noun: str) -> str:
    """``1 class``, ``2 classes``."""
    plural = noun + ("es" if noun.endswith("s") else "s")
    return f"{number:,} {noun if number == 1 else plural}"


def job_seconds(paths: RunPaths, rule: WorkflowRule, split: str) -> float:
    """Wall-clock seconds the jobs of ``rule`` took for ``split`` (from Snakemake's benchmark files)."""
    pattern = paths.benchmark(rule.name, split, shard="*" if rule.per_shard else None)
    total = 0.0
    for path in glob.glob(pattern):
        with open(path, newline="", encoding="utf-8") as stream:
            total += sum(float(row["s"]) for row in csv.DictReader(stream, delimiter="\t"))
    return total


def ignored_line(report: dict[str, Any], paths: RunPaths, split: str) -> list[str]:
    """Files of the source that are no image ImageFolder takes, or not part of the tree (a
    ``.DS_Store``, ``__MACOSX/``): left out by design, and still never silently."""
    ignored = report["source"].get("ignored_files", 0)
    if not ignored:
        return []
    return [f"  not images: {counted(ignored, 'file')} left out, listed in {paths.counts(split)}"]


def class_list_line(report: dict[str, Any], paths: RunPaths, split: str) -> list[str]:
    """Where the split's class list came from, and the images set aside for lying outside it."""
    class_list = report.get("class_list")
    if not class_list:
        return []
    line = f"  classes: {class_list['origin']}"
    images, unread = class_list.get("images_outside", 0), class_list.get("classes_unread", 0)
    if images:
        line += f"; {counted(images, 'image')} of {counted(class_list['classes_outside'], 'other class')} set aside"
    if unread:
        line += f"; {counted(unread, 'other class')} not read"
    if images or unread:
        line += f" (listed in {paths.counts(split)})"
    return [line]


def labels_lines(dataset: str) -> list[str]:
    """Where the split's labels came from (a label file and its columns: board/label_origin.py), and
    that a split without labels has none; nothing for class folders."""
    from imagefolder_lmdb.board.label_origin import origin_lines
    from imagefolder_lmdb.reader.document import read_document

    document = read_document(dataset) or {}
    if document.get("label_kind") == "none":
        return ["  labels: none (a split without labels: each target -1; the classes are the other splits')"]
    return origin_lines(document)


def resized_line(report: dict[str, Any]) -> list[str]:
    """A copy prepared at a smaller size (encode.short_side, encode.max_side): how many images
    were shrunk, to what; nothing for a split that keeps the source's sizes."""
    encode = report.get("settings", {}).get("encode", {})
    sides = (("short_side", "shorter side"), ("max_side", "longer side"))
    bounds = [f"{words} at most {encode[key]}" for key, words in sides if encode.get(key) is not None]
    if not bounds:
        return []
    shrunk = reencoded_for(report["storage"], ("resized",))
    return [f"  resized: {counted(shrunk, 'image')} shrunk to a {' and a '.join(bounds)}, the others as they were"]


def ratio_words(report: dict[str, Any]) -> str:
    """`` (0.98x)``: stored bytes to source bytes, nothing where the source's size is unknown (0 bytes)."""
    ratio = report.get("stored_to_source_ratio")
    return "" if ratio is None else f" ({ratio:.2f}x)"


def speed_line(report: dict[str, Any], paths: RunPaths, split: str, shards: int | None = None) -> str:
    """Seconds of jobs, and the rate per job slot from the time spent encoding (the encode jobs'
    progress files: neither a job's start-up nor a wait counts), else from the encode jobs' whole time."""
    # the encode jobs' (rules run per shard whatever the merge)
    encode = sum(job_seconds(paths, rule, split) for rule in TIMED_RULES if rule.per_shard and rule.merging is None)
    total = sum(job_seconds(paths, rule, split) for rule in TIMED_RULES)
    if encode <= 0:
        return "  time: no job records"
    encoding = encoding_time(paths, split) or encode
    jobs = "" if shards is None else f" in {counted(shards, 'shard')}"
    return (
        f"  time: {total:.1f} s of jobs, of which encoding {encode:.1f} s{jobs} "
        f"({report['images'] / encoding:,.0f} img/s per job slot)"
    )


def data_files_words(report: dict[str, Any]) -> str:
    """`` (a pointer over 16 data files in train.lmdb.d/)`` for a split of data files (merge: false), else nothing."""
    files = report.get("data_files")
    if not files:
        return ""
    return f" (a pointer over {counted(len(files), 'data file')} in {os.path.basename(os.path.dirname(files[0]))}/)"


def encoding_time(paths: RunPaths, split: str) -> float:
    """Seconds the split's encode jobs spent encoding, summed over the jobs (0.0 without their files)."""
    from imagefolder_lmdb.board.progress import PROGRESS_SUFFIX, read_progress

    folder = os.path.dirname(paths.part_report(split, "x"))
    states = [read_progress(path) for path in glob.glob(os.path.join(glob.escape(folder), f"*{PROGRESS_SUFFIX}"))]
    return sum(state.updated - state.started for state in states if state.updated)


def unverified_summary(name: str, paths: RunPaths) -> list[str]:
    """A split without its verify report: built but not verified (a host workflow that asks only
    for the .lmdb files), or not built at all."""
    dataset = paths.dataset(name)
    if not os.path.exists(dataset):
        return [f"{name}: not built"]
    from imagefolder_lmdb.work.split_document import split_document

    document = split_document(dataset) or {}
    counts = f"{counted(document.get('length', 0), 'image')}, {counted(len(document.get('classes', [])), 'class')}, "
    return [
        f"{name}: {counts}built, not verified (imagefolder-lmdb verify {dataset} checks it)",
        f"  outputs: {dataset}",
    ]


#: Why an image was re-encoded because the source's file was no RGB JPEG (another format, CMYK,
#: grayscale, ...): not by a setting (resized, always).
FROM_ANOTHER_FORMAT: tuple[str, ...] = ("not-jpeg", "cmyk", "grayscale", "mpo", "other-mode")


def reencoded_for(storage: dict[str, int], whys: tuple[str, ...]) -> int:
    """How many images of ``storage`` (meta/json's counts by name) were re-encoded for one of ``whys``,
    into any codec: the names are ``reencoded[-<codec>]:<why>`` (reader/codec.py, STORAGE)."""
    return sum(n for name, n in storage.items() if name.startswith("reencoded") and name.split(":")[-1] in whys)


def kept_bytes_line(report: dict[str, Any]) -> list[str]:
    """Images re-encoded because their file was no RGB JPEG (a PNG source, say): how many, and the
    setting that keeps every file's bytes as they are (``encode.reencode: never``)."""
    storage, images = report["storage"], report["images"]
    encode = report.get("settings", {}).get("encode", {})
    reencoded = reencoded_for(storage, FROM_ANOTHER_FORMAT)
    if encode.get("reencode") != "auto" or not reencoded:
        return []
    ratio = report.get("stored_to_source_ratio") or 0
    grown = f", the file {ratio:.2f}x its source" if ratio > 1.5 else ""
    quality = f" q{encode['quality']}" if encode.get("quality") else ""
    name = encode.get("codec", "jpeg")  # meta/json records the codec only where it is not JPEG
    codec = "WebP" if name == "webp" else name.upper()
    return [
        f"  re-encoded: {reencoded:,} of {images:,} images were no RGB JPEG, stored as {codec}{quality}{grown} "
        "(--set encode.reencode=never keeps every file as it is)"
    ]


#: skipped images named in the summary; the rest are in the verify report
SKIPPED_SHOWN = 3


def skipped_words(skipped: list[dict[str, Any]], report_path: str) -> str:
    """The skipped images by name (``--on-error skip``): a few, then how many more the report lists."""
    if not skipped:
        return ""
    names = ", ".join(printable(str(entry.get("path"))) for entry in skipped[:SKIPPED_SHOWN])
    more = len(skipped) - SKIPPED_SHOWN
    return f" ({names}{f' and {more} more, listed in {report_path}' if more > 0 else ''})"


def folder_bytes(folder: str) -> int:
    """The disk a folder's files take (0 for none)."""
    return sum(
        os.lstat(os.path.join(where, name)).st_blocks * 512 for where, _, names in os.walk(folder) for name in names
    )


def work_line(paths: RunPaths, name: str) -> list[str]:
    """What the split's work folder keeps, and its size: the part LMDBs (keep_parts) said apart,
    since they are what a later change saves encoding for."""
    folder = os.path.dirname(os.path.dirname(paths.part(name)))
    if not os.path.isdir(folder):
        return []
    parts = sum(
        os.stat(path).st_blocks * 512 for path in glob.glob(os.path.join(glob.escape(folder), "parts", "*.lmdb"))
    )
    total = folder_bytes(folder)
    # parts outlive a run only with keep_parts, or as an earlier version's leftovers: say which needs them
    kept = (
        f", of which {parts / 1e6:.1f} MB of parts, needed only with keep_parts (a change re-encodes its shards alone)"
    )
    return [
        f"  work: {total / 1e6:.1f} MB in {folder} (manifest, stamps, reports{kept if parts else ''}); "
        "safe to delete, a later run still sees what changed"
    ]


def split_summary(name: str, paths: RunPaths, shards: int | None = None) -> list[str]:
    report_path = paths.verify_report(name)
    if not os.path.exists(report_path):
        return unverified_summary(name, paths)
    with open(report_path, encoding="utf-8") as stream:
        report = json.load(stream)
    storage = ", ".join(f"{reason} {count}" for reason, count in report["storage"].items())
    status = "verified" if report["ok"] else "VERIFY FAILED"
    return [
        f"{name}: {counted(report['images'], 'image')}, {counted(report['classes'], 'class')}, {status} "
        f"({report['checked']['records']} records checked)",
        f"  bytes: {report['stored_bytes'] / 1e6:.1f} MB stored from {report['source_bytes'] / 1e6:.1f} MB source"
        + ratio_words(report),
        f"  stored: {storage}; skipped: {len(report['skipped'])}" + skipped_words(report["skipped"], report_path),
        *kept_bytes_line(report),
        *work_line(paths, name),
        *resized_line(report),
        *class_list_line(report, paths, name),
        *labels_lines(paths.dataset(name)),
        *ignored_line(report, paths, name),
        *(f"  warning: {warning}" for warning in report.get("warnings", [])),
        speed_line(report, paths, name, shards),
        f"  outputs: {paths.dataset(name)}{data_files_words(report)}, {report_path}, {paths.contact_sheet(name)}",
    ]


def summary_lines(config: dict[str, Any], elapsed_seconds: float | None = None) -> list[str]:
    lines = ["", "Summary" + (f" (this run: {elapsed_seconds:.0f} s)" if elapsed_seconds is not None else "")]
    paths = RunPaths(config["results"], config["work"])
    for name, split in config["splits"].items():
        lines.extend(split_summary(name, paths, split.get("shards")))
    return lines


def up_to_date_lines() -> list[str]:
    """A run that found nothing to do (Snakemake then skips the workflow's onsuccess, which prints
    the summary): the summary of every registered split's outputs, as they are."""
    from imagefolder_lmdb.board.progress import REGISTERED

    lines = ["Nothing to be done: every output is up to date.", ""]
    for paths, names in REGISTERED:
        for name in names:
            lines.extend(split_summary(name, paths))
    return lines
