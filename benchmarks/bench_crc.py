"""Section 16 (issue 50): checked reads at the speed of unchecked ones.

Every local and remote read checks its record's CRC-32 (reader/format.checksum, zlib-ng where
installed). On an ImageNet-like set converted by the real workflow, each repeat runs every contender
in rotating order, side by side: the reader checked (``crc_check=True``, the default), the same again
(the A/A pair: the noise), and unchecked (``crc_check=False``), against the baseline of the row:

- **CRC-32 per record by size**, each installed library against ``zlib.crc32`` (one buffer in cache,
  best of the repeats), and whether its binding lets other threads run meanwhile (a Python thread's
  progress beside a thread computing CRCs of 8 MB, against alone: ~1 released, ~0.5 held);
- **cold reads** (the page cache emptied once per repeat, then the contenders interleaved, 16 records
  or one batch at a time, each on records of its own so that every read is cold): ``get_bytes`` against
  ``open`` + ``read`` of the image files; ``__getitems__`` batches of 64 (``decode="bytes"``) against the
  disk's hinted-pread limit (bench_cold.hinted_preads at the same offsets);
- **warm reads**: the same records read again, now cached;
- **``ds[i]``** (``decode="pil"``, one core, warm) against a pure in-memory decode of the same bytes
  (``Image.open(BytesIO(b)).convert("RGB")``) and against torchvision's ImageFolder ``[i]``;
- **DataLoader** (2 workers, batch 64, shuffled by one generator) with the train transform
  (RandomResizedCrop(224), RandomHorizontalFlip, PILToTensor) and the val one (Resize(256),
  CenterCrop(224), PILToTensor) against ImageFolder: images per second and worker CPU per image;
- **``verify --full``** of the file and the **merge** of the split (bench_merge's ``merge`` contender
  on the parts of a run stopped before it), each run with zlib-ng and with zlib alone (the fast
  libraries hidden from the child by a folder of failing packages first on PYTHONPATH), and the CRC
  share of each: the CRC-32 of every record, timed in this process, over the run's time.

    PYTHONPATH=src:. .venv/bin/python -m benchmarks.bench_crc --tree /work/bench-data/images \\
        --lmdb /work/bench-data/out/train.lmdb --work /work/bench-data/crc --repeats 5

Root empties the page cache with drop_caches, others with posix_fadvise (bench_cold.PageCache). The
tables go between this benchmark's markers in BENCHMARKS.md (``--write``); raw figures to
``WORK/results.json``.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from PIL import Image
from torch.utils.data import DataLoader
from torchvision.datasets import ImageFolder

from benchmarks import bench_cold
from benchmarks.bench_common import BIN, REPO, children_cpu_seconds, fresh_dir, median, rotated, run_snakemake, timed
from benchmarks.bench_merge import merged_path, part_inputs
from benchmarks.bench_training import pil_transform
from imagefolder_lmdb.reader import LMDBReader, close_all_envs
from imagefolder_lmdb.reader import format as record_format
from tests.support.workflow import write_config

SEED = 50
RECORD_SIZES = (10_000, 110_000, 1_000_000, 5_000_000)
CHUNK = 16  # cold get_bytes: records a contender reads before the next one's turn
BATCH = 64
BEGIN, END = "<!-- bench_crc: begin -->", "<!-- bench_crc: end -->"
#: What the contenders pass to LMDBReader: checked, the A/A pair, unchecked.
READERS = {"checked": True, "checked_again": True, "unchecked": False}


# -- the CRC-32 alone -------------------------------------------------------------------------------


def crc_functions() -> dict[str, Callable[[Any], int]]:
    """zlib.crc32 and each fast library of format.CRC32_LIBRARIES that is installed here."""
    found: dict[str, Callable[[Any], int]] = {"zlib": zlib.crc32}
    for module, function in record_format.CRC32_LIBRARIES:
        try:
            found[module.split(".")[0]] = getattr(__import__(module, fromlist=[function]), function)
        except ImportError:
            continue
    return found


def crc_microseconds(function: Callable[[Any], int], data: bytes, repeats: int) -> float:
    """Best of ``repeats`` loops of one buffer (in cache), microseconds per call."""
    calls = max(3, 20_000_000 // max(len(data), 1))
    best = float("inf")
    for _ in range(repeats):
        best = min(best, timed(lambda: [function(data) for _ in range(calls)]) / calls)
    return best * 1e6


def progress_beside(function: Callable[[Any], int], seconds: float = 0.3) -> float:
    """A Python loop's progress while another thread computes CRCs of 8 MB, over its progress alone:
    ~1 where the binding releases the GIL, ~0.5 where it holds it (the switch interval shares it)."""
    data = os.urandom(8 << 20)

    def count() -> int:
        done, end = 0, time.perf_counter() + seconds
        while time.perf_counter() < end:
            done += 1
        return done

    alone = count()
    stop = threading.Event()
    worker = threading.Thread(target=lambda: [function(data) for _ in iter(stop.is_set, True)])
    worker.start()
    beside = count()
    stop.set()
    worker.join()
    return beside / alone


def measure_crc(repeats: int) -> dict[str, Any]:
    buffers = {size: random.Random(size).randbytes(size) for size in RECORD_SIZES}
    functions = crc_functions()
    for function in functions.values():
        assert all(function(data) == zlib.crc32(data) for data in buffers.values())
    return {
        "us": {
            name: {size: crc_microseconds(f, buffers[size], repeats) for size in RECORD_SIZES}
            for name, f in functions.items()
        },
        "gil": {name: median([progress_beside(f) for _ in range(3)]) for name, f in functions.items()},
        "chosen": record_format.CRC32_LIBRARY,
    }


# -- cold and warm raw reads ------------------------------------------------------------------------


def raw_readers(lmdb: str, tree: Path) -> tuple[dict[str, Callable[[list[int]], Any]], Callable[[], None]]:
    """What each raw-read contender does with a list of indices."""
    paths = [path for path, _ in ImageFolder(str(tree)).samples]
    readers: dict[str, Callable[[list[int]], Any]] = {
        "files": lambda indices: [bench_cold.read_file(paths[i]) for i in indices]
    }
    for name, check in READERS.items():
        ds = LMDBReader(lmdb, decode="bytes", crc_check=check)
        assert ds.reads_by_offset
        readers[f"get_bytes_{name}"] = lambda indices, ds=ds: [ds.get_bytes(i) for i in indices]
        readers[f"getitems_{name}"] = ds.__getitems__
    offsets, lengths = ds._offsets, ds._lengths
    assert offsets is not None and lengths is not None
    fd = os.open(lmdb, os.O_RDONLY)
    readers["limit"] = lambda batch: bench_cold.hinted_preads(fd, [(int(offsets[i]), int(lengths[i])) for i in batch])

    def close() -> None:
        os.close(fd)
        close_all_envs()

    return readers, close


ONE_AT_A_TIME = ["files", *(f"get_bytes_{name}" for name in READERS)]
BATCHED = ["limit", *(f"getitems_{name}" for name in READERS)]


def interleaved(readers: dict[str, Callable[[list[int]], Any]], work: dict[str, list[list[int]]], turn: int) -> dict:
    """Seconds of each contender over its chunks, the contenders taking turns chunk by chunk."""
    seconds = dict.fromkeys(work, 0.0)
    for number in range(len(next(iter(work.values())))):
        for name in rotated(list(work), number + turn):
            seconds[name] += timed(lambda name=name, number=number: readers[name](work[name][number]))
    return seconds


def measure_raw(lmdb: str, tree: Path, repeats: int, reads: int, batches: int, method: str) -> dict[str, Any]:
    """Reads/s of every raw contender, cold then warm, per repeat."""
    count = len(ImageFolder(str(tree)))
    cache = bench_cold.PageCache(method, [Path(lmdb)])
    runs: dict[str, list[float]] = {}
    for turn in range(repeats):
        order = random.Random(SEED + turn).sample(range(count), count)
        chunked: dict[str, list[list[int]]] = {}
        for k, name in enumerate(ONE_AT_A_TIME):
            mine = order[k * reads : (k + 1) * reads]
            chunked[name] = [mine[i : i + CHUNK] for i in range(0, reads, CHUNK)]
        start = len(ONE_AT_A_TIME) * reads
        for k, name in enumerate(BATCHED):
            mine = order[start + k * batches * BATCH : start + (k + 1) * batches * BATCH]
            chunked[name] = [mine[i : i + BATCH] for i in range(0, len(mine), BATCH)]
        close_all_envs()
        if method == "drop_caches":
            cache.empty()
        else:  # the image files too
            bench_cold.PageCache(method, [Path(lmdb), *(Path(p) for p, _ in ImageFolder(str(tree)).samples)]).empty()
        readers, close = raw_readers(lmdb, tree)
        try:
            cold = interleaved(readers, {name: chunked[name] for name in ONE_AT_A_TIME}, turn)
            cold |= interleaved(readers, {name: chunked[name] for name in BATCHED}, turn)
            warm = interleaved(readers, {name: chunked[name] for name in ONE_AT_A_TIME}, turn + 1)
        finally:
            close()
        for name, seconds in cold.items():
            runs.setdefault(f"cold {name}", []).append(sum(map(len, chunked[name])) / seconds)
        for name, seconds in warm.items():
            runs.setdefault(f"warm {name}", []).append(sum(map(len, chunked[name])) / seconds)
    return runs


# -- ds[i] on one core, and DataLoaders ---------------------------------------------------------------


def measure_items(lmdb: str, tree: Path, repeats: int, images: int) -> dict[str, list[float]]:
    """Images/s of ``ds[i]`` (PIL, warm, one core) per contender and repeat, the same indices each."""
    folder = ImageFolder(str(tree))
    indices = random.Random(SEED).sample(range(len(folder)), images)
    datasets = {name: LMDBReader(lmdb, crc_check=check) for name, check in READERS.items()}
    blobs = [datasets["unchecked"].get_bytes(i) for i in indices]
    contenders: dict[str, Callable[[], Any]] = {
        "pure_decode": lambda: [Image.open(io.BytesIO(b)).convert("RGB") for b in blobs],
        "imagefolder": lambda: [folder[i] for i in indices],
    }
    for name, ds in datasets.items():
        contenders[f"item_{name}"] = lambda ds=ds: [ds[i] for i in indices]
    runs: dict[str, list[float]] = {name: [] for name in contenders}
    for turn in range(repeats):
        for name in rotated(list(contenders), turn):
            runs[name].append(images / timed(contenders[name]))
    close_all_envs()
    return runs


def loader_run(ds: Any, images: int) -> tuple[float, float]:
    """img/s from ``iter(loader)`` (worker start included) to the last batch, and worker CPU ms/img."""
    loader = DataLoader(
        ds, batch_size=BATCH, shuffle=True, num_workers=2, generator=torch.Generator().manual_seed(SEED)
    )
    cpu = children_cpu_seconds()
    start = time.perf_counter()
    iterator = iter(loader)
    for _ in range(images // BATCH):
        next(iterator)
    seconds = time.perf_counter() - start
    del iterator  # stops the workers, whose CPU is then counted
    return images / seconds, (children_cpu_seconds() - cpu) / images * 1e3


def measure_loaders(lmdb: str, tree: Path, repeats: int, images: int) -> dict[str, list[list[float]]]:
    runs: dict[str, list[list[float]]] = {}
    for kind in ("train", "val"):
        contenders: dict[str, Any] = {"imagefolder": ImageFolder(str(tree), transform=pil_transform(kind))}
        for name, check in READERS.items():
            contenders[f"lmdb_{name}"] = LMDBReader(lmdb, transform=pil_transform(kind), crc_check=check)
        for turn in range(repeats):
            for name in rotated(list(contenders), turn):
                runs.setdefault(f"{kind} {name}", []).append(list(loader_run(contenders[name], images)))
        close_all_envs()
    return runs


# -- verify --full and the merge, with zlib-ng and with zlib alone ------------------------------------


def zlib_only_env(work: Path) -> dict[str, str]:
    """An environment whose Python cannot import the fast CRC-32 libraries: a failing package of each
    name first on PYTHONPATH, so format.fastest_crc32 falls back to zlib (as without them installed)."""
    hidden = work / "no-fast-crc"
    for module, _ in record_format.CRC32_LIBRARIES:
        package = hidden / module.split(".")[0]
        package.mkdir(parents=True, exist_ok=True)
        (package / "__init__.py").write_text("raise ImportError('hidden by benchmarks/bench_crc.py')\n")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(hidden), str(REPO / "src"), str(REPO)])}


def run_timed(command: list[str], env: dict[str, str]) -> float:
    os.sync()
    start = time.perf_counter()
    subprocess.run(command, cwd=REPO, env=env, check=True, capture_output=True)
    return time.perf_counter() - start


def merge_parts(tree: Path, work: Path) -> Path:
    """A run of the split stopped before its merge, parts kept (as bench_merge.run_until_merge)."""
    rundir = work / "merge-parts"
    if not merged_path(rundir).parent.joinpath("parts").is_dir():
        fresh_dir(rundir)
        config = write_config(rundir, {"train": {"source": str(tree), "shards": 4}}, encode={"check": "header"})
        run_snakemake(rundir, config, "--notemp", "work/train/merged.lmdb")
    return rundir


def which_library(env: dict[str, str]) -> str:
    probe = "from imagefolder_lmdb.reader import format; print(format.CRC32_LIBRARY)"
    return subprocess.run(
        [sys.executable, "-c", probe], env=env, check=True, capture_output=True, text=True
    ).stdout.strip()


def measure_whole_file(lmdb: str, tree: Path, work: Path, repeats: int) -> dict[str, Any]:
    """Seconds of ``verify --full`` and of the merge with each CRC-32, and the CRC-32 of every record
    with each, timed here."""
    envs = {"after": {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}}
    envs["before"] = zlib_only_env(work)
    libraries = {when: which_library(env) for when, env in envs.items()}
    rundir = merge_parts(tree, work)
    parts, _, _ = part_inputs(rundir)
    assert parts, f"no parts under {rundir}"
    out = work / "merged.lmdb"
    commands = {
        "verify --full": [str(BIN / "imagefolder-lmdb"), "verify", lmdb, "--full"],
        "merge": [sys.executable, "-m", "benchmarks.bench_merge", "merge", str(rundir), str(out)],
    }
    seconds: dict[str, list[float]] = {}
    for turn in range(repeats):
        for when in rotated(["before", "after"], turn):
            for what, command in commands.items():
                out.unlink(missing_ok=True)
                seconds.setdefault(f"{what} {when}", []).append(run_timed(command, envs[when]))
    out.unlink(missing_ok=True)
    ds = LMDBReader(lmdb, decode="bytes", crc_check=False)
    crc = {"before": 0.0, "after": 0.0}
    functions = {"before": zlib.crc32, "after": record_format.checksum}
    for index in range(len(ds)):
        data = ds.get_bytes(index)
        for when, function in functions.items():
            crc[when] += timed(lambda function=function, data=data: function(data))
    close_all_envs()
    return {"libraries": libraries, "seconds": seconds, "crc_seconds": crc, "records": len(ds)}


# -- the report -------------------------------------------------------------------------------------


def ratio_of_medians(runs: dict[str, list[float]], name: str, base: str) -> float:
    """The median over repeats of each repeat's ratio (both measured side by side in it)."""
    return median([a / b for a, b in zip(runs[name], runs[base], strict=True)])


