"""The workflow on a real SLURM through profiles/slurm: a single-node cluster on loopback
(slurm_node.py), the real snakemake CLI, and SLURM's own record of which jobs ran.

Needs root and Debian's slurm-wlm and munge (installed with apt-get when missing); skipped, saying
why, where that is not possible. The machine is left as found: the daemons started here are stopped
by pid and /etc/slurm/slurm.conf is removed. That matters to the other tests too: with the SLURM
plugin installed, every snakemake start runs ``scontrol show config``, which costs ~9 s while a
config names a controller that is gone, and milliseconds when there is no config.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import signal
import subprocess
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import psutil
import pytest
import yaml

from imagefolder_lmdb.board.rule_table import RULES
from imagefolder_lmdb.reader.revision_format import data_folder
from imagefolder_lmdb.run.made_from import RECORDED_VARIABLE
from imagefolder_lmdb.work.files import read_manifest, shard_range
from slurm_node import (
    SLURM_CONF,
    SingleNodeSlurm,
    SlurmJob,
    SlurmUnavailable,
    client_environment,
    ensure_installed,
    ensure_plugins,
)
from support import BIN, REPO
from support.datasets import assert_same_dataset, assert_same_samples
from support.images import make_images
from support.readme import page_text, section
from support.workflow import Converted, run_snakemake, snakemake_command, write_config

# One worker runs this module, in its order (also under --random-order), while the others run the
# rest (support/scheduling.py): one test cluster per machine, started once, stopped by the last test.
pytestmark = [pytest.mark.xdist_group("slurm"), pytest.mark.slow, pytest.mark.random_order(disabled=True)]

PROFILE = REPO / "profiles" / "slurm"
#: The controller's snakemake: the CLI with the plugin's pauses between status checks capped.
POLLED_SNAKEMAKE = Path(__file__).with_name("polled_snakemake.py")
RETRIES = int(yaml.safe_load((PROFILE / "config.yaml").read_text())["retries"])
#: snakemake is killed after this long: it can wait forever on jobs whose status it cannot read.
SNAKEMAKE_TIMEOUT_SECONDS = 420
#: The SLURM jobs of a split besides its shards (one array task each); all and report_split run in
#: the controller (localrules), never as SLURM jobs.
UPSTREAM_OF_SHARDS = ("extract", "count_check")
DOWNSTREAM_OF_SHARDS = ("merge", "write_meta", "verify")
PER_SPLIT_RULES = UPSTREAM_OF_SHARDS + DOWNSTREAM_OF_SHARDS
LOCAL_RULES = ("all", "report_split")
SHARDS = 4
#: What the plugin adds to an array job's --mem for the table of task commands it passes (MB):
#: ceil(3 x its size / 1 MiB), 1 for a few tasks (submit_string.apply_mem_fudge).
ARRAY_MEMORY_ALLOWANCE_MB = 1
NOT_AN_IMAGE = b"not an image at all"

T = TypeVar("T")


@pytest.fixture(scope="module", autouse=True)
def slurm_plugins() -> Iterator[Path]:
    """The SLURM executor plugins on PYTHONPATH for this module's runs (their controllers and, through
    sbatch's --export=ALL, their jobs), as ``pip install -r requirements-slurm.txt`` puts them in a
    user's venv; the other tests' snakemake starts never see them."""
    try:
        folder = ensure_plugins(BIN / "python", REPO / "requirements-slurm.txt", BIN.parent / "slurm-plugins")
    except SlurmUnavailable as exc:
        pytest.skip(str(exc))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH")])))
        yield folder


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
    history: QueueHistory | None = None  # what squeue showed while the run was live, when watched

    def check(self) -> SlurmRun:
        assert self.returncode == 0, f"snakemake failed (exit {self.returncode}):\n{self.output[-6000:]}"
        return self


class Controller:
    """The user's ``snakemake --profile profiles/slurm --configfile …``, running in ``workdir``."""

    def __init__(self, workdir: Path, config: Path, *args: str) -> None:
        snakemake = snakemake_command(
            workdir,
            "--profile",
            str(PROFILE),
            "--configfile",
            str(config),
            # The first squeue after 2 s instead of 40 s, and again 2 s after one saw a job end:
            # these jobs take seconds, not minutes. polled_snakemake.py caps the pauses between.
            "--slurm-init-seconds-before-status-checks",
            "2",
            *args,
        )
        snakemake[:1] = [str(BIN / "python"), str(POLLED_SNAKEMAKE)]
        command = ["timeout", "-s", "KILL", str(SNAKEMAKE_TIMEOUT_SECONDS), *snakemake]
        environment = client_environment()
        environment["PATH"] = f"{BIN}{os.pathsep}{environment['PATH']}"
        self.watcher: QueueWatcher | None = None
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

    def watch(self, slurm: SingleNodeSlurm) -> QueueWatcher:
        """Poll squeue for this run's jobs until ``wait`` returns."""
        self.watcher = QueueWatcher(slurm, self.run_id())
        return self.watcher

    def wait(self) -> SlurmRun:
        returncode = self.process.wait()
        history = self.watcher.stop() if self.watcher else None
        return SlurmRun(returncode, self.output, run_id_in(self.output), history)


