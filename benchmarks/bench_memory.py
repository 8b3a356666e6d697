"""Section 5: peak memory of each rule's script at two dataset sizes (it must not grow with the
dataset, beyond the per-image meta that count_check, merge, write_meta and verify hold).

Two sources, from untimed runs (polling costs CPU the timed runs must not pay):
- Snakemake's own benchmark records (max_rss per job). Snakemake samples every 0.5 s, so a job
  shorter than that is recorded at its start, before it has allocated anything;
- a poll of every job process every 20 ms here: the kernel's peak resident set (VmHWM, anonymous
  and file-backed pages together: mapped LMDB pages count) and the largest anonymous part seen
  (RssAnon: the process's own memory).
"""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path
from typing import Any

import psutil

from benchmarks.bench_common import OUT, fresh_dir, read_benchmark_tsvs, snakemake_env
from tests.support.workflow import snakemake_command, write_config

#: Snakemake copies a rule's script to .snakemake/scripts/tmpXXXX.<script name>.py to run it.
SCRIPT = re.compile(r"\.snakemake/scripts/tmp[^/]*\.(\w+)\.py$")
POLL_SECONDS = 0.02


def status_mb(pid: int, field: str) -> float:
    with open(f"/proc/{pid}/status") as stream:
        for line in stream:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


def poll(process: subprocess.Popen, peaks: dict[str, dict[str, float]]) -> None:
    """Until ``process`` ends: the peak memory of every rule script among its descendants."""
    root = psutil.Process(process.pid)
    while process.poll() is None:
        try:
            children = root.children(recursive=True)
        except psutil.Error:
            children = []
        for child in children:
            try:
                match = next((SCRIPT.search(arg) for arg in child.cmdline() if SCRIPT.search(arg)), None)
                if match is None:
                    continue
                peak = peaks.setdefault(match.group(1), {"vm_hwm_mb": 0.0, "rss_anon_mb": 0.0})
                peak["vm_hwm_mb"] = max(peak["vm_hwm_mb"], status_mb(child.pid, "VmHWM"))
                peak["rss_anon_mb"] = max(peak["rss_anon_mb"], status_mb(child.pid, "RssAnon"))
            except (psutil.Error, OSError):
                continue  # the job ended between listing and reading
        time.sleep(POLL_SECONDS)


def polled_run(tree: Path, shards: int, name: str) -> dict[str, Any]:
    rundir = fresh_dir(OUT / "runs" / f"memory-{name}")
    config = write_config(rundir, {"train": {"source": str(tree), "shards": shards}})
    command = snakemake_command(rundir, "--configfile", str(config), "--cores", "2")
    peaks: dict[str, dict[str, float]] = {}
    with open(rundir / "snakemake.out", "w") as log:
        process = subprocess.Popen(command, cwd=rundir, stdout=log, stderr=subprocess.STDOUT, env=snakemake_env())
        poll(process, peaks)
    if process.returncode != 0:
        raise RuntimeError(f"snakemake failed in {rundir}: see {rundir / 'snakemake.out'}")
    records = read_benchmark_tsvs(rundir / "work")
    for rule, rows in records.items():
        peak = peaks.setdefault(rule, {})
        peak["tsv_max_rss_mb"] = max((row.get("max_rss", 0.0) for row in rows), default=0.0)
        peak["jobs"] = len(rows)
    fresh_dir(rundir)
    return peaks


def measure_memory(small: Path, large: Path, n_small: int, n_large: int, shards: int) -> dict[str, Any]:
    peaks = {"small": polled_run(small, shards, "small"), "large": polled_run(large, shards, "large")}
    rules = sorted(set(peaks["small"]) | set(peaks["large"]))
    table = {}
    for rule in rules:
        row = {}
        for size in ("small", "large"):
            for key, value in peaks[size].get(rule, {}).items():
                row[f"{key}_{size}"] = value
        anon_small, anon_large = row.get("rss_anon_mb_small"), row.get("rss_anon_mb_large")
        if anon_small is not None and anon_large is not None:
            # growth of the process's own memory per extra image of the split
            row["anon_kb_per_image"] = (anon_large - anon_small) * 1024 / (n_large - n_small)
        table[rule] = row
    return {"n_small": n_small, "n_large": n_large, "rules": table}
