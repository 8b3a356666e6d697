"""Views (issue 61): ``ds[i]`` through a class subset and through a union of 4 files against the plain
datasets reading the same records (floor: 0.97x), and the time to open a view of 1,000 classes
against opening the file (floor: at most 0.1 s more).

Reads: 4 trees of ImageNet-like JPEGs (``benchmarks.make_images``, ~110 KB, the same classes, other
file names), each converted by ``imagefolder-lmdb convert``. One random sequence of the union's
indices is read through the union view and, record for record, through the plain dataset of each
file (``source_of``); the subset (half the classes of the first file) likewise against that file's
plain dataset. Warm page cache, ``decode="pil"`` (what training reads) and ``decode="bytes"`` (the
least work per read, so the view's own cost shows most); contenders interleaved, median per repeat.

Opening: meta-only files written directly (tiny records; what opening costs is the meta) in the shape
of ImageNet-1k (1,281,167 records, 1,000 classes) and of a 2,000-class file of the same size, each
opened plain and as views (ImageNet-100's 100 classes; 1,000 of 2,000; all 1,000), median of repeats.

    PYTHONPATH=src:. .venv/bin/python -m benchmarks.bench_views --write BENCHMARKS.md
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from imagefolder_lmdb.reader import LMDBDataset, Meta, close_all_envs, encode_meta, record_key
from imagefolder_lmdb.writing.lmdb_writer import LMDBWriter
from imagefolder_lmdb.writing.record_locations import add_locations

BIN = Path(sys.executable).parent


def converted_files(work: Path, images: int, classes: int) -> list[Path]:
    """4 trees (the same classes, other file names) converted; reused when already there."""
    files = []
    for number in range(4):
        tree, out = work / f"tree{number}", work / f"out{number}"
        if not (out / "train.lmdb").exists():
            make = [sys.executable, "-m", "benchmarks.make_images", str(tree), "--images", str(images)]
            make += ["--classes", str(classes), "--seed", "7", "--first-index", str(number * 1_000_000)]
            subprocess.run(make, check=True, capture_output=True)
            convert = [str(BIN / "imagefolder-lmdb"), "convert", str(tree), str(out), "--split", "train"]
            subprocess.run([*convert, "--cores", "2"], check=True, capture_output=True)
        files.append(out / "train.lmdb")
    return files


def interleaved(view: Any, pairs: list[tuple[Any, int]], indices: list[int], chunk: int = 20) -> float:
    """Plain over view seconds per read, the two timed in alternating chunks of ``chunk`` reads (a
    busy machine's drift falls on both alike), in CPU seconds of this thread (time.thread_time: what the
    reads cost, without the waits for a core that other processes add on a shared machine)."""
    through_view = direct = 0.0
    for start in range(0, len(indices), chunk):
        part = range(start, min(start + chunk, len(indices)))
        for which in ("view", "plain") if start // chunk % 2 == 0 else ("plain", "view"):
            started = time.thread_time()
            if which == "view":
                for position in part:
                    view[indices[position]]
                through_view += time.thread_time() - started
            else:
                for position in part:
                    dataset, record = pairs[position]
                    dataset[record]
                direct += time.thread_time() - started
    return direct / through_view


def read_ratios(files: list[Path], decode: str, repeats: int, reads: int) -> dict[str, list[float]]:
    """Per repeat: plain over view seconds per read (>1: the view is faster), for the union and the subset."""
    plain = [LMDBDataset(file, decode=decode) for file in files]
    union = LMDBDataset(files, decode=decode)
    half = plain[0].classes[: len(plain[0].classes) // 2]
    subset = LMDBDataset(files[0], classes=half, decode=decode)
    rng = random.Random(3)
    ratios: dict[str, list[float]] = {"union of 4": [], "subset": []}
    for _ in range(repeats):
        for name, view in (("union of 4", union), ("subset", subset)):
            indices = [rng.randrange(len(view)) for _ in range(reads)]
            by_file = {str(file.resolve()): dataset for file, dataset in zip(files, plain, strict=True)}
            sources = [view.source_of(index) for index in indices]
            pairs = [(by_file[file], record) for file, record in sources]
            for position, index in enumerate(indices):  # warm: every record read once before timing
                view[index]
                pairs[position][0][pairs[position][1]]
            ratios[name].append(interleaved(view, pairs, indices))
    return ratios


def meta_file(path: Path, records: int, classes: int) -> Path:
    """A dataset of ``records`` one-byte records in ``classes`` classes, class-major as a tree gives."""
    if path.exists():
        return path
    labels = np.repeat(np.arange(classes), -(-records // classes))[:records]
    names = [f"n{label:08d}/img_{index:08d}.JPEG" for index, label in enumerate(labels.tolist())]
    document = {
        "format": "imagefolder-lmdb",
        "version": 1,
        "length": records,
        "classes": [f"n{c:08d}" for c in range(classes)],
    }
    meta = Meta(
        document=document,
        labels=labels,
        sizes=np.ones((records, 2)),
        crc32=np.full(records, 0xD202EF8D, dtype=np.uint32),  # zlib.crc32(b"\0")
        storage=np.full(records, 8),
        source_bytes=np.ones(records),
        paths=names,
    )
    writer = LMDBWriter(str(path), expected_bytes=records * 64 + (256 << 20))
    for start in range(0, records, 100_000):
        writer.put_many({record_key(i): b"\0" for i in range(start, min(records, start + 100_000))})
    writer.put_many(encode_meta(meta))
    add_locations(writer.env, str(path))
    writer.close()
    return path


def open_seconds(path: Path, classes: list[str] | None, repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        close_all_envs()
        started = time.perf_counter()
        LMDBDataset(path, classes=classes, decode="bytes")
        times.append(time.perf_counter() - started)
    return times


def opening(work: Path, repeats: int) -> list[tuple[str, float, float]]:
    """(case, plain open seconds, view open seconds), medians, interleaved."""
    one_k = meta_file(work / "meta1k.lmdb", 1_281_167, 1000)
    two_k = meta_file(work / "meta2k.lmdb", 1_281_167, 2000)
    cases = [
        ("ImageNet-1k shape, a view of 100 classes", one_k, [f"n{c:08d}" for c in range(0, 1000, 10)]),
        ("2,000 classes, a view of 1,000", two_k, [f"n{c:08d}" for c in range(0, 2000, 2)]),
        ("ImageNet-1k shape, a view of all 1,000 classes", one_k, [f"n{c:08d}" for c in range(1000)]),
    ]
    rows = []
    for name, path, classes in cases:
        plain, view = [], []
        for _ in range(repeats):
            plain += open_seconds(path, None, 1)
            view += open_seconds(path, classes, 1)
        rows.append((name, statistics.median(plain), statistics.median(view)))
    return rows


def table(reads: dict[str, dict[str, list[float]]], opens: list[tuple[str, float, float]]) -> str:
    lines = [
        "| `ds[i]`, warm | decode | view ÷ plain speed (median of repeats) | each repeat | floor |",
        "| --- | --- | ---: | --- | ---: |",
    ]
    for decode, ratios in reads.items():
        for name, values in ratios.items():
            each = ", ".join(f"{value:.3f}" for value in values)
            lines.append(f"| {name} | {decode} | {statistics.median(values):.3f}x | {each} | ≥ 0.97x |")
    lines += [
        "",
        "| opening (1,281,167 records) | the file | the view | more | floor |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name, plain, view in opens:
        lines.append(f"| {name} | {plain:.3f} s | {view:.3f} s | {view - plain:+.3f} s | ≤ +0.1 s |")
    return "\n".join(lines)


def write(path: Path, text: str) -> None:
    """Put ``text`` between the bench_views markers of ``path``."""
    document = path.read_text()
    marked = re.compile(r"(<!-- bench_views: begin -->\n).*?(\n<!-- bench_views: end -->)", re.S)
    path.write_text(marked.sub(lambda m: m.group(1) + "\n" + text + "\n" + m.group(2), document))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=Path("benchmarks/out/views"))
    parser.add_argument("--images", type=int, default=400, help="images per tree (4 trees)")
    parser.add_argument("--classes", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--reads", type=int, default=400)
    parser.add_argument("--write", type=Path, help="BENCHMARKS.md: put the table between its bench_views markers")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    files = converted_files(args.work, args.images, args.classes)
    reads = {decode: read_ratios(files, decode, args.repeats, args.reads) for decode in ("pil", "bytes")}
    text = table(reads, opening(args.work, args.repeats))
    print(text)
    if args.write:
        write(args.write, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