def run_through_slurm(workdir: Path, config: Path, *args: str, slurm: SingleNodeSlurm | None = None) -> SlurmRun:
    with Controller(workdir, config, *args) as controller:
        if slurm is not None:
            controller.watch(slurm)
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


@dataclass
class QueueHistory:
    """squeue's view of one run: every snapshot polled while it was live, the last one taken after."""

    snapshots: list[list[SlurmJob]]

    @property
    def jobs(self) -> list[SlurmJob]:
        """Every job and array task of the run, as SLURM last showed it."""
        return self.snapshots[-1]

    def states(self) -> dict[tuple[int, int | None], list[str]]:
        """The states each job or array task was seen in, in order, repeats dropped."""
        seen: dict[tuple[int, int | None], list[str]] = defaultdict(list)
        for snapshot in self.snapshots:
            for job in snapshot:
                if not seen[job.task] or seen[job.task][-1] != job.state:
                    seen[job.task].append(job.state)
        return dict(seen)

    def first_sight(self, task: tuple[int, int | None]) -> list[SlurmJob]:
        """The first snapshot that shows ``task``."""
        return next(snapshot for snapshot in self.snapshots if any(job.task == task for job in snapshot))


class QueueWatcher:
    """Polls ``squeue`` for one run's jobs, array tasks expanded, while the run is live."""

    def __init__(self, slurm: SingleNodeSlurm, run_id: str) -> None:
        self.slurm, self.run_id = slurm, run_id
        self.snapshots: list[list[SlurmJob]] = []
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._poll, name="squeue-watcher", daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while not self._stopping.is_set():
            # slurmctld busy for a moment: the next poll sees what this one missed
            with contextlib.suppress(subprocess.SubprocessError):
                self.snapshots.append(self.slurm.jobs(self.run_id))
            self._stopping.wait(0.5)

    def stop(self) -> QueueHistory:
        self._stopping.set()
        self._thread.join()
        return QueueHistory([*self.snapshots, self.slurm.jobs(self.run_id)])


def label(rule: str, *wildcards: str) -> str:
    """How the plugin labels a job in SLURM (its ``--comment``)."""
    return f"rule_{rule}_wildcards_{'_'.join(wildcards)}"


def labels_and_states(jobs: list[SlurmJob]) -> list[tuple[str, str]]:
    return sorted((job.comment, job.state) for job in jobs)


def plain_jobs(jobs: list[SlurmJob]) -> list[SlurmJob]:
    return [job for job in jobs if job.array_task_id is None]


