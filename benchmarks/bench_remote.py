"""Training straight from object storage (issue 33): this reader on ``s3://`` side by side with the
same file on local disk (cold) and LitData's ``StreamingDataset`` over ``optimize()`` output of the
same images in the same bucket, all through one proxy that adds 20 ms to every request.

    PYTHONPATH=src:. .venv/bin/python -m benchmarks.bench_remote --images 12000
    PYTHONPATH=src:. .venv/bin/python -m benchmarks.bench_remote --images 12000 --decodes train \
        --only s3_cache litdata --repeats 2      # section 12's epoch-2 comparison (issue 44)

SeaweedFS (tests/support/seaweed.py) serves S3 on 127.0.0.1; tests/support/fault_proxy.py adds the
delay and counts requests and bytes. Each contender is its own process (benchmarks/remote_loop.py:
DataLoader, 2 workers, batch 64, shuffled, 2 epochs); LitData runs in its own venv
(``--litdata-python``, default /work/litdata-venv/bin/python: litdata 0.2.76, torch 2.14.1) with its
defaults and its cache on the same disk. Raw figures: benchmarks/out/remote.json; the table is
printed as Markdown for BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import psutil

from benchmarks.bench_common import OUT, REPO, fresh_dir, rotated
from benchmarks.bench_data import image_tree
from tests.support.fault_proxy import FaultProxy
from tests.support.seaweed import Seaweed

DATA = OUT / "remote"
LOOP = REPO / "benchmarks" / "remote_loop.py"
DELAY_S = 0.020


def prepared(images: int, litdata_python: str) -> tuple[Path, Path, Path]:
    """The tree (benchmarks/bench_data's, shared with sections 11 and 15), its converted LMDB and
    LitData's optimize() output, each made once."""
    tree = image_tree(images, 100)
    lmdb, lit = DATA / f"lmdb{images}", DATA / f"litdata{images}"
    if not (lmdb / "train.lmdb").exists():
        fresh_dir(lmdb)
        command = [sys.executable, "-m", "imagefolder_lmdb.cli", "convert", str(tree), str(lmdb), "--cores", "2"]
        subprocess.run([*command, "--split", "train"], check=True, capture_output=True)
    if not (lit / "index.json").exists():
        fresh_dir(lit)
        subprocess.run(
            [litdata_python, str(REPO / "benchmarks" / "litdata_optimize.py"), str(tree), str(lit)], check=True
        )
    return tree, lmdb / "train.lmdb", lit


def upload(seaweed: Seaweed, lmdb: Path, lit: Path) -> None:
    seaweed.put("bench", "train.lmdb", lmdb.read_bytes())
    for file in sorted(lit.iterdir()):
        seaweed.put("bench", f"litdata/{file.name}", file.read_bytes())


def drop_cache(path: Path) -> None:
    """The file's pages out of the page cache (no root needed)."""
    os.sync()
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.exists() else 0


def cpu_seconds(server: psutil.Process) -> dict[str, float]:
    """CPU seconds so far of the three parts sharing the machine's cores: the contender's processes
    (this process's children, once waited for), the proxy (this process: its asyncio thread) and
    the object store (``weed server`` and its children)."""
    children, own = resource.getrusage(resource.RUSAGE_CHILDREN), resource.getrusage(resource.RUSAGE_SELF)
    store = [server, *server.children(recursive=True)]
    return {
        "loader": children.ru_utime + children.ru_stime,
        "proxy": own.ru_utime + own.ru_stime,
        "store": sum(sum(p.cpu_times()[:2]) for p in store),
    }


def run(
    contender: dict[str, Any], env: dict[str, str], proxy: FaultProxy, python: str, server: psutil.Process
) -> dict[str, Any]:
    """One contender's process; its figures, the CPU seconds of each part, and the proxy's counts for
    its first epoch."""
    with tempfile.TemporaryDirectory(dir=DATA) as scratch:
        out, cache = Path(scratch) / "result.json", Path(scratch) / "cache"
        command = [python, str(LOOP), contender["kind"], contender["source"], "--decode", contender["decode"]]
        command += ["--shuffle", contender.get("shuffle", "full"), "--out", str(out)]
        if contender["kind"] == "litdata" or contender.get("cache"):
            command += ["--cache", str(cache)]  # LitData's cache, or this reader's cache_dir
        if contender.get("cold"):
            drop_cache(Path(contender["source"]))
        proxy.reset_counts()
        before = cpu_seconds(server)
        subprocess.run(command, check=True, env=env, cwd=REPO)
        after = cpu_seconds(server)
        result = json.loads(out.read_text())
        result["cpu_s"] = {part: after[part] - before[part] for part in after}
        first_end = result["epochs"][0]["end"]
        epoch1 = [size for at, size in proxy.log if at <= first_end]
        images = result["epochs"][0]["images"]
        result.update(
            {
                "img_s": [e["images"] / e["seconds"] for e in result["epochs"]],
                "requests_per_image": len(epoch1) / images,
                "bytes_per_image": sum(epoch1) / images,
                "local_disk_bytes": folder_bytes(cache),
            }
        )
    return {**contender, **result}


def contenders(url: str, local: Path, decode: str) -> list[dict[str, Any]]:
    """Side by side: this reader from S3 (without and with ``cache_dir``), LitData from S3; with the train
    transform also the same file on local disk, cold and warm (the decoding floor), and both the S3 and
    the cold local read with the block-window shuffle (neighbours in one request, as LitData's chunks);
    with bytes also the block-window shuffle."""
    s3 = {"key": "s3", "name": "this reader, s3://", "kind": "lmdb", "source": url}
    s3_cached = {**s3, "key": "s3_cache", "name": "this reader, s3://, cache_dir (docs/training.md)", "cache": True}
    s3_block = {**s3, "key": "s3_block", "name": "this reader, s3://, block-window 16x4", "shuffle": "block"}
    lit = {"key": "litdata", "name": "LitData StreamingDataset, s3://", "kind": "litdata"}
    lit["source"] = "s3://bench/litdata"
    if decode == "train":
        cold = {
            "key": "cold",
            "name": "same file, local disk, cold",
            "kind": "lmdb",
            "source": str(local),
            "cold": True,
        }
        cold_block = {**cold, "key": "cold_block", "name": "same file, local disk, cold, block-window 16x4"}
        cold_block["shuffle"] = "block"
        warm = {"key": "warm", "name": "same file, local disk, warm (decoding floor)", "kind": "lmdb"}
        warm["source"] = str(local)
        runs = [s3, s3_cached, cold, lit, warm, s3_block, cold_block]
    else:
        runs = [s3, s3_block, lit]
    return [{**run, "decode": decode} for run in runs]


def open_requests(url: str, env: dict[str, str], proxy: FaultProxy) -> dict[str, Any]:
    """The requests and seconds that opening the remote dataset takes (in a process of its own)."""
    proxy.reset_counts()
    code = (
        "import time; from imagefolder_lmdb import LMDBReader; t = time.perf_counter(); "
        f"LMDBReader({url!r}); print(time.perf_counter() - t)"
    )
    answer = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True)
    return {"requests": proxy.requests, "seconds": float(answer.stdout)}


