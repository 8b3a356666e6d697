"""What the figures mean: the targets and the prose of BENCHMARKS.md, with this run's numbers.

Every sentence with a number computes it from the results, so a rerun cannot leave stale prose.
The causes named for missed targets were found by profiling (py-spy, cProfile) and are checked
in the run itself where a fix can be measured without changing the product (the ``fix_*`` and
``merge_mallopt`` contenders).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

R = dict[str, Any]
IMAGENET_TRAIN = 1_281_167


def fmt(value: float | None, digits: int = 0) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:,.{digits}f}"


def times(value: float | None) -> str:
    """A ratio as ``1.23x``, or ``n/a``."""
    text = fmt(value, 2)
    return text if text == "n/a" else text + "x"


def ratio(a: float | None, b: float | None) -> float:
    if a is None or b is None or b == 0 or (isinstance(b, float) and math.isnan(b)):
        return float("nan")
    return a / b


def section(results: R, name: str) -> R | None:
    """A section's results, or None when it was not run or failed."""
    value = results.get(name)
    return value if isinstance(value, dict) and "error" not in value else None


def warm(results: R, name: str) -> float | None:
    reader = section(results, "reader")
    entry = reader["warm"].get(name) if reader else None
    return entry["img_s"] if entry else None


# --------------------------------------------------------------------------------------------------
# Targets, all ratios from the same run.
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    name: str
    ratio: float
    goal: float
    at_most: bool = False  # True: the ratio must not exceed the goal

    @property
    def passed(self) -> bool | None:
        if math.isnan(self.ratio):
            return None
        return self.ratio <= self.goal if self.at_most else self.ratio >= self.goal

    def row(self) -> str:
        verdict = {True: "pass", False: "**MISS**", None: "n/a"}[self.passed]
        sign = "≤" if self.at_most else "≥"
        return f"| {self.name} | {times(self.ratio)} | {sign} {self.goal}x | {verdict} |"


def conversion_targets(convert: R) -> list[Target]:
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


def reader_targets(results: R) -> list[Target]:
    pil, folder = warm(results, "lmdb_getitem_pil"), warm(results, "imagefolder_getitem")
    two, zero = warm(results, "dataloader_2_workers"), warm(results, "dataloader_0_workers")
    return [
        Target("4. `__getitem__` (PIL) vs pure PIL decode", ratio(pil, warm(results, "pure_decode_pil")), 0.95),
        Target("4. `__getitem__` (PIL) vs ImageFolder, warm cache", ratio(pil, folder), 1.0),
        Target("4. tensor path vs PIL path", ratio(warm(results, "lmdb_getitem_tensor"), pil), 1.1),
        Target("4. DataLoader 2 workers vs 0", ratio(two, zero), 1.7),
    ]


def targets(results: R) -> list[Target]:
    rows: list[Target] = []
    if convert := section(results, "convert"):
        rows += conversion_targets(convert)
    if merge := section(results, "merge"):
        rows.append(
            Target("2. merge vs plain LMDB write", ratio(merge["mb_s"]["merge"], merge["mb_s"]["plain_write"]), 0.8)
        )
    if section(results, "reader"):
        rows += reader_targets(results)
    if archives := section(results, "archives"):
        routes = archives["routes"]
        stream = routes["stream"]
        for route, label in (("extract", "`extract: true`"), ("tar_then_convert", "`tar xf` + convert")):
            end_to_end = ratio(routes[route]["seconds"]["large"], stream["seconds"]["large"])
            rows.append(Target(f"7. archives: streaming vs {label}, end to end", end_to_end, 2))
            per_image = ratio(stream["marginal_img_s"], routes[route]["marginal_img_s"])
            rows.append(Target(f"7. archives: streaming vs {label}, marginal (ImageNet scale)", per_image, 2))
    return sorted(rows, key=lambda t: t.name)


# --------------------------------------------------------------------------------------------------
# Derived figures.
# --------------------------------------------------------------------------------------------------


