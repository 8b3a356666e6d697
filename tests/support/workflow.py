"""The real snakemake CLI on this repository's Snakefile: a config written into a folder, a run in
it (finished, or started and held at a script's hook point, then killed as a power cut would)."""

from __future__ import annotations

import compileall
import contextlib
import io
import os
import signal
import subprocess
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from . import BIN, REPO


def snakemake_command(workdir: Path, *args: str) -> list[str]:
    """The venv's snakemake on this repository's workflow, in ``workdir``, with ``args``."""
    return [str(BIN / "snakemake"), "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir), *args]


def snakemake_environment() -> dict[str, str]:
    """This environment with the venv's bin first on PATH, as after activating the venv."""
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}


#: Encode jobs of a split whose test gives no ``shards``: the schema's default (16) is ImageNet's, and a test's
#: tree of tens of images made 16 jobs of a few images each (most of such a test's CPU). A test about the
#: default itself gives ``shards`` explicitly.
TEST_SHARDS = 2


def write_config(workdir: Path, splits: dict[str, dict[str, Any]], **sections: Any) -> Path:
    """Write ``workdir/config.yaml`` (each split without ``shards`` given TEST_SHARDS); returns its path."""
    splits = {name: split if "shards" in split else {**split, "shards": TEST_SHARDS} for name, split in splits.items()}
    document: dict[str, Any] = {"results": "results", "work": "work", "splits": splits, **sections}
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


@dataclass
class Run:
    """A finished snakemake invocation."""

    returncode: int
    output: str  # stdout and stderr together, as a user sees them

    def check(self) -> Run:
        assert self.returncode == 0, f"snakemake failed:\n{self.output[-6000:]}"
        return self


def run_snakemake(workdir: Path, *args: str, timeout: int = 600) -> Run:
    """Run the real snakemake CLI on this repository's workflow, in ``workdir``."""
    command = snakemake_command(workdir, *args)
    if not any(a.startswith("--cores") or a == "-n" or a.startswith("--dry") for a in args):
        command += ["--cores", "2"]
    completed = subprocess.run(
        command, cwd=workdir, capture_output=True, text=True, timeout=timeout, env=snakemake_environment(), check=False
    )
    return Run(completed.returncode, completed.stdout + completed.stderr)


@dataclass
class Converted:
    workdir: Path
    source: Path
    lmdb: Path
    run: Run

    @property
    def verify_report(self) -> Path:
        return self.lmdb.with_suffix(".verify.json")


def convert(
    workdir: Path, source: Path, split: str = "train", shards: int = 3, layout: str = "imagefolder", **sections: Any
) -> Converted:
    """``source`` converted as one split in ``workdir`` (not checked: see ``.run``)."""
    workdir.mkdir(parents=True, exist_ok=True)
    config = write_config(workdir, {split: {"source": str(source), "shards": shards, "layout": layout}}, **sections)
    run = run_snakemake(workdir, "--configfile", str(config))
    return Converted(workdir, source, workdir / "results" / f"{split}.lmdb", run)


