"""Section 15 (issue 44): publishing to object storage, end to end, against LitData.

Side by side, alternating (the order rotates every repeat), each from an empty folder, against one
SeaweedFS on 127.0.0.1 (tests/support/seaweed.py), on section 11's ImageNet-like tree
(benchmarks/bench_data: 12,000 images in 100 classes), ``--cores 2``:

- ``local``: ``imagefolder-lmdb convert SRC OUT`` (the local conversion: the baseline of the upload's cost);
- ``publish``: ``imagefolder-lmdb convert SRC s3://bench/<key>`` (the same conversion in a fresh
  ``--work`` folder, then the multipart upload and the read-back check);
- ``publish_header``: the same with ``--set encode.check=header``;
- ``litdata``: LitData's ``optimize(output_dir="s3://bench/<key>")`` (benchmarks/litdata_optimize.py in
  its own venv, ``--litdata-python``: litdata 0.2.76, torch 2.14.1): each file's bytes and label, 2
  workers, 64 MB chunks, its chunks uploaded by obstore as they are written; it checks, verifies and
  reads back nothing.

After each repeat, on the file the local run made: the upload alone (``python -m
imagefolder_lmdb.publish.upload FILE URL``: the same upload and check as ``publish``) and obstore's plain
``put`` of the file with the same part size and concurrency (no check: what the server allows).

    PYTHONPATH=src:. .venv/bin/python -m benchmarks.bench_publish --images 12000 --repeats 2
    PYTHONPATH=src:. .venv/bin/python -m benchmarks.bench_publish --weed-dir /dev/shm/weed   # server's volumes in RAM

Raw figures: benchmarks/out/publish.json; the tables are printed as Markdown for BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import psutil

from benchmarks.bench_common import OUT, REPO, children_cpu_seconds, fresh_dir, rotated, snakemake_env
from benchmarks.bench_data import image_tree
from tests.support.seaweed import Seaweed

DATA = OUT / "publish"
CONTENDERS = ("local", "publish", "publish_header", "litdata")
BOUNDS = ("upload_only", "obstore_put")
NAMES = {
    "local": "`convert SRC OUT` (local)",
    "publish": "`convert SRC s3://…`",
    "publish_header": "`convert SRC s3://…`, `check: header`",
    "litdata": 'LitData `optimize(output_dir="s3://…")`',
    "upload_only": "upload + check alone (`publish.upload FILE URL`)",
    "obstore_put": "obstore `put` of the same file (bound)",
}
CLI = [sys.executable, "-m", "imagefolder_lmdb.cli", "convert"]
#: obstore's put of FILE to s3://bench/KEY, with the uploader's part size and concurrency.
PUT = """
import sys, time
from pathlib import Path
import obstore
from imagefolder_lmdb.remote.engine import store_for
from imagefolder_lmdb.publish.upload import CONCURRENCY, part_size
from imagefolder_lmdb.remote.urls import RemoteSettings
path, url = sys.argv[1], sys.argv[2]
store = store_for("s3://bench", RemoteSettings(), url)
started = time.monotonic()
obstore.put(store, url.split("/", 3)[3], Path(path), chunk_size=part_size(Path(path).stat().st_size),
            max_concurrency=CONCURRENCY)
print(time.monotonic() - started)
"""


def run(command: list[str], env: dict[str, str], server: psutil.Process, cwd: Path = REPO) -> dict[str, Any]:
    """One process, timed (after ``sync``): its wall seconds, its CPU seconds (and its children's),
    the object store's CPU seconds meanwhile, the load average before it, and its output."""
    os.sync()  # the previous run's writes on disk first, so that their writeback is not this run's
    load = os.getloadavg()[0]
    store_before, cpu = store_cpu(server), children_cpu_seconds()
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env, cwd=cwd)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{command} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return {
        "seconds": seconds,
        "cpu": children_cpu_seconds() - cpu,
        "store_cpu": store_cpu(server) - store_before,
        "load": load,
        "stdout": done.stdout[-3000:],
    }


def store_cpu(server: psutil.Process) -> float:
    """CPU seconds so far of ``weed server`` and its children."""
    try:
        return sum(sum(p.cpu_times()[:2]) for p in [server, *server.children(recursive=True)])
    except psutil.Error:
        return float("nan")


def upload_seconds(stdout: str) -> float | None:
    """The upload's own seconds, from the uploader's summary line (``uploaded in 12.3 s``)."""
    found = re.findall(r"uploaded in ([0-9.]+) s", stdout)
    return float(found[-1]) if found else None


def contender(
    name: str, source: Path, env: dict[str, str], lit_env: dict[str, str], python: str, server: psutil.Process
) -> dict[str, Any]:
    key = f"{name}-{uuid.uuid4().hex[:12]}"
    if name == "local":
        out = fresh_dir(DATA / "local")
        result = run([*CLI, str(source), str(out), "--split", "train", "--cores", "2"], env, server, out)
        result["file"] = str(out / "train.lmdb")
    elif name in ("publish", "publish_header"):
        work = fresh_dir(DATA / "work")
        command = [*CLI, str(source), f"s3://bench/{key}", "--split", "train", "--cores", "2", "--work", str(work)]
        if name == "publish_header":
            command += ["--set", "encode.check=header"]
        result = run(command, env, server, work)
        result["upload_s"] = upload_seconds(result["stdout"])
    else:
        cache = fresh_dir(DATA / "litdata-cache")  # LitData's chunk cache (default: $TMPDIR/chunks), emptied
        lit = {**lit_env, "DATA_OPTIMIZER_CACHE_FOLDER": str(cache / "chunks")}
        lit["DATA_OPTIMIZER_DATA_CACHE_FOLDER"] = str(cache / "data")
        command = [python, str(REPO / "benchmarks" / "litdata_optimize.py"), str(source), f"s3://bench/{key}"]
        result = run(command, lit, server, cache)
    return result


