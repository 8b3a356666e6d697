"""Section 21: a change at the cost of the change (issue 58). A tree of ~110 KB JPEGs is converted by the
command line (``imagefolder-lmdb convert SRC OUT``); then, each by the same command: nothing changed
(``T_noop``), n images added, 10,000 images relabelled (moved to another class folder: the same name,
their records kept), 1,000 removed, one image replaced under its name. Wall seconds of each, the bytes
each wrote into OUT (new files and the pointer), and the issue's targets worked out from ``T_noop`` and
the full conversion's per-image cost. Then reads over the split of 5 revisions against the file
``flatten`` makes of it (``ds[i]`` warm, batches of 256 with the page cache emptied), and section 13's
baseline: one image replaced, made again by ``--overwrite`` (every shard encoded, merged), and by
``--overwrite --keep-parts`` (the changed shard encoded, merged).

    PYTHONPATH=src .venv/bin/python -m benchmarks.bench_change --images 12000 --added 120
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.bench_common import OUT, fresh_dir, median, rotated
from benchmarks.bench_data import image_files, image_tree

COMMAND = [sys.executable, "-m", "imagefolder_lmdb.cli", "convert"]


def convert(source: Path, out: Path, *options: str, code: Path | None = None) -> float:
    """Wall seconds of the same command (it must succeed); ``code``: another checkout's ``src`` to run."""
    environment = {**os.environ, "PYTHONPATH": str(code)} if code is not None else None
    started = time.perf_counter()
    done = subprocess.run(
        [*COMMAND, str(source), str(out), "--cores", "2", *options],
        capture_output=True,
        text=True,
        check=False,
        env=environment,
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


def replace_one(source: Path) -> None:
    """Another image under one image's name (`mv new.jpg cls/old.jpg`), as section 13 replaces one."""
    images = sorted(image_files(source))
    victim, other = images[len(images) // 3], images[-1]
    replacement = source.parent / "new.jpg"
    replacement.write_bytes(other.read_bytes())
    os.replace(replacement, victim)


def empty_cache(paths: list[Path]) -> None:
    """The files' pages out of the page cache (no root needed)."""
    os.sync()
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def items_ratio(split: Path, flat: Path, indices: list[int], chunk: int = 20) -> float:
    """``ds[i]`` (decode="bytes") over ``indices`` of the split against the flat file, warm (a first pass
    reads them into the page cache), timed in alternating chunks of ``chunk`` reads in CPU seconds of this
    thread (time.thread_time: a shared machine's waits for a core left out, its drift falling on both
    alike): the flat file's seconds over the split's (1.0: the same speed)."""
    from imagefolder_lmdb.reader import LMDBReader, close_all_envs

    close_all_envs()
    datasets = {"split": LMDBReader(str(split), decode="bytes"), "flat": LMDBReader(str(flat), decode="bytes")}
    for index in indices:
        datasets["split"][index], datasets["flat"][index]
    seconds = dict.fromkeys(datasets, 0.0)
    for start in range(0, len(indices), chunk):
        part = indices[start : start + chunk]
        for name in rotated(list(datasets), start // chunk):
            ds = datasets[name]
            started = time.thread_time()
            for index in part:
                ds[index]
            seconds[name] += time.thread_time() - started
    return seconds["flat"] / seconds["split"]


def cold_batches_per_second(path: Path, files: list[Path], batches: list[list[int]]) -> float:
    """Batches (``__getitems__``, decode="bytes") read with the dataset's files out of the page cache
    (wall seconds: the disk's waits are what a cold batch is about)."""
    from imagefolder_lmdb.reader import LMDBReader, close_all_envs

    close_all_envs()
    empty_cache(files)
    ds = LMDBReader(str(path), decode="bytes")
    started = time.perf_counter()
    for batch in batches:
        ds.__getitems__(batch)
    return len(batches) / (time.perf_counter() - started)


def reads(out: Path, images: int, turns: int = 5) -> dict[str, Any]:
    """Reads over the split of revisions at ``out`` against the file ``flatten`` makes of it (made once):
    the median of ``turns`` alternating turns of each, as a ratio (split / flat), with the load average
    at the start and end."""
    pointer, flat = out / "train.lmdb", out.parent / "flat.lmdb"
    if not flat.exists():
        subprocess.run([sys.executable, "-m", "imagefolder_lmdb.cli", "flatten", str(pointer), str(flat)], check=True)
    split_files = [pointer, *sorted((out / "train.lmdb.d").glob("*.lmdb"))]
    picker = random.Random(0)
    indices = picker.sample(range(images), min(images, 20000))
    batches = [picker.sample(range(images), 256) for _ in range(8)]
    item_ratios, batch_ratios, loads = [], [], [os.getloadavg()[0]]
    for turn in range(turns):
        item_ratios.append(items_ratio(pointer, flat, indices))
        rates = {}
        for name in rotated(["split", "flat"], turn):
            rates[name] = cold_batches_per_second(
                *((pointer, split_files) if name == "split" else (flat, [flat])), batches
            )
        batch_ratios.append(rates["split"] / rates["flat"])
    loads.append(os.getloadavg()[0])
    revisions = len(json.loads(subprocess.run(
        [sys.executable, "-m", "imagefolder_lmdb.cli", "info", str(pointer), "--json"],
        capture_output=True, text=True, check=True,
    ).stdout)["revisions"])  # fmt: skip
    return {
        "revisions": revisions,
        "data_files": len(split_files) - 1,
        "items_ratio": median(item_ratios),
        "cold_batches_ratio": median(batch_ratios),
        "items_ratios": item_ratios,
        "cold_batches_ratios": batch_ratios,
        "load": loads,
    }


def baseline(work: Path, code: Path) -> dict[str, float]:
    """Section 13's figure, by the commit before a change was a revision (``code``: its ``src``): one
    image replaced, the same command again, by default (every shard encoded again, merged) over a copy
    of the first conversion, and with ``--keep-parts`` (the changed shard, merged) over one of its own.
    Their sources were linked before the first conversion: a hard link made later changes the ctime
    of the images the changes are measured on, and a change reads a file touched since its revision."""
    source = work / "source"
    source.rename(work / "changed-source")  # the first conversion's source back at its path (it records it)
    (work / "base-source").rename(source)
    replace_one(source)
    default = convert(source, work / "base-out", code=code)
    kept_source, kept_out = work / "kept-source", work / "kept-out"
    full = convert(kept_source, kept_out, "--keep-parts", code=code)
    replace_one(kept_source)
    kept = convert(kept_source, kept_out, "--keep-parts", code=code)
    return {"default": default, "keep-parts conversion": full, "--keep-parts": kept}


def measure(images: int, added: int, classes: int, base_code: Path | None) -> dict[str, Any]:
    tree = image_tree(images, classes)
    work = fresh_dir(OUT / "change")
    source, out = work / "source", work / "out"
    shutil.copytree(tree, source, copy_function=os.link)  # hard links: a private tree, no copy of the bytes
    if base_code is not None:
        for name in ("base-source", "kept-source"):
            shutil.copytree(tree, work / name, copy_function=os.link)
    full = convert(source, out)
    if base_code is not None:  # the first conversion, as the commit before would rerun it (hard links)
        shutil.copytree(out, work / "base-out", copy_function=os.link)
    noop = convert(source, out)
    added_bytes = sum(path.stat().st_size for path in sorted(image_files(source))[:added])
    runs = {
        "added": timed_change(source, out, lambda: add_images(source, added)),
        "relabelled": timed_change(source, out, lambda: relabel(source, min(10000, images))),
        "removed": timed_change(source, out, lambda: remove(source, min(1000, images // 10))),
        "one replaced": timed_change(source, out, lambda: replace_one(source)),
    }
    runs["nothing changed, a split of revisions"] = {"wall": convert(source, out), "bytes": 0, "report_bytes": 0}
    read = reads(out, len(image_files(source)))
    baselines = baseline(work, base_code) if base_code is not None else {}
    per_image = full / images
    return {
        "images": images,
        "full": full,
        "noop": noop,
        "per_image": per_image,
        "n_added": added,
        "added_source_bytes": added_bytes,
        "runs": runs,
        "reads": read,
        "baselines": baselines,
        "targets": {
            "added": noop + 1.3 * added * per_image + 1,
            "relabelled": noop + 1,
            "removed": noop + 1,
            "one replaced": noop + 1.3 * per_image + 1,
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
    for name in ("default", "--keep-parts"):
        if name in result["baselines"]:
            wall = result["baselines"][name]
            lines.append(f"| section 13: one replaced, the commit before, {name} | {wall:.2f} | | | | |")
    read = result["reads"]
    lines.append(
        f"\nReads over the split of {read['revisions']} revisions ({read['data_files']} data files) against "
        f"the flattened file: ds[i] {read['items_ratio']:.3f}x, cold batches {read['cold_batches_ratio']:.3f}x "
        f"(load {read['load'][0]:.1f} to {read['load'][1]:.1f})."
    )
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
    parser.add_argument(
        "--baseline-src", type=Path, help="src/ of a checkout of the commit before a change was a revision (42ef07b)"
    )
    parser.add_argument("--reads-only", action="store_true", help="the reads over an earlier run's split (OUT/change)")
    parser.add_argument("--turns", type=int, default=5, help="alternating turns of the reads (their median is taken)")
    args = parser.parse_args()
    if args.reads_only:  # the split of revisions an earlier run left, and its flattened file
        from imagefolder_lmdb.reader import LMDBReader

        out = OUT / "change" / "out"
        read = reads(out, len(LMDBReader(str(out / "train.lmdb"))), args.turns)
        print(json.dumps(read, indent=1))
        return
    result = measure(args.images, args.added, args.classes, args.baseline_src)
    (OUT / "change.json").write_text(json.dumps(result, indent=1))
    print(markdown(result))


if __name__ == "__main__":
    main()
