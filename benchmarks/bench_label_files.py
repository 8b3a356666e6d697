"""Listing with a label file against the folder listing of the same images (issue 52's row: the
label file's parse and match within 1.2x of the listing).

A flat folder of N empty ``<id>.jpg`` files (listing reads names, never bytes) and a Kaggle-shaped
``train.csv`` (``id,label``, ids without extension, 1,000 class names, a float field). Each repeat
runs, in rotating order: the folder listing alone (os.scandir, as a folder source lists it), and the
same listing then ``read_label_file`` (the CSV read, typed, matched to the images by stem, targets).
The figure is the median of each, and their ratio.

    PYTHONPATH=src:. .venv/bin/python -m benchmarks.bench_label_files --images 100000 --repeats 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from imagefolder_lmdb.sources.label_files import read_label_file
from imagefolder_lmdb.sources.tree import is_image


def make_tree(root: Path, images: int) -> bytes:
    """``root/train/`` of ``images`` empty JPEG names, and the CSV that labels them."""
    folder = root / "train"
    folder.mkdir(parents=True)
    lines = ["id,label,score"]
    for index in range(images):
        (folder / f"img_{index:07d}.jpg").touch()
        lines.append(f"img_{index:07d},n{index % 1000:08d},{index / 7:.4f}")
    return ("\n".join(lines) + "\n").encode()


def folder_listing(folder: str) -> list[str]:
    """The images of a flat folder, by name."""
    with os.scandir(folder) as entries:
        return [entry.name for entry in entries if entry.is_file() and is_image(entry.name)]


def with_label_file(folder: str, csv: bytes) -> int:
    """The listing, then the label file read and matched to it."""
    table = read_label_file("train.csv", csv, folder_listing(folder))
    return len(table.images)


def timed(work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        csv = make_tree(Path(scratch), args.images)
        folder = str(Path(scratch) / "train")
        assert with_label_file(folder, csv) == args.images
        contenders: dict[str, Callable[[], object]] = {
            "folder listing": lambda: folder_listing(folder),
            "listing + label file": lambda: with_label_file(folder, csv),
        }
        seconds: dict[str, list[float]] = {name: [] for name in contenders}
        for repeat in range(args.repeats):
            names = list(contenders)
            for name in names[repeat % len(names) :] + names[: repeat % len(names)]:
                seconds[name].append(timed(contenders[name]))
    medians = {name: statistics.median(values) for name, values in seconds.items()}
    for name, median in medians.items():
        print(f"{name:>22}: {median:.3f} s (median of {args.repeats}, {args.images:,} images)")
    print(f"{'ratio':>22}: {medians['listing + label file'] / medians['folder listing']:.2f}x")


if __name__ == "__main__":
    main()
