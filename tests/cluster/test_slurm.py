"""The workflow on a real SLURM through profiles/slurm: a single-node cluster on loopback
(slurm_node.py), the real snakemake CLI, and SLURM's own record of which jobs ran.

Needs root and Debian's slurm-wlm and munge (installed with apt-get when missing); skipped, saying
why, where that is not possible. The machine is left as found: the daemons started here are stopped
by pid and /etc/slurm/slurm.conf is removed. That matters to the other tests too: with the SLURM
plugin installed, every snakemake start runs ``scontrol show config``, which costs ~9 s while a
config names a controller that is gone, and milliseconds when there is no config.
"""

from __future__ import annotations

import fcntl
import os
import re
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import psutil
import pytest
import yaml

from slurm_node import SLURM_CONF, SingleNodeSlurm, SlurmJob, SlurmUnavailable, client_environment, ensure_installed
from support import BIN, REPO
from support.datasets import assert_same_dataset
from support.images import make_images
from support.workflow import Converted, run_snakemake, snakemake_command, write_config

PROFILE = REPO / "profiles" / "slurm"
RETRIES = int(yaml.safe_load((PROFILE / "config.yaml").read_text())["retries"])
#: snakemake is killed after this long: it can wait forever on jobs whose status it cannot read.
SNAKEMAKE_TIMEOUT_SECONDS = 420
#: Every rule but encode_shard (one job per shard) and all (local, no action) runs once per split.
UPSTREAM_OF_SHARDS = ("extract", "count_check")
DOWNSTREAM_OF_SHARDS = ("merge", "write_meta", "verify", "report_split")
PER_SPLIT_RULES = UPSTREAM_OF_SHARDS + DOWNSTREAM_OF_SHARDS
SHARDS = 4

T = TypeVar("T")


# Session scope, so that a skip comes before the session fixtures of conftest.py (the local
# conversions) do any work; test_stopping_leaves_no_daemon_running stops it at the end of this module.
@pytest.fixture(scope="session")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SingleNodeSlurm]:
    try:
        ensure_installed()
    except SlurmUnavailable as exc:
        pytest.skip(str(exc))
    cluster = SingleNodeSlurm(tmp_path_factory.mktemp("slurm"))
    try:
        try:
            cluster.start()
        except SlurmUnavailable as exc:
            pytest.skip(str(exc))
        yield cluster
    finally:
        cluster.stop()


# --------------------------------------------------------------------------------------------------
# Running snakemake through the profile.
# --------------------------------------------------------------------------------------------------


@dataclass
class SlurmRun:
    returncode: int
    output: str
    run_id: str  # the plugin's run UUID: the SLURM job name of every job of this run

    def check(self) -> SlurmRun:
        assert self.returncode == 0, f"snakemake failed (exit {self.returncode}):\n{self.output[-6000:]}"
        return self


class Controller:
    """The user's ``snakemake --profile profiles/slurm --configfile …``, running in ``workdir``."""

    def __init__(self, workdir: Path, config: Path, *args: str) -> None:
        command = [
            "timeout",
            "-s",
            "KILL",
            str(SNAKEMAKE_TIMEOUT_SECONDS),
            *snakemake_command(
                workdir,
                "--profile",
                str(PROFILE),
                "--configfile",
                str(config),
                # The first squeue after 2 s instead of 40 s: these jobs take seconds, not minutes.
                "--slurm-init-seconds-before-status-checks",
                "2",
                *args,
            ),
        ]
        environment = client_environment()
        environment["PATH"] = f"{BIN}{os.pathsep}{environment['PATH']}"
        handle, name = tempfile.mkstemp(prefix="snakemake-", suffix=".out", dir=workdir)
        self.output_path = Path(name)
        with os.fdopen(handle, "w") as output:  # a file, not a pipe: nobody has to drain it meanwhile
            self.process = subprocess.Popen(
                command, cwd=workdir, env=environment, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
            )

    def __enter__(self) -> Controller:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.process.poll() is None:  # the test failed half-way: do not leave it submitting jobs
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    @property
    def output(self) -> str:
        return self.output_path.read_text(errors="replace")

    def run_id(self) -> str:
        return wait_until(lambda: run_id_in(self.output), "the SLURM run ID in snakemake's output")

    def wait(self) -> SlurmRun:
        returncode = self.process.wait()
        return SlurmRun(returncode, self.output, run_id_in(self.output))


