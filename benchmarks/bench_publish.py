"""What publishing adds (issue 44): ``imagefolder-lmdb convert SRC OUT`` against ``convert SRC
s3://bench/<prefix>`` (the same conversion in a fresh work folder, then the multipart upload and the
read-back check), alternating, each from an empty folder, against SeaweedFS on 127.0.0.1
(tests/support/seaweed.py).

    PYTHONPATH=src:. .venv/bin/python -m benchmarks.bench_publish --images 12000 --repeats 2

Raw figures: benchmarks/out/publish.json; the table is printed as Markdown for BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from benchmarks.bench_common import OUT, fresh_dir
from benchmarks.make_images import make_images
from tests.support.seaweed import Seaweed

DATA = OUT / "publish"
CLI = str(Path(sys.executable).with_name("imagefolder-lmdb"))


def tree(images: int) -> Path:
    folder = DATA / f"images{images}"
    if not (DATA / f"images{images}.complete").exists():
        fresh_dir(folder)
        make_images(str(folder), images, 100, workers=2)
        (DATA / f"images{images}.complete").touch()
    return folder


def timed(command: list[str], env: dict[str, str]) -> tuple[float, str]:
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{command} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return time.monotonic() - started, done.stdout


def measure(images: int, repeats: int) -> dict[str, Any]:
    source = tree(images)
    seaweed = Seaweed(fresh_dir(DATA / "weed")).start()
    try:
        seaweed.put("bench", "probe", b"")
        env = {**os.environ, **seaweed.env()}
        local, published, lines = [], [], []
        for _ in range(repeats):
            out = fresh_dir(DATA / "local")
            local.append(timed([CLI, "convert", str(source), str(out), "--split", "train", "--cores", "2"], env)[0])
            work = fresh_dir(DATA / "work")
            url = f"s3://bench/{uuid.uuid4().hex}"
            command = [CLI, "convert", str(source), url, "--split", "train", "--cores", "2", "--work", str(work)]
            seconds, stdout = timed(command, env)
            published.append(seconds)
            lines.append(stdout.strip().splitlines()[-1])
    finally:
        seaweed.stop()
    ratio = statistics.median(p / q for p, q in zip(published, local, strict=True))
    return {"images": images, "local_s": local, "publish_s": published, "ratio": ratio, "summaries": lines}


def table(result: dict[str, Any]) -> str:
    return "\n".join(
        [
            "| images | convert SRC OUT | convert SRC s3://… | publish / local | upload summary (last run) |",
            "| --- | --- | --- | --- | --- |",
            f"| {result['images']:,} | {statistics.median(result['local_s']):.1f} s | "
            f"{statistics.median(result['publish_s']):.1f} s | {result['ratio']:.2f}x | {result['summaries'][-1]} |",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=12000)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    result = measure(args.images, args.repeats)
    (OUT / "publish.json").write_text(json.dumps(result, indent=1))
    print(table(result))


if __name__ == "__main__":
    main()