def arrays(jobs: list[SlurmJob]) -> dict[int, list[SlurmJob]]:
    """The array tasks among ``jobs``, by array job id, in task order."""
    tasks: dict[int, list[SlurmJob]] = defaultdict(list)
    for job in sorted(jobs, key=lambda job: job.task[1] or 0):
        if job.array_task_id is not None:
            tasks[job.array_job_id].append(job)
    return dict(tasks)


def rule_of(job: SlurmJob) -> str:
    return re.fullmatch(r"rule_(\w+?)_wildcards_.*", job.comment).group(1)  # type: ignore[union-attr]


def readme_resources() -> dict[str, tuple[int, int]]:
    """Each rule's first-attempt memory (MB) and time (minutes), as docs/cluster.md's table has them."""
    table = section(page_text("docs/cluster.md"), "## Resources")
    rows = re.findall(r"^\| (\w+) \| (\d+) \| (\d+) \|", table, re.M)
    return {rule: (int(memory), int(minutes)) for rule, memory, minutes in rows}


def assert_first_attempt_requests(jobs: list[SlurmJob]) -> None:
    """What each job asked SLURM for is its rule's figure (an array: plus the plugin's allowance)."""
    for job in jobs:
        memory, minutes = readme_resources()[rule_of(job)]
        memory += 0 if job.array_task_id is None else ARRAY_MEMORY_ALLOWANCE_MB
        assert (job.memory_mb, job.time_minutes) == (memory, minutes), job


def shard_of(workdir: Path, source: Path, image: Path) -> str:
    """The shard that encodes ``image``, by its index in the split's manifest."""
    manifest = str(workdir / "work" / "train" / "manifest.jsonl")
    relative = image.relative_to(source).as_posix()
    samples = list(read_manifest(manifest))
    index = next(sample.index for sample in samples if sample.path == relative)
    ranges = [shard_range(len(samples), SHARDS, shard) for shard in range(SHARDS)]
    return next(f"{k:05d}" for k, (start, stop) in enumerate(ranges) if start <= index < stop)


def slurm_log(slurm: SingleNodeSlurm, job: SlurmJob) -> str:
    """SLURM's log of a job or array task (``StdOut``, its %A/%a/%j filled in)."""
    task = str(job.array_task_id) if job.array_task_id is not None else ""
    path = slurm.job_details(f"{job.array_job_id}_{task}" if task else job.job_id)["StdOut"]
    path = path.replace("%A", str(job.array_job_id)).replace("%a", task).replace("%j", str(job.job_id))
    return Path(path).read_text(errors="replace")


# --------------------------------------------------------------------------------------------------
# The tests.
# --------------------------------------------------------------------------------------------------


SLURM_PROFILE = ("--profile", str(PROFILE))
SET_MERGE = ("--set-resources", "merge:mem_mb=8000", "merge:runtime=300")


@pytest.mark.parametrize(
    ("args", "changed"),
    [
        pytest.param((), {}, id="local"),
        pytest.param(SLURM_PROFILE, {}, id="slurm profile"),
        pytest.param(SET_MERGE, {"merge": (8000, 300)}, id="local, set-resources"),
        pytest.param((*SLURM_PROFILE, *SET_MERGE), {"merge": (8000, 300)}, id="slurm profile, set-resources"),
        pytest.param(("--resources", "mem_mb=3000"), {"at most": (3000, 0)}, id="local limit"),
    ],
)
def test_every_rule_asks_for_the_readme_figures(
    args: tuple[str, ...], changed: dict[str, tuple[int, int]], tmp_path: Path
) -> None:
    """One home: the rules' figures are what docs/cluster.md lists, with or without profiles/slurm (which
    holds none); --set-resources changes one rule; a local --resources limit lowers what is above it."""
    source = tmp_path / "source"
    make_images(str(source), images=4, classes=2, seed=0, workers=1)
    config = write_config(tmp_path, {"train": {"source": str(source), "shards": 2}})
    run = run_snakemake(tmp_path, "--dry-run", "--configfile", str(config), *args).check()
    one_file = {rule.name for rule in RULES if rule.runs(merging=True)}  # the default: merge, no data files
    expected = {rule: figures for rule, figures in readme_resources().items() if rule in one_file}
    if "at most" in changed:
        limit = changed["at most"][0]
        expected = {rule: (min(memory, limit), minutes) for rule, (memory, minutes) in expected.items()}
    else:
        expected.update(changed)
    assert dry_run_resources(run.output) == expected