def verdict(value: float, floor: float, above: bool = True) -> str:
    return "pass" if (value >= floor if above else value <= floor) else "**MISS**"


def render(results: dict[str, Any]) -> str:
    lines = [BEGIN, ""]
    lines += render_crc(results["crc"])
    lines += render_reads(results)
    lines += render_whole_file(results["whole_file"])
    lines += ["", END]
    return "\n".join(lines)


def render_crc(crc: dict[str, Any]) -> list[str]:
    names = list(crc["us"])
    header = "| CRC-32 of one record (in cache) | " + " | ".join(f"{size / 1e3:,.0f} KB" for size in RECORD_SIZES)
    lines = [header + " | lets other threads run |", "| --- |" + " ---: |" * (len(RECORD_SIZES) + 1)]
    for name in names:
        cells = []
        for size in RECORD_SIZES:
            us, zlib_us = crc["us"][name][str(size)], crc["us"]["zlib"][str(size)]  # keys as JSON has them
            cells.append(f"{us:,.1f} us" + ("" if name == "zlib" else f" ({zlib_us / us:.1f}x)"))
        chosen = " (used)" if crc["chosen"].split(".")[0] == name else ""
        lines.append(f"| {name}{chosen} | " + " | ".join(cells) + f" | {crc['gil'][name]:.2f} |")
    return [*lines, ""]


