"""Peak memory and run time of each rule's script on a real local run: the figures behind the
resources in the rules (rules/*.smk, see rules/cluster.smk).

    .venv/bin/python tests/cluster/measure_peak_rss.py SOURCE_TREE [--copies 10] [--shards 4] [--archive tar]

SOURCE_TREE is an ImageFolder tree (e.g. from python -m benchmarks.make_images). ``--copies K`` measures
on a tree with every image hard-linked K times (cheap to build, and the per-split rules see K
times more files), so two runs at different K give the per-image slope of the rules whose
memory grows with the split (count_check, merge, write_meta, verify). ``--archive tar`` converts a
tar of the tree instead, ``--archive ilsvrc-train`` a tar of per-class tars (ILSVRC2012's train
download), so extract indexes an archive as it does for ImageNet. Snakemake runs with
``--cores 1``, so one script runs at a time; every descendant process is polled and its peak
resident set (VmHWM) is charged to the rule whose script it runs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import yaml

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
#: Snakemake copies a rule's script to .snakemake/scripts/tmpXXXX.<name>.py before running it.
SCRIPT_PATTERN = re.compile(r"\.snakemake/scripts/tmp[^/]*\.(\w+)\.py$")
POLL_SECONDS = 0.02


@dataclass
class RulePeak:
    jobs: int = 0
    vm_hwm_mb: float = 0.0  # peak resident set, anonymous and file-backed (mmap'd LMDB pages) together
    rss_anon_mb: float = 0.0  # largest anonymous part seen: what a cgroup cannot reclaim
    seconds: list[float] = field(default_factory=list)


def status_mb(pid: int) -> dict[str, float]:
    """VmHWM, RssAnon and RssFile of ``pid`` in MB (empty once the process is gone)."""
    values = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            name, _, rest = line.partition(":")
            if name in ("VmHWM", "RssAnon", "RssFile"):
                values[name] = int(rest.split()[0]) / 1024
    except OSError:
        return {}
    return values


def rule_of(process: psutil.Process) -> str | None:
    try:
        for argument in process.cmdline():
            match = SCRIPT_PATTERN.search(argument)
            if match:
                return match.group(1)
    except psutil.Error:
        pass
    return None


def hardlinked_tree(source: Path, destination: Path, copies: int) -> int:
    """``source`` with every image linked ``copies`` times under new names; returns the image count."""
    count = 0
    for image in sorted(source.rglob("*")):
        if not image.is_file():
            continue
        target_dir = destination / image.parent.relative_to(source)
        target_dir.mkdir(parents=True, exist_ok=True)
        for copy in range(copies):
            os.link(image, target_dir / f"{image.stem}_c{copy:03d}{image.suffix}")
            count += 1
    return count


def add_whole(tar: tarfile.TarFile, path: Path, name: str) -> None:
    """Store the file's bytes (``tar.add`` would store a second link to an inode as a hard link)."""
    info = tarfile.TarInfo(name)
    info.size = path.stat().st_size
    with open(path, "rb") as stream:
        tar.addfile(info, stream)


def write_archive(tree: Path, archive: Path, per_class_tars: bool) -> None:
    """``tree`` as a tar of ``train/<class>/<file>``, or as a tar of ``<class>.tar`` members."""
    with tarfile.open(archive, "w") as outer:
        for folder in sorted(p for p in tree.iterdir() if p.is_dir()):
            files = sorted(p for p in folder.iterdir() if p.is_file())
            if not per_class_tars:
                for path in files:
                    add_whole(outer, path, f"train/{folder.name}/{path.name}")
                continue
            inner = archive.with_name(f"{folder.name}.tar")
            with tarfile.open(inner, "w") as class_tar:
                for path in files:
                    add_whole(class_tar, path, path.name)
            add_whole(outer, inner, inner.name)
            inner.unlink()


def log_tails(logs: Path, lines: int = 15) -> str:
    """The last ``lines`` lines of every non-empty rule log under ``logs``."""
    tails = []
    for log in sorted(logs.rglob("*.log")):
        text = log.read_text(errors="replace").splitlines()
        if text:
            tails.append(f"--- {log.relative_to(logs)}\n" + "\n".join(text[-lines:]))
    return "\n".join(tails) or f"(no rule log under {logs})"


def measure(
    source: Path, layout: str, shards: int, workdir: Path, until: list[str]
) -> tuple[dict[str, RulePeak], float]:
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "config.yaml"
    split = {"source": str(source), "layout": layout, "shards": shards}
    config.write_text(yaml.safe_dump({"results": "results", "work": "work", "splits": {"train": split}}))
    command = [str(BIN / "snakemake"), "-s", str(REPO / "Snakefile"), "-d", str(workdir), "--cores", "1"]
    environment = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    started = time.monotonic()
    snakemake = subprocess.Popen(
        [*command, "--configfile", str(config), *(["--until", *until] if until else [])],
        cwd=workdir,
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    parent = psutil.Process(snakemake.pid)
    peaks: dict[str, RulePeak] = {}
    alive: dict[int, tuple[str, float]] = {}  # pid -> (rule, start time)
    while snakemake.poll() is None:
        seen = set()
        for child in parent.children(recursive=True):
            rule = alive[child.pid][0] if child.pid in alive else rule_of(child)
            if rule is None:
                continue
            seen.add(child.pid)
            if child.pid not in alive:
                alive[child.pid] = (rule, time.monotonic())
                peaks.setdefault(rule, RulePeak()).jobs += 1
            values = status_mb(child.pid)
            peak = peaks[rule]
            peak.vm_hwm_mb = max(peak.vm_hwm_mb, values.get("VmHWM", 0.0))
            peak.rss_anon_mb = max(peak.rss_anon_mb, values.get("RssAnon", 0.0))
        for pid in set(alive) - seen:
            rule, start = alive.pop(pid)
            peaks[rule].seconds.append(time.monotonic() - start)
        time.sleep(POLL_SECONDS)
    if snakemake.returncode != 0:
        # the scratch folder is deleted on exit: show the rule logs now
        raise SystemExit(f"snakemake failed (exit {snakemake.returncode}):\n{log_tails(workdir / 'work' / 'logs')}")
    return peaks, time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", type=Path)
    parser.add_argument("--copies", type=int, default=1, help="hard-link every image this many times")
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--archive", choices=["tar", "ilsvrc-train"], help="convert an archive of the tree")
    parser.add_argument("--until", nargs="+", default=[], metavar="RULE", help="stop after these rules")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="peak-rss-") as scratch:
        source = args.tree.resolve()
        images = sum(1 for p in source.rglob("*") if p.is_file())
        if args.copies > 1:
            images = hardlinked_tree(source, Path(scratch) / "tree", args.copies)
            source = Path(scratch) / "tree"
        layout = "imagefolder"
        if args.archive:
            archive = Path(scratch) / "train.tar"
            write_archive(source, archive, per_class_tars=args.archive == "ilsvrc-train")
            source, layout = archive, "ilsvrc-train" if args.archive == "ilsvrc-train" else "imagefolder"
        peaks, total = measure(source, layout, args.shards, Path(scratch) / "run", args.until)
    report = {
        "source": args.archive or "folder",
        "images": images,
        "shards": args.shards,
        "wall_seconds": round(total, 1),
        "rules": {
            rule: {
                "jobs": peak.jobs,
                "peak_rss_mb": round(peak.vm_hwm_mb),
                "peak_rss_anon_mb": round(peak.rss_anon_mb),
                "max_seconds": round(max(peak.seconds, default=0.0), 1),
            }
            for rule, peak in sorted(peaks.items())
        },
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