def dry_run_resources(output: str) -> dict[str, tuple[int, int]]:
    """Each rule's mem_mb and runtime as a dry run prints them."""
    found = {}
    for rule, resources in re.findall(
        r"^(?:local)?(?:rule|checkpoint) (\w+):\n(?:    .*\n)*?    resources: (.*)$", output, re.M
    ):
        values = dict(item.split("=", 1) for item in resources.split(", "))
        if values.get("mem_mb", "").isdigit():  # rule all has none (<TBD> with default-resources)
            found[rule] = (int(values["mem_mb"]), int(values["runtime"]))
    return found


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


def test_the_slurm_profile_holds_no_rule_resources() -> None:
    profile = yaml.safe_load((PROFILE / "config.yaml").read_text())
    assert "set-resources" not in profile
    assert profile["slurm-array-jobs"] == "encode_shard"
    assert not {"mem_mb", "runtime", "cpus_per_task"} & set(str(key) for key in profile["default-resources"])


def test_demo_through_slurm_gives_the_local_result(
    slurm: SingleNodeSlurm, demo_like: tuple[dict[str, Any], dict[str, Any]], tmp_path: Path
) -> None:
    """Every shard runs as a task of an array job; the other rules as one job per split, asking for
    docs/cluster.md's figures; the local rules never reach SLURM."""
    splits, sections = demo_like
    local, cluster = tmp_path / "local", tmp_path / "slurm"
    local.mkdir()
    cluster.mkdir()
    run_snakemake(local, "--configfile", str(write_config(local, splits, **sections))).check()

    run = run_through_slurm(cluster, write_config(cluster, splits, **sections), slurm=slurm).check()

    assert run.history is not None
    jobs = run.history.jobs
    expected = [(label(rule, split), "COMPLETED") for split in splits for rule in PER_SPLIT_RULES]
    assert labels_and_states(plain_jobs(jobs)) == sorted(expected)
    shard_arrays = arrays(jobs)
    # One array per split, or one for both where both splits' shards became ready at the same time.
    sizes = sorted(len(tasks) for tasks in shard_arrays.values())
    assert sizes in (sorted(split["shards"] for split in splits.values()), [sum(s["shards"] for s in splits.values())])
    for tasks in shard_arrays.values():
        assert [task.array_task_id for task in tasks] == list(range(1, len(tasks) + 1))
        assert {(rule_of(task), task.state) for task in tasks} == {("encode_shard", "COMPLETED")}
        assert len({task.comment for task in tasks}) == 1  # the array's: its task 1's shard
    seen_live = {job.task for snapshot in run.history.snapshots[:-1] for job in snapshot}
    assert {task.task for tasks in shard_arrays.values() for task in tasks} <= seen_live
    assert_first_attempt_requests(jobs)
    assert not [job for job in jobs if rule_of(job) in LOCAL_RULES]
    for split in splits:
        assert (cluster / "results" / f"{split}.classes.png").is_file()
        assert_same_dataset(cluster / "results" / f"{split}.lmdb", local / "results" / f"{split}.lmdb")


