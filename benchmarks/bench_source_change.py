"""Section 13: what a changed image costs (issue 31). A tree is converted with 16 shards; then one
image is replaced under its name (``mv``), the same command runs again, and then once more with
nothing changed. Wall and CPU seconds of each, per repeat, the rerun as a share of the conversion
it would have been before per-shard stamps (the whole split: the first run's figure).

    PYTHONPATH=src .venv/bin/python -m benchmarks.bench_source_change --images 12000 --repeats 2 [--tree DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from pathlib import Path

from benchmarks.bench_common import OUT, children_cpu_seconds, fresh_dir, median, run_snakemake
from benchmarks.bench_data import image_files, image_tree

SHARDS = 16


def timed_run(workdir: Path, config: Path) -> dict[str, float]:
    cpu = children_cpu_seconds()
    wall = run_snakemake(workdir, config)
    return {"wall": wall, "cpu": children_cpu_seconds() - cpu}


def encoded_shards(workdir: Path, since: float) -> int:
    """Encode jobs that ran after ``since`` (their benchmark records are rewritten)."""
    records = (workdir / "work" / "benchmarks" / "encode_shard" / "train").glob("*.tsv")
    return sum(path.stat().st_mtime > since for path in records)


def one_repeat(tree: Path, workdir: Path) -> dict[str, dict[str, float]]:
    source = workdir / "source"
    shutil.copytree(tree, source, copy_function=os.link)  # hard links: a private tree, no copy of the bytes
    config = workdir / "config.yaml"
    config.write_text(
        json.dumps(
            {"results": "results", "work": "work", "splits": {"train": {"source": str(source), "shards": SHARDS}}}
        )
    )
    runs = {"conversion": timed_run(workdir, config)}
    images = sorted(image_files(source))
    victim, other = images[len(images) // 3], images[-1]
    replacement = workdir / "new.jpg"
    replacement.write_bytes(other.read_bytes())  # another image under the victim's name
    since = time.time()
    os.replace(replacement, victim)  # `mv new.jpg cls/old.jpg`
    runs["one image replaced"] = {**timed_run(workdir, config), "shards": encoded_shards(workdir, since)}
    runs["nothing changed"] = timed_run(workdir, config)
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=12000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--tree", type=Path, help="an image tree to use (default: one generated of --images images)")
    args = parser.parse_args()
    tree = args.tree or image_tree(args.images, classes=100)
    repeats = [one_repeat(tree, fresh_dir(OUT / "source_change" / str(n))) for n in range(args.repeats)]
    summary = {}
    for name in repeats[0]:
        summary[name] = {key: median([r[name][key] for r in repeats]) for key in repeats[0][name]}
    for name in ("one image replaced", "nothing changed"):
        summary[name]["share of the conversion (wall)"] = summary[name]["wall"] / summary["conversion"]["wall"]
        summary[name]["share of the conversion (CPU)"] = summary[name]["cpu"] / summary["conversion"]["cpu"]
    print(
        json.dumps(
            {"images": len(image_files(tree)), "shards": SHARDS, "repeats": repeats, "median": summary}, indent=1
        )
    )


if __name__ == "__main__":
    main()
