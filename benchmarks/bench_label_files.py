"""Listing with a label file against the folder listing of the same images (issue 52's row: within
1.2x of it).

N empty image files (listing reads names, never bytes) twice: as an ImageFolder tree (1,000 class
folders) and flat beside a Kaggle-shaped ``train.csv`` (``id,label``, ids without extension, the same
1,000 class names, a float field). Each repeat runs, in rotating order, rule count_check's listing of
each, as the workflow runs it: the class folders by ImageFolder's rules (``ClassFolders``), and the
flat folder with its label file (``TableLabels``: the walk, the CSV read, typed, matched to the
images by stem, targets). A bare ``os.scandir`` of the flat folder is shown for scale. The figure is
the median of each, and the ratio of the two listings.

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

from imagefolder_lmdb.sources.base import Labels
from imagefolder_lmdb.sources.label_files import read_label_file
from imagefolder_lmdb.sources.label_files.settings import LabelsFrom
from imagefolder_lmdb.sources.labelling import ClassFolders, TableLabels
from imagefolder_lmdb.sources.listing_options import DEFAULT_LISTING, is_image


def make_tree(root: Path, images: int) -> bytes:
    """``root/train/`` of ``images`` empty JPEG names, the CSV that labels them, and
    ``root/classes/`` holding the same names in their class folders."""
    folder = root / "train"
    folder.mkdir(parents=True)
    lines = ["id,label,score"]
    for index in range(images):
        name, label = f"img_{index:07d}", f"n{index % 1000:08d}"
        (folder / f"{name}.jpg").touch()
        (root / "classes" / label).mkdir(parents=True, exist_ok=True)
        (root / "classes" / label / f"{name}.jpg").touch()
        lines.append(f"{name},{label},{index / 7:.4f}")
    return ("\n".join(lines) + "\n").encode()


def class_folder_listing(root: str) -> int:
    """Rule count_check's listing of an ImageFolder tree."""
    return len(ClassFolders().list_tree(root, Labels(), {}, None, DEFAULT_LISTING).samples)


def label_file_listing(folder: str, csv_path: str) -> int:
    """Rule count_check's listing of a flat folder labelled by a label file."""
    labels = Labels(table=LabelsFrom(csv_path))
    return len(TableLabels().list_tree(folder, labels, {}, None, DEFAULT_LISTING).samples)


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
        folder, classes = str(Path(scratch) / "train"), str(Path(scratch) / "classes")
        csv_path = str(Path(scratch) / "train.csv")
        Path(csv_path).write_bytes(csv)
        assert with_label_file(folder, csv) == args.images == label_file_listing(folder, csv_path)
        assert class_folder_listing(classes) == args.images
        contenders: dict[str, Callable[[], object]] = {
            "bare scandir (scale)": lambda: folder_listing(folder),
            "class folders": lambda: class_folder_listing(classes),
            "label file": lambda: label_file_listing(folder, csv_path),
        }
        seconds: dict[str, list[float]] = {name: [] for name in contenders}
        for repeat in range(args.repeats):
            names = list(contenders)
            for name in names[repeat % len(names) :] + names[: repeat % len(names)]:
                seconds[name].append(timed(contenders[name]))
    medians = {name: statistics.median(values) for name, values in seconds.items()}
    for name, median in medians.items():
        print(f"{name:>22}: {median:.3f} s (median of {args.repeats}, {args.images:,} images)")
    print(f"{'ratio':>22}: {medians['label file'] / medians['class folders']:.2f}x (label file / class folders)")


if __name__ == "__main__":
    main()
