"""Helpers shared by the benchmark sections: paths, timing, alternation, the snakemake CLI.

Timings on a shared machine are noisy, so every section runs its contenders side by side in one
process, alternating their order from repeat to repeat, and reports medians and ratios. What the
benchmarks share with the tests (the image generator, ILSVRC-structured archives, the snakemake
command and config) is the support package in tests/support, put on the path here.
"""

from __future__ import annotations

import csv
import functools
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from tests.support.workflow import snakemake_command

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

#: Everything the benchmarks write (generated data, runs, raw results); ignored by git.
OUT = REPO / "benchmarks" / "out"
CORES = 2

T = TypeVar("T")


def rotated(items: Sequence[T], turn: int) -> list[T]:
    """``items`` rotated by ``turn``: each contender runs first, middle and last in turn, so slow
    phases of the shared machine do not always hit the same one."""
    if not items:
        return []
    k = turn % len(items)
    return list(items[k:]) + list(items[:k])


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if values else float("nan")


def timed(function: Callable[[], Any]) -> float:
    """Wall-clock seconds of one call."""
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def children_cpu_seconds() -> float:
    """User + system CPU seconds of every finished child process (and theirs, once reaped).
    Under load, CPU time per image is the figure the other engineers' jobs disturb least."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def fresh_dir(path: Path) -> Path:
    """An empty folder at ``path`` (whatever was there is removed)."""
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def drop_page_cache() -> bool:
    """Empty the kernel page cache (root only); False when not permitted."""
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as stream:
            stream.write("3\n")
    except OSError:
        return False
    return True


# --------------------------------------------------------------------------------------------------
# The real workflow, through the snakemake CLI.
# --------------------------------------------------------------------------------------------------


class WorkflowFailed(RuntimeError):
    """A snakemake run exited non-zero; the message holds the end of its output."""


@functools.cache
def compile_checkout() -> None:
    """The package's bytecode written once, as ``pip install`` writes a wheel's: this checkout is
    installed editable, and where PYTHONDONTWRITEBYTECODE is set (these machines) every rule job
    would compile it again, a cost no installed user pays."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "src")], stdout=subprocess.DEVNULL, check=True)


def snakemake_env() -> dict[str, str]:
    """The environment of every snakemake call (the checkout compiled first: ``compile_checkout``).

    Where Snakemake's SLURM plugin is installed, it runs ``scontrol show config`` at each start; when the
    SLURM test cluster of other engineers is half stopped that costs ~9 s, with an empty SLURM_CONF it
    fails in milliseconds. It is a fixed cost of this machine, not of the workflow, so it is kept out.
    """
    compile_checkout()
    empty_conf = OUT / "empty-slurm.conf"
    empty_conf.parent.mkdir(parents=True, exist_ok=True)
    empty_conf.touch()
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "SLURM_CONF": str(empty_conf)}


def run_snakemake(workdir: Path, config: Path, *extra: str, cores: int = CORES) -> float:
    """Run the workflow in ``workdir``; returns wall-clock seconds, raises WorkflowFailed."""
    command = snakemake_command(workdir, "--configfile", str(config), "--cores", str(cores), *extra)
    log = workdir / "snakemake.out"
    with open(log, "w") as stream:
        start = time.perf_counter()
        completed = subprocess.run(
            command, cwd=workdir, stdout=stream, stderr=subprocess.STDOUT, env=snakemake_env(), check=False
        )
        seconds = time.perf_counter() - start
    if completed.returncode != 0:
        raise WorkflowFailed(f"snakemake failed in {workdir}:\n{log.read_text()[-4000:]}")
    return seconds


def read_benchmark_tsvs(work: Path) -> dict[str, list[dict[str, float]]]:
    """Snakemake's per-job benchmark records under ``work/benchmarks``: rule -> one row per job."""
    records: dict[str, list[dict[str, float]]] = {}
    for path in sorted((work / "benchmarks").rglob("*.tsv")):
        rule = path.relative_to(work / "benchmarks").parts[0]
        with open(path, newline="") as stream:
            for row in csv.DictReader(stream, delimiter="\t"):
                records.setdefault(rule, []).append(
                    {key: float(value) for key, value in row.items() if key != "h:m:s" and value not in ("NA", "")}
                )
    return records