HEADER = (
    "| decode | contender | epoch 1 img/s | epoch 2 img/s | first batch | requests / image "
    "| bytes / image (epoch 1) | local disk | CPU s: loader / proxy / store |"
    "\n| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
)


def row(r: dict[str, Any], record_bytes: float) -> str:
    ratio = f" ({r['bytes_per_image'] / record_bytes:.2f}x a record)" if r["bytes_per_image"] else ""
    figures = [
        r["decode"],
        r["name"],
        f"{r['img_s'][0]:,.0f}",
        f"{r['img_s'][1]:,.0f}",
        f"{r['first_batch_s']:.2f} s",
        f"{r['requests_per_image']:.3f}",
        f"{r['bytes_per_image'] / 1e3:,.1f} KB{ratio}",
        f"{r['local_disk_bytes'] / 1e6:,.1f} MB",
        " / ".join(f"{r['cpu_s'][part]:.0f}" for part in ("loader", "proxy", "store")),
    ]
    return "| " + " | ".join(figures) + " |"


def table(runs: list[dict[str, Any]], record_bytes: float) -> str:
    return "\n".join([HEADER, *(row(r, record_bytes) for r in runs)])


def medians(runs: list[dict[str, Any]]) -> str:
    """Per contender: the median of its runs' epoch rates and first batch, each run's load average
    before it, and epoch 2 against LitData's (the median of each repeat's ratio)."""
    by_key: dict[str, list[dict[str, Any]]] = {}
    for r in runs:
        by_key.setdefault(f"{r['decode']} {r['key']}", []).append(r)
    lines = [
        "| decode | contender | runs | epoch 1 img/s | epoch 2 img/s | first batch | epoch 2 / LitData's "
        "| load before |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for group in by_key.values():
        decode = group[0]["decode"]
        lit = by_key.get(f"{decode} litdata", [])
        ratio = "-"
        if lit and len(lit) == len(group):
            ratio = f"{statistics.median(a['img_s'][1] / b['img_s'][1] for a, b in zip(group, lit, strict=True)):.2f}x"
        lines.append(
            f"| {decode} | {group[0]['name']} | {len(group)} | "
            f"{statistics.median(r['img_s'][0] for r in group):,.0f} | "
            f"{statistics.median(r['img_s'][1] for r in group):,.0f} | "
            f"{statistics.median(r['first_batch_s'] for r in group):.2f} s | {ratio} | "
            + " / ".join(f"{r.get('load', float('nan')):.1f}" for r in group)
            + " |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--images", type=int, default=12000)
    parser.add_argument("--litdata-python", default="/work/litdata-venv/bin/python")
    parser.add_argument("--decodes", nargs="+", default=["train", "bytes"])
    parser.add_argument("--only", nargs="+", help="these contenders only (keys: s3 s3_cache litdata cold warm ...)")
    parser.add_argument("--repeats", type=int, default=1, help="each contender this often, the order rotating")
    args = parser.parse_args()
    DATA.mkdir(parents=True, exist_ok=True)
    _, lmdb, lit = prepared(args.images, args.litdata_python)
    seaweed = Seaweed(Path(tempfile.mkdtemp(dir=DATA)), "bench").start()
    proxy = FaultProxy(seaweed.ports[-1], delay=DELAY_S).start()
    try:
        upload(seaweed, lmdb, lit)
        server = psutil.Process(seaweed.process.pid)  # type: ignore[union-attr]  # started above
        env = {**os.environ, **seaweed.env(), "AWS_ENDPOINT_URL": proxy.url}
        lit_env = {k: v for k, v in env.items() if k != "PYTHONPATH"}
        url = "s3://bench/train.lmdb"
        report: dict[str, Any] = {
            "images": args.images,
            "delay_s": DELAY_S,
            "open": open_requests(url, env, proxy),
            "runs": [],
        }
        report["load_start"] = os.getloadavg()
        for decode in args.decodes:
            chosen = [c for c in contenders(url, lmdb, decode) if not args.only or c["key"] in args.only]
            for turn in range(args.repeats):
                for contender in rotated(chosen, turn):
                    python, run_env = (
                        (args.litdata_python, lit_env) if contender["kind"] == "litdata" else (sys.executable, env)
                    )
                    load = os.getloadavg()[0]
                    report["runs"].append({**run(contender, run_env, proxy, python, server), "load": load})
                    print(json.dumps(report["runs"][-1]), flush=True)
        report["load_end"] = os.getloadavg()
        report["file_bytes"] = lmdb.stat().st_size
        report["litdata_bytes"] = folder_bytes(lit)
        (OUT / "remote.json").write_text(json.dumps(report, indent=1))
        print(table(report["runs"], report["file_bytes"] / args.images))
        print()
        print(medians(report["runs"]))
        print(json.dumps(report["open"]))
    finally:
        proxy.stop()
        seaweed.stop()


if __name__ == "__main__":
    main()