def test_no_merge_through_slurm_gives_the_one_file_result(
    slurm: SingleNodeSlurm, tree_copy: Path, converted: Converted, tmp_path: Path
) -> None:
    """``merge: false`` on SLURM (issue 60, docs/cluster.md "Without a merge"): the shards go as one
    array, each task making its shard's data file (no job per shard besides: never one submitted alone as
    its task finishes, nor an array of the one-by-one batches plugin 2.8.0 drops); write_pointer and verify
    one job each, at the figures docs/cluster.md lists; the split reads sample for sample as the local
    one-file conversion."""
    config = write_config(tmp_path, {"train": {"source": str(tree_copy), "shards": SHARDS}}, merge=False)
    run = run_through_slurm(tmp_path, config, slurm=slurm).check()

    assert run.history is not None
    jobs = run.history.jobs
    [tasks] = arrays(jobs).values()
    assert {(rule_of(task), task.state) for task in tasks} == {("encode_shard", "COMPLETED")}
    assert len(tasks) == SHARDS
    per_split = [label(rule, "train") for rule in ("extract", "count_check", "write_pointer", "verify")]
    assert labels_and_states(plain_jobs(jobs)) == sorted((name, "COMPLETED") for name in per_split)
    assert_first_attempt_requests(jobs)
    split = tmp_path / "results" / "train.lmdb"
    assert len(list(Path(data_folder(str(split))).iterdir())) == SHARDS
    assert not list(tmp_path.rglob("*.incomplete")), "keep-incomplete kept a part-written data file"
    assert_same_samples(split, converted.lmdb, same_source_path=False)  # tree_copy: a copy of its tree


def test_a_task_failing_once_is_the_only_job_resubmitted(
    slurm: SingleNodeSlurm, tree_copy: Path, converted: Converted, tmp_path: Path
) -> None:
    """The shards go to SLURM as one array job. One shard's image cannot be read the first time
    only: its array task fails, and the one job submitted again is that shard's, alone, with twice
    the memory and time; SLURM shows every other task done once."""
    fifos = ShardFifos(tree_copy, converted)
    config = write_config(tmp_path, {"train": {"source": str(tree_copy), "shards": SHARDS}})

    with Controller(tmp_path, config) as controller:
        controller.watch(slurm)
        fifos.plant(tmp_path / "work" / "train" / "manifest.jsonl")
        bad = fifos.serve(first_task_shard(slurm, controller.run_id()), bad_then=None)
        run = controller.wait()
    run.check()

    assert run.history is not None
    jobs = run.history.jobs
    shard_jobs = [job for job in jobs if rule_of(job) == "encode_shard"]
    [(array_id, tasks)] = arrays(shard_jobs).items()
    assert [task.array_task_id for task in tasks] == list(range(1, SHARDS + 1))
    [failed] = [task for task in tasks if task.state == "FAILED"]
    assert [task.state for task in tasks if task is not failed] == ["COMPLETED"] * (SHARDS - 1)
    logs = [slurm_log(slurm, task) for task in tasks]
    assert len(set(logs)) == SHARDS, "each task's own log (the last task's job id is the array's)"
    log = slurm_log(slurm, failed)
    assert str(fifos.images[bad]) in log, "SLURM's log of the failed task names the bad image"
    assert "Removing output files" not in log  # keep-incomplete: task 1's shard survives (issue #447)
    [again] = plain_jobs(shard_jobs)
    assert (again.comment, again.state) == (label("encode_shard", "train", bad), "COMPLETED")
    memory, minutes = readme_resources()["encode_shard"]
    assert (again.memory_mb, again.time_minutes) == (2 * memory, 2 * minutes)  # attempt 2
    others = [job for job in plain_jobs(jobs) if job is not again]
    assert labels_and_states(others) == sorted((label(rule, "train"), "COMPLETED") for rule in PER_SPLIT_RULES)
    # While live: the resubmission came after SLURM had the task as failed, which it stayed.
    states = run.history.states()
    assert states[failed.task][-1] == "FAILED" and states[failed.task].count("FAILED") == 1
    assert again.job_id > array_id
    assert [job.state for job in run.history.first_sight(again.task) if job.task == failed.task] == ["FAILED"]
    assert_same_dataset(tmp_path / "results" / "train.lmdb", converted.lmdb)