def bound(name: str, file: str, env: dict[str, str], server: psutil.Process) -> dict[str, Any]:
    url = f"s3://bench/{name}-{uuid.uuid4().hex[:12]}/train.lmdb"
    if name == "upload_only":
        result = run([sys.executable, "-m", "imagefolder_lmdb.publish.upload", file, url], env, server)
        result["upload_s"] = upload_seconds(result["stdout"])
    else:
        result = run([sys.executable, "-c", PUT, file, url], env, server)
        result["upload_s"] = float(result["stdout"].split()[-1])
    return result


def measure(images: int, repeats: int, python: str, weed_dir: str | None = None) -> dict[str, Any]:
    """Every contender ``repeats`` times in rotating order, each repeat followed by the two bounds."""
    source = image_tree(images, 100)
    DATA.mkdir(parents=True, exist_ok=True)
    seaweed = Seaweed(fresh_dir(Path(weed_dir) if weed_dir else DATA / "weed")).start()
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in (*CONTENDERS, *BOUNDS)}
    started = time.strftime("%Y-%m-%d %H:%M")
    try:
        seaweed.put("bench", "probe", b"")
        server = psutil.Process(seaweed.process.pid)  # type: ignore[union-attr]  # started above
        env = {**snakemake_env(), **seaweed.env()}
        env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), str(REPO)])
        lit_env = {k: v for k, v in env.items() if k != "PYTHONPATH"}
        for turn in range(repeats):
            for name in rotated(CONTENDERS, turn):
                runs[name].append(contender(name, source, env, lit_env, python, server))
                print(f"{name} {runs[name][-1]['seconds']:.1f} s (load {runs[name][-1]['load']:.1f})", flush=True)
            for name in BOUNDS:
                runs[name].append(bound(name, runs["local"][-1]["file"], env, server))
                print(f"{name} {runs[name][-1]['upload_s']:.1f} s", flush=True)
    finally:
        seaweed.stop()
        shutil.rmtree(seaweed.data_dir, ignore_errors=True)  # every object uploaded: GBs (of RAM on /dev/shm)
    file_bytes = Path(runs["local"][-1]["file"]).stat().st_size
    return {
        "images": images,
        "repeats": repeats,
        "started": started,
        "ended": time.strftime("%Y-%m-%d %H:%M"),
        "weed_dir": weed_dir or "benchmarks/out/publish/weed (disk)",
        "file_bytes": file_bytes,
        "runs": runs,
        "figures": figures(runs, file_bytes),
    }


def per_repeat_ratio(runs: dict[str, list[dict[str, Any]]], top: str, bottom: str) -> float:
    pairs = zip(runs[top], runs[bottom], strict=True)
    return statistics.median(a["seconds"] / b["seconds"] for a, b in pairs)


def figures(runs: dict[str, list[dict[str, Any]]], file_bytes: int) -> dict[str, Any]:
    median = {name: statistics.median(r["seconds"] for r in runs[name]) for name in runs}
    uploads = {
        name: statistics.median(r["upload_s"] for r in runs[name])
        for name in ("publish", "publish_header", *BOUNDS)
        if all(r.get("upload_s") is not None for r in runs[name])
    }
    return {
        "median_s": median,
        "upload_s": uploads,
        "upload_mb_s": {name: file_bytes / s / 1e6 for name, s in uploads.items()},
        "cpu": {name: statistics.median(r["cpu"] for r in runs[name]) for name in runs},
        "store_cpu": {name: statistics.median(r["store_cpu"] for r in runs[name]) for name in runs},
        "load": {name: [round(r["load"], 1) for r in runs[name]] for name in runs},
        "ratio": {
            "publish / local": per_repeat_ratio(runs, "publish", "local"),
            "publish / litdata": per_repeat_ratio(runs, "publish", "litdata"),
            "publish_header / litdata": per_repeat_ratio(runs, "publish_header", "litdata"),
            "local / litdata": per_repeat_ratio(runs, "local", "litdata"),
        },
    }


def table(data: dict[str, Any]) -> str:
    f = data["figures"]
    lines = [
        "| contender | seconds (each run) | median | upload (median) | CPU s: contender / SeaweedFS | load before |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name in (*CONTENDERS, *BOUNDS):
        each = " / ".join(f"{r['seconds']:.1f}" for r in data["runs"][name])
        upload = f"{f['upload_s'][name]:.1f} s ({f['upload_mb_s'][name]:.0f} MB/s)" if name in f["upload_s"] else "-"
        load = " / ".join(f"{x:.1f}" for x in f["load"][name])
        lines.append(
            f"| {NAMES[name]} | {each} | {f['median_s'][name]:.1f} s | {upload} | "
            f"{f['cpu'][name]:.0f} / {f['store_cpu'][name]:.0f} | {load} |"
        )
    lines += ["", "| ratio (median of each repeat's) | |", "| --- | ---: |"]
    lines += [f"| {name} | **{value:.2f}x** |" for name, value in f["ratio"].items()]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=12000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--litdata-python", default=os.environ.get("LITDATA_PYTHON", "/work/litdata-venv/bin/python"))
    parser.add_argument("--weed-dir", help="SeaweedFS's data folder (default: under benchmarks/out; /dev/shm/...: RAM)")
    args = parser.parse_args()
    data = measure(args.images, args.repeats, args.litdata_python, args.weed_dir)
    name = "publish.json" if not args.weed_dir else "publish-weeddir.json"
    (OUT / name).write_text(json.dumps(data, indent=1))
    print(table(data))


if __name__ == "__main__":
    main()