def workflow_at(commit: str, into: Path) -> Path | None:
    """The repository as it was at ``commit``, unpacked into ``into``; returns its Snakefile, or
    None when this clone's history lacks the commit."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", commit], capture_output=True, check=False)
    if archive.returncode != 0:
        return None
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    # its bytecode once, as make test writes today's: with PYTHONDONTWRITEBYTECODE every job compiles anew
    compileall.compile_dir(into, quiet=1)
    return into / "Snakefile"


def convert_with(
    snakefile: Path, workdir: Path, splits: dict[str, dict[str, Any]], package: Path | None = None, **sections: Any
) -> None:
    """``splits`` converted in ``workdir`` (a new folder) by the workflow of ``snakefile``; checked.
    ``package``: the src folder whose package its rules import (an earlier commit's), its jobs too."""
    workdir.mkdir()
    config = write_config(workdir, splits, **sections)
    environment = snakemake_environment()
    snakemake = [str(BIN / "snakemake")]
    if package is not None:
        snakemake = [str(BIN / "python"), "-c", SNAKEMAKE_WITH_ITS_OWN_PACKAGE]
        environment["PYTHONPATH"] = str(package)
    command = [*snakemake, "-s", str(snakefile), "-d", str(workdir), "--cores", "2", "--configfile", str(config)]
    command += ["--scheduler", "greedy"]  # what today's profile picks; an earlier commit's profile may not
    completed = subprocess.run(command, capture_output=True, text=True, env=environment, check=False)
    assert completed.returncode == 0, (completed.stdout + completed.stderr)[-4000:]


#: snakemake, run with the package of an earlier commit (PYTHONPATH) rather than the one installed:
#: the folders holding today's logger plugin, which imports today's package, are left off the path
#: (the earlier commit's own folder, which may hold its plugin too, stays).
SNAKEMAKE_WITH_ITS_OWN_PACKAGE = """if True:
    import os, sys
    plugin = "snakemake_logger_plugin_imagefolder_lmdb"
    own = set(os.environ.get("PYTHONPATH", "").split(os.pathsep)) - {""}
    sys.path[:] = [entry for entry in sys.path if entry in own or not os.path.isdir(os.path.join(entry or ".", plugin))]
    from snakemake.cli import main
    sys.argv[0] = "snakemake"
    sys.exit(main())
"""


# --------------------------------------------------------------------------------------------------
# Runs held at a hook point and killed. The scripts' test hook (IMAGEFOLDER_LMDB_TEST_HOLD): a
# script reaching the named point writes the marker file and parks there.
# --------------------------------------------------------------------------------------------------


def start_snakemake(workdir: Path, hold: str | None = None) -> tuple[subprocess.Popen, Path]:
    """snakemake on ``workdir/config.yaml`` in the background, in its own process group; with
    ``hold``, the script reaching that point (e.g. "merge", "encode_shard:3") parks there."""
    marker = workdir / "held"
    marker.unlink(missing_ok=True)
    environment = snakemake_environment()
    if hold:
        environment.update(IMAGEFOLDER_LMDB_TEST_HOLD=hold, IMAGEFOLDER_LMDB_TEST_HOLD_MARKER=str(marker))
    process = subprocess.Popen(
        snakemake_command(workdir, "--cores", "2", "--configfile", str(workdir / "config.yaml")),
        cwd=workdir,
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own process group, killed as a whole
    )
    return process, marker


def wait_for_hold(marker: Path, process: subprocess.Popen, timeout: float = 120) -> None:
    """Return once the held script has written ``marker``."""
    deadline = time.monotonic() + timeout
    while not marker.exists():
        assert process.poll() is None, "snakemake ended before reaching the hold point"
        assert time.monotonic() < deadline, "hold point not reached in time"
        time.sleep(0.05)


def kill_group(process: subprocess.Popen) -> None:
    """SIGKILL snakemake and its jobs together, as a power cut would: the process group of
    ``process`` and every group its descendants run in (``imagefolder-lmdb convert`` starts
    Snakemake in a group of its own)."""
    groups = {os.getpgid(pid) for pid in descendants(process.pid)} - {os.getpgrp()}
    os.killpg(process.pid, signal.SIGKILL)
    for group in groups:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGKILL)
    process.wait()


def kill_tree(process: subprocess.Popen[str]) -> None:
    """SIGKILL the command and every process under it, whichever group it runs in (a power cut)."""
    pids = descendants(process.pid)  # the command first
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    process.communicate()


def descendants(pid: int) -> list[int]:
    """``pid``'s children, theirs, and so on (from /proc), ``pid`` itself first."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, queue = [], [pid]
    while queue:
        current = queue.pop()
        found.append(current)
        queue += children.get(current, [])
    alive = []
    for member in found:
        with contextlib.suppress(ProcessLookupError):
            os.getpgid(member)
            alive.append(member)
    return alive


def published(results: Path) -> list[str]:
    """What a run left in its results folder for a user: every file but the controllers' lock."""
    from imagefolder_lmdb.run.lock import LOCK_NAME

    if not results.exists():
        return []
    return sorted(path.name for path in results.iterdir() if path.name != LOCK_NAME)


def executed_jobs(output: str) -> list[str]:
    """``rule`` or ``rule:wildcards`` of every job a run executed, from its log."""
    jobs, lines = [], output.splitlines()
    for number, line in enumerate(lines):
        if line.split(" ", 1)[0] in ("rule", "localrule", "checkpoint", "localcheckpoint") and line.endswith(":"):
            name = line.split()[1].rstrip(":")
            wildcards = next(
                (w.split(":", 1)[1].strip() for w in lines[number + 1 : number + 8] if "wildcards:" in w), ""
            )
            jobs.append(f"{name}:{wildcards}" if name == "encode_shard" else name)
    return jobs


def settle(tree: Path) -> None:
    """Date the class folders of ``tree`` a minute back, so that their listing is cached (a folder
    changed within the last seconds is listed at every run: src/imagefolder_lmdb/work/folder_listing.py)."""
    for folder in tree.iterdir():
        os.utime(folder, (time.time() - 60, time.time() - 60))