def run_through_slurm(workdir: Path, config: Path, *args: str) -> SlurmRun:
    with Controller(workdir, config, *args) as controller:
        return controller.wait()


def run_id_in(output: str) -> str:
    match = re.search(r"SLURM run ID: (\S+)", output)
    return match.group(1) if match else ""


def wait_until(condition: Callable[[], T], what: str, timeout: float = SNAKEMAKE_TIMEOUT_SECONDS) -> T:
    """The first truthy value of ``condition()``, polled; a deadline only against hanging forever."""
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up after {timeout} s waiting for {what}")
        time.sleep(0.5)
    return value


def label(rule: str, *wildcards: str) -> str:
    """How the plugin labels a job in SLURM (its ``--comment``)."""
    return f"rule_{rule}_wildcards_{'_'.join(wildcards)}"


def labels_and_states(jobs: list[SlurmJob]) -> list[tuple[str, str]]:
    return sorted((job.comment, job.state) for job in jobs)


# --------------------------------------------------------------------------------------------------
# The tests.
# --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo_like(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, Any]]:
    """config/demo.yaml's splits and settings, on trees generated as `make demo` generates them."""
    demo = yaml.safe_load((REPO / "config" / "demo.yaml").read_text())
    root = tmp_path_factory.mktemp("demo")
    splits = {}
    for position, (name, split) in enumerate(demo["splits"].items()):
        source = root / name
        images, classes = split["expected_images"], split["expected_classes"]
        make_images(str(source), images=images, classes=classes, seed=1, first_index=100_000 * position, workers=2)
        splits[name] = {**split, "source": str(source)}
    sections = {key: value for key, value in demo.items() if key not in ("results", "work", "splits")}
    return splits, sections


def test_demo_through_slurm_gives_the_local_result(
    slurm: SingleNodeSlurm, demo_like: tuple[dict[str, Any], dict[str, Any]], tmp_path: Path
) -> None:
    splits, sections = demo_like
    local, cluster = tmp_path / "local", tmp_path / "slurm"
    local.mkdir()
    cluster.mkdir()
    run_snakemake(local, "--configfile", str(write_config(local, splits, **sections))).check()

    run = run_through_slurm(cluster, write_config(cluster, splits, **sections)).check()

    expected = [label(rule, split) for split in splits for rule in PER_SPLIT_RULES]
    expected += [label("encode_shard", split, f"{k:05d}") for split, s in splits.items() for k in range(s["shards"])]
    assert labels_and_states(slurm.jobs(run.run_id)) == sorted((name, "COMPLETED") for name in expected)
    for split in splits:
        assert_same_dataset(cluster / "results" / f"{split}.lmdb", local / "results" / f"{split}.lmdb")