def fixed_seconds(convert: R, contender: str) -> float:
    """Seconds of a run that do not depend on its size: t(N) - N / marginal rate."""
    row = convert["contenders"][contender]
    small = sorted(row["seconds_small"])[len(row["seconds_small"]) // 2]
    return small - convert["n_small"] / row["marginal_img_s"]


def ms_per_image(img_s: float | None) -> float:
    return 1000 / img_s if img_s else float("nan")


def merge_ms_per_image(results: R) -> float:
    merge = section(results, "merge")
    if not merge:
        return float("nan")
    return 1000 * merge["bytes"] / merge["records"] / (merge["mb_s"]["merge"] * 1e6)


# --------------------------------------------------------------------------------------------------
# Prose.
# --------------------------------------------------------------------------------------------------


def summary_lines(results: R) -> list[str]:
    rows = targets(results)
    missed = [t.name for t in rows if t.passed is False]
    passed = sum(t.passed is True for t in rows)
    lines = ["## Summary", "", f"{passed} of {len(rows)} targets met in this run."]
    if missed:
        lines[-1] += " Missed: " + "; ".join(missed) + "."
    lines += [
        "",
        "Causes found by profiling, and the product changes that address them (each measured; details in the "
        "sections):",
        "",
        "- the merge, the serial part of every conversion, spends its time in the kernel re-faulting heap pages "
        "that glibc gave back: keep freed memory (`mallopt` in `LMDBWriter.__init__`, section 2);",
        "- the full decode check can run at DCT scale 1/8: the whole entropy-coded stream is still decoded "
        "(section 1);",
        "- the reader resolved `os.path.realpath` on every read: now once per path (section 4);",
        "- streaming beats extraction by the unpacking cost per image, which is about one conversion's cost with the "
        "default check on two cores: below 2x here, above it with a cheaper conversion or a tree that does not fit "
        "the page cache (section 7).",
    ]
    return [*lines, ""]


def notes(part: str, results: R) -> list[str]:
    writer = {
        "convert": convert_notes,
        "merge": merge_notes,
        "size": size_notes,
        "reader": reader_notes,
        "memory": memory_notes,
        "scale": scale_notes,
        "archives": archive_notes,
    }[part]
    return [paragraph for text in writer(results) for paragraph in (text, "")]


#: Fixes tried on a patched copy of the repository (outside it), the same machine and data, side by
#: side with the product as it is: conversion at N = 10,000 and 2N = 20,000, 4 shards, --cores 2,
#: 3 alternating repeats, medians. Not rerun by run.py (it measures the product as it is).
FIX_EXPERIMENT = {
    "date": "2026-11-30",
    "marginal_img_s": {
        "orig-header": 1205,
        "mallopt-header": 1831,
        "orig-decode": 664,
        "mallopt-decode": 831,
        "mallopt+draft-decode": 1048,
    },
}


def convert_notes(results: R) -> list[str]:
    convert = results["convert"]
    c, limit = convert["contenders"], convert["limit"]
    wf, header = c["workflow"], c["workflow_header"]
    cpu = {name: ms_per_image(row["marginal_img_per_cpu_s"]) for name, row in c.items()}
    decode_cpu = ms_per_image(limit["img_per_cpu_s"])
    merge_ms = merge_ms_per_image(results)
    texts = [
        f"*Per run* divides 2N by the whole wall time, start-up included; *marginal* is N / (t(2N) - t(N)), which "
        f"cancels what does not grow with the data: here about {fmt(fixed_seconds(convert, 'workflow'), 1)} s per "
        "workflow run (snakemake start and DAG, a Python process per job, count_check importing torchvision, "
        f"verify, Snakemake's ~1.25 s wait at exit) and {fmt(fixed_seconds(convert, 'baseline'), 1)} s for the "
        "baseline. At ImageNet scale only the marginal rate matters, so the targets are judged on it.",
        f"CPU per extra image, all processes together (the figure the machine's other load disturbs least): "
        f"workflow {fmt(cpu['workflow'], 2)} ms with `check: decode`, {fmt(cpu['workflow_header'], 2)} ms with "
        f"`check: header`; baseline {fmt(cpu['baseline'], 2)} ms (decode + q95 encode); a bare PIL decode "
        f"{fmt(decode_cpu, 2)} ms. The ceiling for the decode-check ratio is thus baseline / decode = "
        f"{times(ratio(cpu['baseline'], decode_cpu))}, reached only if the workflow did nothing but decode; it "
        f"spends {fmt(cpu['workflow'] - decode_cpu, 2)} ms per image on top (about "
        f"{fmt(cpu['workflow_header'], 2)} ms of it is what `check: header` costs in all: reading, header parsing, "
        "CRC-32, the merge's re-read, CRC check and LMDB write).",
        f"The merge runs alone after the shards, on one core: at the merge rate of section 2 it takes "
        f"{fmt(merge_ms, 2)} ms per image of wall time, against {fmt(ms_per_image(wf['marginal_img_s']), 2)} ms "
        f"marginal wall time per image with `check: decode` and {fmt(ms_per_image(header['marginal_img_s']), 2)} ms "
        "with `check: header`: the largest single cost of the header-only conversion, and a serial one that "
        "two cores cannot share. The limit, 2 x a single-core decode, also assumes two idle cores; two "
        f"processes decoding at once reached {times(ratio(limit['parallel_img_s'], limit['img_s']))} of it here.",
        *fix_experiment_notes(results),
    ]
    return texts


def fix_experiment_notes(results: R) -> list[str]:
    rates = FIX_EXPERIMENT["marginal_img_s"]
    c = results["convert"]["contenders"]
    base, limit = c["baseline"]["marginal_img_s"], results["convert"]["limit"]["img_s"]
    gain = {name: rates[name] / rates[f"orig-{name.rsplit('-', 1)[1]}"] for name in rates if "orig" not in name}
    header = c["workflow_header"]["marginal_img_s"] * gain["mallopt-header"]
    decode = c["workflow"]["marginal_img_s"] * gain["mallopt-decode"]
    draft = c["workflow"]["marginal_img_s"] * gain["mallopt+draft-decode"]
    return [
        f"**Fixes, measured on a patched copy** ({FIX_EXPERIMENT['date']}, outside the repository, same data and "
        "sizes, alternating with the unpatched workflow, 3 repeats; not part of run.py, and noisier than the "
        "table above because that hour's load was higher): (a) the allocator setting of section 2 in "
        f"`LMDBWriter.__init__` (scripts/workflow_io.py): `check: header` {fmt(rates['orig-header'])} -> "
        f"{fmt(rates['mallopt-header'])} img/s marginal ({times(gain['mallopt-header'])}), `check: decode` "
        f"{fmt(rates['orig-decode'])} -> {fmt(rates['mallopt-decode'])} ({times(gain['mallopt-decode'])}); (b) on "
        "top, the decode check at DCT scale 1/8 (scripts/encode_shard.py, `open_checked`: for a JPEG, "
        "`probe = Image.open(io.BytesIO(data)); probe.draft(probe.mode, (w // 8, h // 8)); probe.load()`, the "
        "full-size image kept for everything else): libjpeg still entropy-decodes every coefficient of the "
        "whole stream and skips most of the inverse DCT and colour work (1.42x fewer CPU seconds per image than "
        f"a full decode); `check: decode` {fmt(rates['orig-decode'])} -> {fmt(rates['mallopt+draft-decode'])} "
        f"({times(gain['mallopt+draft-decode'])}), with byte-identical records and meta on the test tree.",
        f"Applied to this run's figures, those gains would give `check: header` {fmt(header)} img/s "
        f"({times(ratio(header, base))} the baseline), `check: decode` {fmt(decode)} ({times(ratio(decode, base))}; "
        f"{times(ratio(decode, limit))} the limit) with (a), and {fmt(draft)} ({times(ratio(draft, base))}; "
        f"{times(ratio(draft, limit))} the limit) with (a) + (b): a projection, not a measurement of one run.",
        "On damaged files the full and the 1/8 decode behaved alike: both refused a truncated JPEG, and both "
        "accepted one with 3,000 random bytes written over its entropy-coded data (libjpeg only warns about "
        "corrupt data and Pillow ignores the warning). So `check: decode` does not catch corrupt pixel data "
        'either, which README\'s description of `check: header` ("misses corrupt pixel data") suggests it '
        "does; catching it needs libjpeg's warnings turned into errors.",
    ]


#: The merge section measured three times on one day (the full run, then twice with --sections):
#: medians in MB/s of merge, merge with the allocator fix, plain write.
MERGE_HISTORY = {"date": "2026-11-30", "runs": [(337, 545, 381), (309, 477, 468), (312, 436, 281)]}


def merge_history() -> str:
    ratios = [(merge / plain, fixed / plain) for merge, fixed, plain in MERGE_HISTORY["runs"]]
    merged = ", ".join(times(r[0]) for r in ratios)
    fixed = ", ".join(times(r[1]) for r in ratios)
    return (
        f"The ratio to the plain write moves with the shared disk: in the three measurements of "
        f"{MERGE_HISTORY['date']} the merge reached {merged} the plain write, the merge with the fix {fixed}."
    )


def merge_notes(results: R) -> list[str]:
    merge = results["merge"]
    mb_s = merge["mb_s"]
    fixed = ratio(mb_s.get("merge_mallopt"), mb_s["plain_write"])
    return [
        "The merge writes what the plain write writes, and before that reads each passed-through image again "
        "from the source and checks its CRC-32 (the write-once design moved that here: ~20 % and ~10 % of the "
        "merge's samples in a py-spy profile). Both pay a cost in the kernel that has nothing to do with the "
        "data: glibc gives freed heap memory above 128 KB back to the kernel (`M_TRIM_THRESHOLD`) and its dynamic "
        "`M_MMAP_THRESHOLD` follows the allocation sizes, so every 64 MB batch of ~110 KB values (the writer's "
        "batch, LMDB's overflow pages) is allocated from fresh pages that the kernel must fault in and zero "
        "(system time 2.1 s of a 2.6 s merge of 1.1 GB in the profile). " + merge_history(),
        f"**Fix** (scripts/workflow_io.py, `LMDBWriter.__init__`): on glibc, "
        "`ctypes.CDLL('libc.so.6').mallopt(-1, 512 << 20)` (M_TRIM_THRESHOLD) and `mallopt(-3, 32 << 20)` "
        "(M_MMAP_THRESHOLD), in a try/except OSError for other C libraries. Measured here (the `merge_mallopt` "
        f"row, the same code with that setting): {fmt(mb_s.get('merge_mallopt'))} MB/s, {times(fixed)} the plain "
        f"write, from {fmt(mb_s['merge'])} MB/s. Peak memory stays bounded by the 64 MB batch (the heap keeps it "
        "for the next batch). It matters for section 1: the merge is the serial part of every conversion. An "
        "alternative without libc tuning: `writemap=True` for the output (LMDB writes into its map, no malloc'd "
        "pages), truncating the file to its last used page after closing (DESIGN.md section 8).",
        "The source is in the page cache here. At ImageNet scale the merge reads the passed-through images from "
        "disk a second time (encode read them first), so the source disk bounds it as well; the write-once "
        "design trades that read for not writing the bytes to parts and reading them back.",
    ]


def size_notes(results: R) -> list[str]:
    convert = results["convert"]
    c = convert["contenders"]
    overhead = (c["workflow"]["output_bytes_large"] - convert["source_bytes_large"]) / convert["n_large"]
    return [
        f"Valid RGB JPEGs are stored byte for byte; only the 4 odd files are re-encoded. The rest of the difference "
        f"({fmt(overhead)} bytes per image) is LMDB's layout: a ~110 KB value occupies whole 4 KB overflow pages "
        "(~2 KB lost on average) plus B-tree pages and the meta (labels, sizes, CRCs, paths). The baseline re-encodes "
        "everything at q95, which makes these photos bigger, and loses quality on top."
    ]


def reader_notes(results: R) -> list[str]:
    reader = results["reader"]
    pil, pure = warm(results, "lmdb_getitem_pil"), warm(results, "pure_decode_pil")
    folder = warm(results, "imagefolder_getitem")
    fixed_pil = warm(results, "fix_getitem_pil_memoized_realpath")
    get, fixed_get = warm(results, "lmdb_get_bytes"), warm(results, "fix_get_bytes_memoized_realpath")
    file_read = warm(results, "file_open_read")
    overhead_us = 1e6 * (1 / pil - 1 / pure) if pil and pure else None
    tensor = warm(results, "lmdb_getitem_tensor")
    loaders = ratio(warm(results, "dataloader_2_workers"), warm(results, "dataloader_0_workers"))
    texts = [
        f"A PIL sample is a decode: {fmt(ms_per_image(pure), 2)} ms pure, {fmt(ms_per_image(pil), 2)} ms through "
        f"`ds[i]`, {fmt(ms_per_image(folder), 2)} ms through ImageFolder. The reader adds {fmt(overhead_us)} µs per "
        f"read, ImageFolder an open + read ({fmt(1e6 / file_read if file_read else None)} µs here, warm), so the two "
        "are within a few percent of each other and of the decode; which one wins is decided by the reader's "
        "per-read overhead.",
        *realpath_notes(get, fixed_get, fixed_pil, file_read, folder, pure),
        f"`decode=\"tensor\"` decodes with torchvision's `decode_jpeg` straight from LMDB's memory: {fmt(tensor)} "
        f"img/s against {fmt(warm(results, 'pure_decode_tensor'))} for a pure `decode_jpeg` of in-memory bytes.",
        f"DataLoader: 2 workers give {times(loaders)} 0 workers on 2 cores; the main process only collates, so "
        "the workers scale with what the machine's other jobs leave of the two cores.",
    ]
    texts += cold_notes(reader["cold"])
    return texts


def cold_notes(cold: R) -> list[str]:
    if "note" in cold:
        return [cold["note"]]
    lmdb_rate, file_rate = cold["cold_lmdb_get_bytes"]["img_s"], cold["cold_file_open_read"]["img_s"]
    text = (
        f"Cold page cache (LMDB's map closed and the cache dropped before each contender): LMDB "
        f"{fmt(lmdb_rate)} reads/s against {fmt(file_rate)} for open + read of the files. "
    )
    if lmdb_rate >= file_rate:
        return [text + "One file and one mapping: no per-file open and metadata lookups."]
    return [
        text + "LMDB is slower cold on this machine's virtual disk. A ~110 KB value spans ~28 pages of the map, "
        "and the reader maps the file with `readahead=False` (MADV_RANDOM), so they are faulted in page by "
        "page, while a file read asks for the whole range at once. Tried outside the product: `readahead=True` "
        "was slower still (264 reads/s: the kernel reads far beyond each value), and `madvise(MADV_WILLNEED)` on "
        "the value's pages before copying made no difference; the cause is not pinned down. Worth a look by the "
        "reader's owner for training straight from a cold network or disk file; once the pages are cached "
        "(the usual case after the first epoch) LMDB is the faster of the two (warm rows above)."
    ]


def realpath_notes(*rates: float | None) -> list[str]:
    """The per-read realpath: a fix when it costs, a note once the reader resolves it only once."""
    get, fixed_get, fixed_pil, file_read, folder, pure = rates
    if ratio(fixed_get, get) < 1.15:
        return [
            f"Raw reads: `get_bytes` {fmt(get)}/s against {fmt(file_read)}/s for open + read. The reader resolves "
            "the file's real path once (dataset.py's `_env_key`, since this benchmark found an `lstat` per path "
            "component on every read), so the rows with realpath memoized measure the same code now "
            f"({times(ratio(fixed_get, get))})."
        ]
    return [
        f"Raw reads show it: `get_bytes` {fmt(get)}/s against {fmt(file_read)}/s for open + read. Profile "
        "(cProfile): every read goes through `dataset.shared_env()`, which calls `os.path.realpath(path)`: an "
        "`lstat` per path component, on every read. **Fix** (scripts/dataset.py, `shared_env`): resolve the key "
        "once per path (memoize the realpath per path string). Measured here with realpath memoized: "
        f"`get_bytes` {fmt(fixed_get)}/s ({times(ratio(fixed_get, get))}, {times(ratio(fixed_get, file_read))} "
        f"open + read), `ds[i]` {fmt(fixed_pil)}/s: {times(ratio(fixed_pil, folder))} ImageFolder and "
        f"{times(ratio(fixed_pil, pure))} the pure decode."
    ]


def grows(row: R) -> bool:
    """Own memory up by more than noise (2 MB) and by more than 0.2 KB per extra image."""
    small, large = row.get("rss_anon_mb_small"), row.get("rss_anon_mb_large")
    return small is not None and large is not None and large - small > 2 and row["anon_kb_per_image"] > 0.2


def memory_notes(results: R) -> list[str]:
    memory = results["memory"]
    rules = memory["rules"]
    growing = {rule: row["anon_kb_per_image"] for rule, row in rules.items() if grows(row)}
    texts = [
        "Peak RSS is the kernel's high-water mark of each job (VmHWM: own memory plus mapped file pages, so an "
        "LMDB the job reads counts as it is touched; those pages are page cache, reclaimable); *own* memory is "
        "RssAnon, the largest seen in a 20 ms poll. Snakemake's max_rss samples every 0.5 s and misses short jobs "
        "entirely (values near zero)."
    ]
    if growing:
        per_rule = ", ".join(
            f"{rule} {fmt(kb, 2)} KB/image (~{fmt(kb * IMAGENET_TRAIN / 1e6, 1)} GB for ImageNet train)"
            for rule, kb in sorted(growing.items())
        )
        texts.append(
            f"Own memory growing with the split: {per_rule}. Per-image Python objects (manifest samples, report "
            "columns, meta arrays) are expected in count_check, merge, write_meta and verify; encode_shard's must "
            "not grow, and the merge's batch is capped at 64 MB (it grows with small splits until the cap)."
        )
    else:
        texts.append("No rule's own memory grows measurably with the split at these sizes.")
    return texts


def scale_notes(results: R) -> list[str]:
    scale = results["scale"]
    dry = scale["dry_run"]
    counts = sorted(int(k) for k in dry)
    per_shard = ratio(dry[str(counts[-1])]["seconds"] - dry[str(counts[0])]["seconds"], counts[-1] - counts[0])
    listing = scale["listing"]
    startup = scale["startup"]
    per_file = listing["uss_bytes_per_file"]
    writers = startup["writer_scripts"]
    return [
        f"Planning costs {fmt(1000 * per_shard, 2)} ms per shard, so the shipped ImageNet config "
        f"(256 + 16 shards) plans in about {fmt(dry[str(counts[0])]['seconds'] + 272 * per_shard, 1)} s.",
        f"count_check lists {fmt(listing['files_per_s'])} files/s on {listing['files']:,} files (most of it the "
        f"rule's fixed start, torchvision's import); {fmt(per_file)} bytes of memory per listed file.",
        f"Each job is a new Python process: the writer scripts' imports cost {fmt(writers['cpu'], 2)} s "
        f"CPU and {fmt(writers['max_rss_mb'])} MB, without torch. `import torch` alone costs "
        f"{fmt(startup['torch']['cpu'], 2)} s CPU and {fmt(startup['torch']['max_rss_mb'])} MB: what every job paid "
        "before dataset.py imported torch lazily (an earlier version of this benchmark measured 35.6 s -> 10.8 s "
        "per run of 400 images from that change alone, CPU 27.2 s -> 9.0 s).",
    ]


def archive_notes(results: R) -> list[str]:
    archives = results["archives"]
    routes = archives["routes"]
    stream, extract, by_hand = routes["stream"], routes["extract"], routes["tar_then_convert"]
    large = archives["images"]["large"]
    unpack_ms = {
        "extract": ratio(1000 * extract["extract_rule_seconds"]["large"], large),
        "tar": ratio(1000 * by_hand["untar_seconds"]["large"], large),
    }
    convert_ms = ms_per_image(stream["marginal_img_s"])
    hours = {name: IMAGENET_TRAIN / row["marginal_img_s"] / 3600 for name, row in routes.items()}
    header = section(results, "convert")
    header_ms = ms_per_image(header["contenders"]["workflow_header"]["marginal_img_s"]) if header else float("nan")
    return [
        "All routes run the same conversion; extracting adds the unpacking before it, on one core: "
        f"{fmt(unpack_ms['extract'], 2)} ms per image for the workflow's `extract: true` (Python's tarfile, "
        f'`filter="data"`) and {fmt(unpack_ms["tar"], 2)} ms for `tar xf`, a file created and written per image. '
        f"Streaming costs {fmt(convert_ms, 2)} ms per image in all (indexing the tars is cheap; shards `pread` the "
        "members). So streaming is (conversion + unpacking) / conversion faster per image: "
        f"{times(ratio(stream['marginal_img_s'], extract['marginal_img_s']))} and "
        f"{times(ratio(stream['marginal_img_s'], by_hand['marginal_img_s']))} here. 2x needs the unpacking to cost "
        "more than the whole conversion, and with the default full decode check on two cores it costs about the "
        "same. End to end the ratios are lower still: each run also carries the same fixed cost (two splits, ~20 "
        "jobs), which these sizes do not amortize.",
        "When does streaming reach 2x? (a) With a cheaper conversion: with `check: header` (section 1: "
        f"{fmt(header_ms, 2)} ms per image) the same unpacking costs would make it about "
        f"{times(ratio(header_ms + unpack_ms['extract'], header_ms))} (an estimate from the two measurements, not "
        "measured as one run), and the section 1 fixes push the default check the same way. (b) At full scale: "
        "this machine's page cache holds the extracted tree, ImageNet's 140 GB would not, so unpacking then "
        "writes to disk and the conversion reads back from it, and 140 GB of free space is needed that the "
        "streaming route does not use.",
        f"Projected to ImageNet train ({IMAGENET_TRAIN:,} images) at these marginal rates on 2 cores: streaming "
        f"{fmt(hours['stream'], 2)} h, `extract: true` {fmt(hours['extract'], 2)} h, `tar xf` + convert "
        f"{fmt(hours['tar_then_convert'], 2)} h (page cache assumed, see above).",
    ]