def render_reads(results: dict[str, Any]) -> list[str]:
    raw, items, loaders = results["raw"], results["items"], results["loaders"]
    rows: list[tuple[str, str, str, float, bool]] = []  # row, contender, base, floor, above
    for kind in ("cold", "warm"):
        rows += [
            (
                f"{kind} `get_bytes` ÷ plain files",
                f"{kind} get_bytes_{{}}",
                f"{kind} files",
                1.2 if kind == "cold" else 1.0,
                True,
            )
        ]
    rows.append(("cold batches of 64 ÷ hinted-pread limit", "cold getitems_{}", "cold limit", 0.9, True))
    # The CRC-32's own time per record (every record of the file, the library used, timed in this
    # process) over the row's time per record: the check's cost, free of the rows' run-to-run noise.
    whole = results["whole_file"]
    crc_us = whole["crc_seconds"]["after"] / whole["records"] * 1e6
    lines = [
        "| read (median of each repeat's ratio) | checked | checked again (A/A) | unchecked | checked ÷ unchecked "
        "| CRC-32's share | floor (checked) | |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for row, contender, base, floor, above in rows:
        got = {name: ratio_of_medians(raw, contender.format(name), base) for name in READERS}
        cost = ratio_of_medians(raw, contender.format("checked"), contender.format("unchecked"))
        share = crc_us / (1e6 / median(raw[contender.format("checked")]))
        lines.append(_read_row(row, got, cost, share, floor, above))
    for base, floor in (("pure_decode", 0.95), ("imagefolder", 1.0)):
        got = {name: ratio_of_medians(items, f"item_{name}", base) for name in READERS}
        cost = ratio_of_medians(items, "item_checked", "item_unchecked")
        share = crc_us / (1e6 / median(items["item_checked"]))
        lines.append(
            _read_row(f"`ds[i]` (PIL, 1 core, warm) ÷ {base.replace('_', ' ')}", got, cost, share, floor, True)
        )
    for kind in ("train", "val"):
        names = ["imagefolder", *(f"lmdb_{n}" for n in READERS)]
        cpu_ms = median([run[1] for run in loaders[f"{kind} lmdb_checked"]])
        for what, column, above in (("img/s", 0, True), ("CPU per image", 1, False)):
            series = {name: [run[column] for run in loaders[f"{kind} {name}"]] for name in names}
            if above:
                got = {n: ratio_of_medians(series, f"lmdb_{n}", "imagefolder") for n in READERS}
                cost = ratio_of_medians(series, "lmdb_checked", "lmdb_unchecked")
            else:  # less CPU is better: ImageFolder's CPU over ours
                got = {n: ratio_of_medians(series, "imagefolder", f"lmdb_{n}") for n in READERS}
                cost = ratio_of_medians(series, "lmdb_unchecked", "lmdb_checked")
            share = crc_us / (cpu_ms * 1e3)  # of the workers' CPU per image
            lines.append(_read_row(f"DataLoader {kind} ÷ ImageFolder ({what})", got, cost, share, 1.0, True))
    lines += ["", "Rates (median reads or images per second; DataLoader: img/s and worker CPU ms per image):", ""]
    lines += ["| contender | median | each repeat |", "| --- | ---: | --- |"]
    for name, runs in {**raw, **items}.items():
        lines.append(f"| {name} | {median(runs):,.0f} | {', '.join(f'{r:,.0f}' for r in runs)} |")
    for name, runs in loaders.items():
        rates, cpu = [r[0] for r in runs], [r[1] for r in runs]
        lines.append(
            f"| DataLoader {name} | {median(rates):,.0f} img/s, {median(cpu):.2f} ms "
            f"| {', '.join(f'{r:,.0f}' for r in rates)} |"
        )
    return [*lines, ""]


def _read_row(row: str, got: dict[str, float], cost: float, share: float, floor: float, above: bool) -> str:
    check_cost = 1 / cost - 1  # the unchecked rate over the checked one, less 1: what the check costs
    return (
        f"| {row} | **{got['checked']:.2f}x** | {got['checked_again']:.2f}x | {got['unchecked']:.2f}x | "
        f"{cost:.3f} (check {check_cost:+.1%}) | {share:.2%} | ≥ {floor}x | {verdict(got['checked'], floor, above)} |"
    )


def render_whole_file(whole: dict[str, Any]) -> list[str]:
    seconds, crc = whole["seconds"], whole["crc_seconds"]
    lines = [
        f"| whole file, {whole['records']:,} records | CRC-32 by | seconds (each run) | median "
        "| CRC-32 of every record | CRC share |",
        "| --- | --- | --- | ---: | ---: | ---: |",
    ]
    for what in ("verify --full", "merge"):
        for when in ("before", "after"):
            runs = seconds[f"{what} {when}"]
            share = crc[when] / median(runs)
            lines.append(
                f"| {what}, {when} | {whole['libraries'][when]} | {', '.join(f'{r:.1f}' for r in runs)} | "
                f"{median(runs):.2f} s | {crc[when]:.3f} s | {share:.1%} |"
            )
    return lines


def write_section(markdown: str, path: Path) -> None:
    text = path.read_text()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{path} has no {BEGIN} ... {END} markers to write the tables between")
    head, rest = text.split(BEGIN, 1)
    path.write_text(head + markdown + rest.split(END, 1)[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", type=Path, required=True, help="the ImageFolder the LMDB was converted from")
    parser.add_argument("--lmdb", required=True, help="the split converted by the workflow")
    parser.add_argument("--work", type=Path, required=True, help="a folder for the merge's parts and the results")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--reads", type=int, default=400, help="records each one-at-a-time contender reads per repeat")
    parser.add_argument("--batches", type=int, default=5, help="batches of 64 each batched contender reads per repeat")
    parser.add_argument("--items", type=int, default=200, help="ds[i] images per contender and repeat")
    parser.add_argument("--loader-images", type=int, default=640)
    parser.add_argument("--whole-file-repeats", type=int, default=2)
    parser.add_argument("--write", type=Path, help="BENCHMARKS.md: write the tables between its markers")
    parser.add_argument("--report-only", action="store_true", help="render WORK/results.json again")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    results_path = args.work / "results.json"
    if args.report_only:
        results = json.loads(results_path.read_text())
    else:
        method = bench_cold.default_method()
        results = {"started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load_before": os.getloadavg()}
        results["crc"] = json.loads(json.dumps(measure_crc(args.repeats)))
        print("crc done", flush=True)
        results["raw"] = measure_raw(args.lmdb, args.tree, args.repeats, args.reads, args.batches, method)
        print("raw reads done", flush=True)
        results["items"] = measure_items(args.lmdb, args.tree, args.repeats, args.items)
        print("ds[i] done", flush=True)
        results["loaders"] = measure_loaders(args.lmdb, args.tree, args.repeats, args.loader_images)
        print("loaders done", flush=True)
        results["whole_file"] = measure_whole_file(args.lmdb, args.tree, args.work, args.whole_file_repeats)
        results |= {"ended": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load_after": os.getloadavg()}
        results["cold_method"] = method
        results_path.write_text(json.dumps(results, indent=1))
    markdown = render(results)
    print(markdown)
    if args.write:
        write_section(markdown, args.write)


if __name__ == "__main__":
    main()