def test_more_shards_than_job_slots_are_refused_before_any_submission(
    slurm: SingleNodeSlurm, tree_copy: Path, tmp_path: Path
) -> None:
    """With fewer job slots than a split's shards, plugin 2.8.0 would split them over several
    arrays, or drop them and wait forever (its issue #473): the workflow refuses the run up
    front, naming the fix, and SLURM never sees a job of it."""
    config = write_config(tmp_path, {"train": {"source": str(tree_copy), "shards": SHARDS}})
    run = run_through_slurm(tmp_path, config, "--jobs", str(SHARDS - 1))
    assert run.returncode not in (0, 137), run.output[-6000:]
    assert f"Raise --jobs (profiles/slurm sets jobs: 64) to at least {SHARDS}," in run.output
    assert run.run_id and slurm.jobs(run.run_id) == []


def test_failed_shard_is_retried_then_rerun_alone_surviving_a_preemption(
    slurm: SingleNodeSlurm, tree_copy: Path, converted: Converted, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bad image: its shard fails on every attempt (its array task, then each retry as a job of
    its own, with 2x and 3x the memory), the other shards finish. After the fix, the rerun submits
    that shard and what follows it, nothing else; when SLURM requeues that job, as pre-emption with
    PreemptMode=REQUEUE does, the run waits for its second start (no retry spent).

    The image the second start reads comes from this test through a fifo, written only once the one
    encode_shard script running is one begun after the requeue. SLURM guarantees that a requeued job
    keeps its id, counts the restart and runs again; with proctrack/linuxproc (no cgroups in
    containers) it does not guarantee that every process of its first start has ended before the
    second starts. Had two scripts the fifo open, one would take the image and the other read it
    cut short, and fail (seen once, on a loaded machine: the requeued job FAILED among the rerun's
    jobs, a retry spent). Should two scripts stay (a retry submitted while SLURM runs the job
    again), the test stops saying so."""
    fifos = ShardFifos(tree_copy, converted)
    config = write_config(tmp_path, {"train": {"source": str(tree_copy), "shards": SHARDS}})

    with Controller(tmp_path, config, "--keep-going") as controller:
        controller.watch(slurm)
        fifos.plant(tmp_path / "work" / "train" / "manifest.jsonl")
        bad_shard = fifos.serve(first_task_shard(slurm, controller.run_id()), bad_then=NOT_AN_IMAGE)
        failed = controller.wait()
    victim, original = fifos.images[bad_shard], fifos.originals[bad_shard]
    assert failed.returncode not in (0, 137), failed.output[-6000:]  # 137: killed by the timeout
    assert str(victim) in failed.output, "the controller's output names the bad file"
    done = {report.stem for report in (tmp_path / "work" / "train" / "parts").glob("*.json")}
    assert {f"{k:05d}" for k in range(SHARDS)} - done == {bad_shard}
    assert failed.history is not None
    jobs = failed.history.jobs
    [tasks] = arrays(jobs).values()
    assert sorted(task.state for task in tasks) == ["COMPLETED"] * (SHARDS - 1) + ["FAILED"]
    retried = [job for job in plain_jobs(jobs) if rule_of(job) == "encode_shard"]
    assert labels_and_states(retried) == [(label("encode_shard", "train", bad_shard), "FAILED")] * RETRIES
    memory, _ = readme_resources()["encode_shard"]
    assert [job.memory_mb for job in retried] == [memory * attempt for attempt in range(2, RETRIES + 2)]
    upstream = [(label(rule, "train"), "COMPLETED") for rule in UPSTREAM_OF_SHARDS]
    assert labels_and_states([job for job in plain_jobs(jobs) if job not in retried]) == sorted(upstream)

    with folder_times_kept(victim):
        victim.unlink()
        os.mkfifo(victim)  # the shard reading it blocks until this test writes it: certainly running
    # The fifos are a source change the main process would see (made_from.json) and the listing refuse:
    # the source is taken as recorded, as after a CLI run that has just walked it, so the rerun is the
    # failed shard's alone (a source change seen again: tests/workflow/test_made_from.py).
    monkeypatch.setenv(RECORDED_VARIABLE, str(tmp_path / "work"))
    with Controller(tmp_path, config) as controller:
        run_id = controller.run_id()
        job = wait_until(lambda: running_shard(slurm.jobs(run_id)), "the shard's job to run")
        requeued_at = requeue(slurm, job)
        feed_fifo(victim, original, tmp_path, started_after=requeued_at)
        rerun = controller.wait()
    rerun.check()
    expected = [(label("encode_shard", "train", bad_shard), "COMPLETED")]
    expected += [(label(rule, "train"), "COMPLETED") for rule in DOWNSTREAM_OF_SHARDS]
    assert labels_and_states(slurm.jobs(rerun.run_id)) == sorted(expected)
    assert slurm.job_details(job.job_id)["Restarts"] == "1"
    assert_same_dataset(tmp_path / "results" / "train.lmdb", converted.lmdb)


def running_shard(jobs: list[SlurmJob]) -> SlurmJob | None:
    return next((job for job in jobs if job.comment.startswith("rule_encode_shard_") and job.state == "RUNNING"), None)


def requeue(slurm: SingleNodeSlurm, job: SlurmJob) -> float:
    """Put a running job back in the queue and wait until it runs a second time; returns the moment
    just before the requeue (every process of the second start begins after it)."""
    requeued_at = time.time()
    slurm.command("scontrol", "requeue", str(job.job_id))
    # SLURM holds a requeued job back for two minutes (BeginTime); let it start again now.
    wait_until(lambda: slurm.job_details(job.job_id)["JobState"] == "PENDING", "the job back in the queue")
    slurm.command("scontrol", "update", f"JobId={job.job_id}", "StartTime=now")
    # Restarts counts the requeue itself; RUNNING after it is the second start
    wait_until(lambda: second_start(slurm.job_details(job.job_id)), "the job's second start")
    return requeued_at


def second_start(details: dict[str, str]) -> bool:
    return details["Restarts"] == "1" and details["JobState"] == "RUNNING"


def feed_fifo(fifo: Path, data: bytes, workdir: Path, started_after: float = 0.0) -> None:
    """Write ``data`` to the job reading ``fifo``, once one does and it is the only encode_shard
    script running in ``workdir``, begun after ``started_after``; a plain file holding ``data`` then
    takes its place (merge reads passed-through images from the source again)."""
    try:
        descriptor = wait_until(lambda: sole_reader(fifo, workdir, started_after), f"the one reader of {fifo}")
    except AssertionError as exc:
        seen = [(process.pid, round(process.create_time() - started_after, 1)) for process in shard_scripts(workdir)]
        raise AssertionError(f"{exc}; encode_shard scripts (pid, start after the requeue in s): {seen}") from None
    write_fifo(fifo, descriptor, data, data)


def sole_reader(fifo: Path, workdir: Path, started_after: float) -> int | None:
    """A write descriptor of ``fifo`` once it has a reader and only one encode_shard script runs in
    ``workdir``, begun after ``started_after`` (a reader blocked in open() holds no descriptor yet,
    so readers are told by what they run, not by their descriptors)."""
    scripts = shard_scripts(workdir)
    if len(scripts) != 1 or scripts[0].create_time() < started_after:
        return None
    return open_for_reader(fifo)


def shard_scripts(workdir: Path) -> list[psutil.Process]:
    """The encode_shard scripts running in ``workdir``, of any job and any start of one."""
    scripts = []
    for process in psutil.process_iter(["cmdline", "cwd"]):
        cmdline, cwd = process.info["cmdline"] or [], process.info["cwd"]
        if cwd == str(workdir) and any(part.endswith(".encode_shard.py") for part in cmdline):
            scripts.append(process)
    return scripts


def write_fifo(fifo: Path, descriptor: int, data: bytes, then: bytes) -> None:
    """Write ``data`` to the reader of ``fifo``; before that, a plain file holding ``then`` takes the
    fifo's place, so that every later read (merge's, a retried job's) gets ``then``."""
    # Beside the fifo, under a name no listing takes for an image: the source's top folder keeps
    # its modification time, so the next run does not list the source again.
    replacement = fifo.with_name(f".{fifo.name}.replacement")
    with folder_times_kept(fifo):
        replacement.write_bytes(then)
        os.replace(replacement, fifo)  # the reader keeps the fifo it opened
    fcntl.fcntl(descriptor, fcntl.F_SETFL, fcntl.fcntl(descriptor, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    with os.fdopen(descriptor, "wb") as pipe:
        pipe.write(data)


class ShardFifos:
    """One image of each shard replaced by a fifo: each shard's job waits there until the test
    serves it, so that the test decides what each shard reads, after seeing the array job."""

    def __init__(self, source: Path, converted: Converted) -> None:
        # The same tree, listed by the local conversion: the order count_check will find.
        samples = list(read_manifest(str(converted.workdir / "work" / "train" / "manifest.jsonl")))
        self.images: dict[str, Path] = {}
        self.originals: dict[str, bytes] = {}
        for shard in range(SHARDS):
            start, stop = shard_range(len(samples), SHARDS, shard)
            image = source / samples[(start + stop) // 2].path
            self.images[f"{shard:05d}"], self.originals[f"{shard:05d}"] = image, image.read_bytes()

    def plant(self, manifest: Path) -> None:
        """Put the fifos in place once count_check has listed the source (``manifest`` exists), before
        any shard's job starts (seconds later): the listing refuses a fifo among the images."""
        wait_until(manifest.exists, f"{manifest} (count_check done)")
        for image in self.images.values():
            with folder_times_kept(image):
                image.unlink()
                os.mkfifo(image)

    def serve(self, first: str, bad_then: bytes | None) -> str:
        """Give each shard's job its image, but the first shard other than ``first`` bytes that are
        no image, then leave ``bad_then`` (None: its image) for later reads; returns that shard."""
        bad = min(set(self.images) - {first})
        waiting = dict(self.images)
        deadline = time.monotonic() + SNAKEMAKE_TIMEOUT_SECONDS
        while waiting and time.monotonic() < deadline:
            for shard, fifo in list(waiting.items()):
                descriptor = open_for_reader(fifo)
                if descriptor is not None:
                    good = self.originals[shard]
                    data, then = (NOT_AN_IMAGE, bad_then or good) if shard == bad else (good, good)
                    write_fifo(fifo, descriptor, data, then)
                    del waiting[shard]
            time.sleep(0.2)
        assert not waiting, f"no job read the images of shards {sorted(waiting)}"
        return bad


def first_task_shard(slurm: SingleNodeSlurm, run_id: str) -> str:
    """The shard of task 1 of the run's array job: the array's comment names it and only it. Every
    other task's job waits for that shard's outputs (issue #447), so the tests fail another one."""
    task = wait_until(lambda: next((j for j in slurm.jobs(run_id) if j.array_task_id), None), "the array job")
    return task.comment.rsplit("_", 1)[1]


@contextlib.contextmanager
def folder_times_kept(image: Path) -> Iterator[None]:
    """Swap an image for a fifo (or back) as an edit in place would: its class folder keeps its
    times, so the source's listing stays as count_check made it (a file renamed into a class folder
    is a source change, and the split is listed and converted again)."""
    folder = image.parent.stat()
    yield
    os.utime(image.parent, ns=(folder.st_atime_ns, folder.st_mtime_ns))


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