def test_failed_shard_is_retried_then_rerun_alone_surviving_a_preemption(
    slurm: SingleNodeSlurm, tree_copy: Path, converted: Converted, tmp_path: Path
) -> None:
    """A bad image: its shard fails on every attempt, the other shards finish. After the fix, the
    rerun submits that shard and what follows it, nothing else; when SLURM requeues that job, as
    pre-emption with PreemptMode=REQUEUE does, the run waits for its second start (no retry spent)."""
    images = sorted(tree_copy.rglob("*.JPEG"))
    victim = images[len(images) // 2]
    original = victim.read_bytes()
    victim.write_bytes(b"not an image at all")
    config = write_config(tmp_path, {"train": {"source": str(tree_copy), "shards": SHARDS}})

    failed = run_through_slurm(tmp_path, config, "--keep-going")
    assert failed.returncode not in (0, 137), failed.output[-6000:]  # 137: killed by the timeout
    assert str(victim) in failed.output, "the controller's output names the bad file"
    done = {report.stem for report in (tmp_path / "work" / "train" / "parts").glob("*.json")}
    [bad_shard] = {f"{k:05d}" for k in range(SHARDS)} - done
    expected = [(label("encode_shard", "train", bad_shard), "FAILED")] * (1 + RETRIES)
    expected += [(label("encode_shard", "train", shard), "COMPLETED") for shard in done]
    expected += [(label(rule, "train"), "COMPLETED") for rule in UPSTREAM_OF_SHARDS]
    assert labels_and_states(slurm.jobs(failed.run_id)) == sorted(expected)

    victim.unlink()
    os.mkfifo(victim)  # the shard reading it blocks until this test writes it: certainly running
    with Controller(tmp_path, config) as controller:
        run_id = controller.run_id()
        job = wait_until(lambda: running_shard(slurm.jobs(run_id)), "the shard's job to run")
        requeue(slurm, job)
        feed_fifo(victim, original)
        rerun = controller.wait()
    rerun.check()
    expected = [(label("encode_shard", "train", bad_shard), "COMPLETED")]
    expected += [(label(rule, "train"), "COMPLETED") for rule in DOWNSTREAM_OF_SHARDS]
    assert labels_and_states(slurm.jobs(rerun.run_id)) == sorted(expected)
    assert slurm.job_details(job.job_id)["Restarts"] == "1"
    assert_same_dataset(tmp_path / "results" / "train.lmdb", converted.lmdb)


def running_shard(jobs: list[SlurmJob]) -> SlurmJob | None:
    return next((job for job in jobs if job.comment.startswith("rule_encode_shard_") and job.state == "RUNNING"), None)


def requeue(slurm: SingleNodeSlurm, job: SlurmJob) -> None:
    """Put a running job back in the queue and wait until it has started a second time."""
    slurm.command("scontrol", "requeue", str(job.job_id))
    # SLURM holds a requeued job back for two minutes (BeginTime); let it start again now.
    wait_until(lambda: slurm.job_details(job.job_id)["JobState"] == "PENDING", "the job back in the queue")
    slurm.command("scontrol", "update", f"JobId={job.job_id}", "StartTime=now")
    wait_until(lambda: slurm.job_details(job.job_id)["Restarts"] == "1", "the job's second start")


def feed_fifo(fifo: Path, data: bytes) -> None:
    """Write ``data`` to the job reading ``fifo``, then put a plain file in its place (merge
    reads passed-through images from the source again)."""
    descriptor = wait_until(lambda: open_for_reader(fifo), f"a reader of {fifo}")
    fcntl.fcntl(descriptor, fcntl.F_SETFL, fcntl.fcntl(descriptor, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    with os.fdopen(descriptor, "wb") as pipe:
        pipe.write(data)
    replacement = fifo.parent.parent / f".{fifo.name}.replacement"
    replacement.write_bytes(data)
    os.replace(replacement, fifo)


def open_for_reader(fifo: Path) -> int | None:
    """A write descriptor of ``fifo`` once a reader has it open; None before (no blocking open)."""
    try:
        return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:  # ENXIO: nobody reads it yet
        return None


def test_stopping_leaves_no_daemon_running(slurm: SingleNodeSlurm) -> None:
    """Runs last in this module: it stops the cluster the tests above share."""
    assert {process.name() for process in slurm.tracked} >= {"munged", "slurmctld", "slurmd"}
    slurm.stop()
    assert [process.pid for process in slurm.tracked if still_running(process)] == []
    job_steps = [
        process
        for process in psutil.process_iter(["cmdline", "create_time"])
        if (process.info["cmdline"] or [""])[0].startswith("slurmstepd")
        and process.info["create_time"] >= slurm.started_at
    ]
    assert job_steps == [], "a job step of this cluster outlived it"
    assert not SLURM_CONF.exists()


def still_running(process: psutil.Process) -> bool:
    """Alive and not a zombie; psutil also tells a reused pid from the original process."""
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
