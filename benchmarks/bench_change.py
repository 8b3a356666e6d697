"""Section 20: a change at the cost of the change (issue 58). A tree of ~110 KB JPEGs is converted by the
command line (``imagefolder-lmdb convert SRC OUT``); then, each by the same command: nothing changed
(``T_noop``), n images added, 10,000 images relabelled (moved to another class folder: the same name,
their records kept), 1,000 removed. Wall seconds of each, the bytes each wrote into OUT (new files and
the pointer), and the issue's targets worked out from ``T_noop`` and the full conversion's per-image cost.

    PYTHONPATH=src .venv/bin/python -m benchmarks.bench_change --images 12000 --added 120
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.bench_common import OUT, fresh_dir
from benchmarks.bench_data import image_files, image_tree

COMMAND = [sys.executable, "-m", "imagefolder_lmdb.cli", "convert"]


def convert(source: Path, out: Path) -> float:
    """Wall seconds of the same command (it must succeed)."""
    started = time.perf_counter()
    done = subprocess.run(
        [*COMMAND, str(source), str(out), "--cores", "2"], capture_output=True, text=True, check=False
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    return seconds


def files_of(out: Path) -> dict[str, tuple[int, int, int]]:
    """Each file under OUT but the work folder: (inode, mtime_ns) and its size."""
    return {
        str(path): (path.stat().st_ino, path.stat().st_mtime_ns, path.stat().st_size)
        for path in out.rglob("*")
        if path.is_file() and "work" not in path.relative_to(out).parts
    }


def written_bytes(before: dict[str, Any], after: dict[str, Any], dataset: bool) -> int:
    """The bytes of files new or rewritten under OUT (a hard link to a file there before is neither):
    the dataset's (pointer and data files) or the reports' (``dataset`` False)."""
    inodes = {entry[0] for entry in before.values()}
    total = 0
    for path, entry in after.items():
        if (".lmdb" in path) != dataset:
            continue
        rewritten = path in before and before[path][:2] != entry[:2]
        if rewritten or (path not in before and entry[0] not in inodes):
            total += entry[2]
    return total


def earlier_data_untouched(before: dict[str, Any], after: dict[str, Any]) -> bool:
    """Whether every data file there before keeps its inode, time and size."""
    return all(after.get(path) == entry for path, entry in before.items() if ".lmdb.d" in path)


def timed_change(source: Path, out: Path, change: Any) -> dict[str, Any]:
    before = files_of(out)
    change()
    seconds = convert(source, out)
    after = files_of(out)
    return {
        "wall": seconds,
        "bytes": written_bytes(before, after, True),
        "report_bytes": written_bytes(before, after, False),
        "earlier_untouched": earlier_data_untouched(before, after),
    }


def add_images(source: Path, count: int) -> None:
    images = sorted(image_files(source))
    for number, image in enumerate(images[:count]):
        shutil.copyfile(image, image.parent / f"added-{number:05d}{image.suffix}")


def relabel(source: Path, count: int) -> None:
    """``count`` images moved to the next class folder, their names kept; each folder keeps its first."""
    folders = sorted(path for path in source.iterdir() if path.is_dir())
    movable = [image for folder in folders for image in sorted(folder.iterdir())[1:]]
    for image in movable[:count]:
        folder = folders[(folders.index(image.parent) + 1) % len(folders)]
        os.replace(image, folder / image.name)


def remove(source: Path, count: int) -> None:
    images = sorted(image_files(source))
    step = max(1, len(images) // count)
    for image in images[1::step][:count]:
        image.unlink()


def measure(images: int, added: int, classes: int) -> dict[str, Any]:
    tree = image_tree(images, classes)
    work = fresh_dir(OUT / "change")
    source, out = work / "source", work / "out"
    shutil.copytree(tree, source, copy_function=os.link)  # hard links: a private tree, no copy of the bytes
    full = convert(source, out)
    noop = convert(source, out)
    added_bytes = sum(path.stat().st_size for path in sorted(image_files(source))[:added])
    runs = {
        "added": timed_change(source, out, lambda: add_images(source, added)),
        "relabelled": timed_change(source, out, lambda: relabel(source, min(10000, images))),
        "removed": timed_change(source, out, lambda: remove(source, min(1000, images // 10))),
    }
    runs["nothing changed, a split of revisions"] = {"wall": convert(source, out), "bytes": 0, "report_bytes": 0}
    per_image = full / images
    return {
        "images": images,
        "full": full,
        "noop": noop,
        "per_image": per_image,
        "n_added": added,
        "added_source_bytes": added_bytes,
        "runs": runs,
        "targets": {
            "added": noop + 1.3 * added * per_image + 1,
            "relabelled": noop + 1,
            "removed": noop + 1,
            "added_bytes": 1.05 * added_bytes + 2200 * added + 1e6,
        },
    }


def markdown(result: dict[str, Any]) -> str:
    """The section's table."""
    targets, runs = result["targets"], result["runs"]
    lines = [
        f"{result['images']:,} images (~110 KB JPEGs): full conversion {result['full']:.1f} s "
        f"({result['per_image'] * 1000:.2f} ms per image), `T_noop` {result['noop']:.2f} s (a single file).",
        "",
        "| change | wall (s) | target (s) | dataset bytes written | report bytes written | earlier files kept |",
        "|---|---|---|---|---|---|",
    ]
    for name, run in runs.items():
        target = targets.get(name)
        shown = f"{target:.2f}" if target is not None else "-"
        written, reports = f"{run['bytes'] / 1e6:.3f} MB", f"{run.get('report_bytes', 0) / 1e6:.2f} MB"
        untouched = run.get("earlier_untouched", "-")
        lines.append(f"| {name} | {run['wall']:.2f} | {shown} | {written} | {reports} | {untouched} |")
    lines.append(
        f"\n{result['n_added']} added: {result['added_source_bytes'] / 1e6:.1f} MB of images; byte target "
        f"{targets['added_bytes'] / 1e6:.2f} MB."
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=12000)
    parser.add_argument("--added", type=int, default=120)
    parser.add_argument("--classes", type=int, default=100)
    args = parser.parse_args()
    result = measure(args.images, args.added, args.classes)
    (OUT / "change.json").write_text(json.dumps(result, indent=1))
    print(markdown(result))


if __name__ == "__main__":
    main()
