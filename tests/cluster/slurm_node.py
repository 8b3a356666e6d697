"""A throwaway single-node SLURM on loopback for the cluster tests.

This process starts munged, slurmctld and slurmd in the foreground, keeps their pids, and stops
exactly those. Facts that shaped it (Debian 12, SLURM 22.05, snakemake-executor-plugin-slurm 2.8):

- The plugin's job step drops every ``SLURM_*`` variable before it calls srun, so ``SLURM_CONF``
  cannot point elsewhere: the config has to be ``/etc/slurm/slurm.conf``. It is written with a
  marker line and removed again by ``stop()``; a config without the marker belongs to someone
  else and is never touched.
- No slurmdbd: job states come from squeue, which only knows jobs for ``MinJobAge`` seconds.
- No cgroups in containers: process tracking by /proc, no task confinement.
- munged runs on its own socket and key here, so a system munged (if any) is left alone.
- One config path means one test cluster per machine: a second test session waits until the first
  one's cluster has stopped (a lock file beside the config, and the first one's slurmctld pid).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import psutil

SLURM_CONF = Path("/etc/slurm/slurm.conf")
MARKER = "# Written by imagefolder-lmdb tests/cluster: a throwaway single-node test cluster."
PACKAGES = ("slurm-wlm", "munge")
PROGRAMS = ("munged", "slurmctld", "slurmd", "sbatch", "srun", "squeue", "scancel", "scontrol", "sinfo")
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: Jobs stay visible to squeue this long after they end (the plugin's status source, and the tests').
MIN_JOB_AGE_SECONDS = 3600
#: Held by the session whose cluster owns SLURM_CONF: one path, so one test cluster per machine.
#: Left in place after (removing a lock file others may wait on would let two sessions hold it).
CLAIM = Path(tempfile.gettempdir()) / "imagefolder-lmdb-slurm-test.lock"
#: How long a session waits for another session's cluster to stop before skipping.
CLAIM_TIMEOUT_SECONDS = 1200
#: Node memory the profile's requests need: up to 4000 MB for a first attempt (extract, merge, …)
#: and room for a retried job.
MIN_NODE_MEMORY_MB = 6000


class SlurmUnavailable(Exception):
    """This machine cannot run the test cluster; the message says why (the test is skipped)."""


def which(program: str) -> str | None:
    return shutil.which(program, path=f"{os.environ.get('PATH', '')}:{SYSTEM_PATH}")


def missing_programs() -> list[str]:
    return [program for program in PROGRAMS if which(program) is None]


def apt_get(*args: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    return subprocess.run(["apt-get", *args], capture_output=True, text=True, timeout=900, env=environment, check=False)


def ensure_installed() -> None:
    """Install Debian's SLURM and munge when missing; raise SlurmUnavailable where that fails."""
    if os.geteuid() != 0:
        raise SlurmUnavailable("the SLURM test cluster needs root (it starts munged, slurmctld, slurmd)")
    if not missing_programs():
        return
    if which("apt-get") is None:
        raise SlurmUnavailable(f"{', '.join(missing_programs())} missing and no apt-get to install {PACKAGES}")
    install = apt_get("install", "-y", "-q", "--no-install-recommends", *PACKAGES)
    if install.returncode != 0:  # a fresh container has no package lists yet
        apt_get("update", "-q")
        install = apt_get("install", "-y", "-q", "--no-install-recommends", *PACKAGES)
    if missing_programs():
        raise SlurmUnavailable(
            f"apt-get install {' '.join(PACKAGES)} failed (exit {install.returncode}); "
            f"still missing: {', '.join(missing_programs())}\n{install.stderr[-2000:]}"
        )


def ensure_plugins(python: Path, requirements: Path, folder: Path) -> Path:
    """The executor plugins that ``requirements`` pins (requirements-slurm.txt), installed into
    ``folder`` unless there already (without their dependencies: the rest are in the venv); returns
    it. Not into the venv itself: Snakemake imports every installed executor plugin at each start,
    and pandas wherever it is installed, in every run of every other test (~0.8 s each). Raises
    SlurmUnavailable where pip fails."""
    stamp = folder / requirements.name
    if stamp.exists() and stamp.read_text() == requirements.read_text():
        return folder
    install = [str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--upgrade", "--target", str(folder)]
    install += ["-r", str(requirements)]
    result = subprocess.run(install, capture_output=True, text=True, timeout=600, check=False)
    if result.returncode != 0:
        raise SlurmUnavailable(f"pip could not install {requirements} into {folder}:\n{result.stderr[-2000:]}")
    shutil.copyfile(requirements, stamp)
    return folder


def client_environment() -> dict[str, str]:
    """The caller's environment without SLURM's client variables, which would override the config
    (SLURM_CONF) or add options to every sbatch (SBATCH_PARTITION, SBATCH_ACCOUNT, ...)."""
    environment = {
        name: value for name, value in os.environ.items() if not name.startswith(("SLURM_", "SBATCH_", "SRUN_"))
    }
    environment["PATH"] = f"{environment.get('PATH', '')}:{SYSTEM_PATH}"
    return environment


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def node_line() -> str:
    """This machine as SLURM sees it: ``NodeName=<host> CPUs=… RealMemory=…`` from ``slurmd -C``.

    Taken as measured, since a node that claims more than slurmd finds is drained at once."""
    output = subprocess.run(
        [which("slurmd") or "slurmd", "-C"], capture_output=True, text=True, env=client_environment(), check=True
    ).stdout
    line = next(line for line in output.splitlines() if line.startswith("NodeName="))
    memory = int(line.split("RealMemory=")[1].split()[0])
    if memory < MIN_NODE_MEMORY_MB:
        raise SlurmUnavailable(f"this machine has {memory} MB; the profile's jobs ask up to {MIN_NODE_MEMORY_MB} MB")
    return line


#: squeue's fields for SlurmJob, in its order: job id (one per array task), array job id (the job id
#: itself for a plain job), array task id (N/A for a plain job), name, comment, state, memory, time.
SQUEUE_FORMAT = "%A|%F|%K|%j|%k|%T|%m|%l"


def live_test_cluster() -> bool:
    """Whether SLURM_CONF is a test cluster's whose slurmctld still runs (its pid file names it)."""
    if not SLURM_CONF.exists():
        return False
    config = SLURM_CONF.read_text(errors="replace")
    pid_file = re.search(r"^SlurmctldPidFile=(.+)$", config, re.M)
    if MARKER not in config or pid_file is None:
        return False
    try:
        return psutil.pid_exists(int(Path(pid_file.group(1)).read_text().strip()))
    except (OSError, ValueError):  # never started, or gone with its folder
        return False


@dataclass(frozen=True)
class SlurmJob:
    job_id: int
    array_job_id: int  # what all tasks of one array share; job_id for a plain job
    array_task_id: int | None  # None for a plain job
    name: str  # the plugin names every job of a run after the run's UUID
    comment: str  # rule_<rule>_wildcards_<values joined by _>; an array's names its first job only
    state: str  # COMPLETED, FAILED, RUNNING, ...
    memory_mb: int  # the job's --mem
    time_minutes: int  # the job's --time

    @classmethod
    def from_squeue(cls, row: str) -> SlurmJob:
        job_id, array_job_id, task, name, comment, state, memory, time_limit = row.split("|")
        return cls(
            int(job_id),
            int(array_job_id),
            None if task == "N/A" else int(task),
            name,
            comment,
            state,
            megabytes(memory),
            minutes(time_limit),
        )

    @property
    def task(self) -> tuple[int, int | None]:
        """What stays the same for one job, or one array task, from its submission to its end."""
        return self.array_job_id, self.array_task_id


def megabytes(memory: str) -> int:
    """squeue's memory (``1000M``, ``4G``) in MB."""
    units = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}
    return round(float(memory[:-1]) * units[memory[-1]]) if memory[-1] in units else int(memory)


def minutes(time_limit: str) -> int:
    """squeue's time limit (``10:00``, ``1:00:00``, ``1-00:00:00``) in minutes."""
    days, _, clock = time_limit.rpartition("-")
    hours, mins, _seconds = ([0, 0] + [int(part) for part in clock.split(":")])[-3:]
    return int(days or 0) * 24 * 60 + hours * 60 + mins


class SingleNodeSlurm:
    """munged + slurmctld + slurmd, all state and logs under ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self._tracked: list[psutil.Process] = []  # the daemons and their helpers (slurmscriptd)
        self._claim: IO[str] | None = None
        self.started_at = 0.0

    # ----------------------------------------------------------------------------------------------
    # Start.
    # ----------------------------------------------------------------------------------------------

    def start(self, timeout: float = 120) -> None:
        if SLURM_CONF.exists() and MARKER not in SLURM_CONF.read_text(errors="replace"):
            raise SlurmUnavailable(f"{SLURM_CONF} exists and is not ours; not touching a real SLURM setup")
        self._claim_machine(CLAIM_TIMEOUT_SECONDS)
        for folder in ("munge", "state", "spool", "logs"):
            (self.root / folder).mkdir(parents=True, exist_ok=True)
        self.started_at = time.time()
        self._start_munged()
        self._write_config()
        self._launch("slurmctld", [which("slurmctld") or "slurmctld", "-D", "-i"])
        self._launch("slurmd", [which("slurmd") or "slurmd", "-D"])
        self._wait_until_idle(timeout)

    def _claim_machine(self, timeout: float) -> None:
        """Wait until no other test session's cluster runs here: two would share SLURM_CONF, and
        each would send the other's jobs to its own controller and cancel them when it stops."""
        SLURM_CONF.parent.mkdir(parents=True, exist_ok=True)
        self._claim = open(CLAIM, "w")  # noqa: SIM115 - held until stop(); the kernel drops it at exit
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(BlockingIOError):
                fcntl.flock(self._claim, fcntl.LOCK_EX | fcntl.LOCK_NB)
                if not live_test_cluster():  # also one of a session that takes no lock
                    return
                fcntl.flock(self._claim, fcntl.LOCK_UN)
            if time.monotonic() > deadline:
                raise SlurmUnavailable(f"another test session's SLURM cluster still runs here after {timeout:.0f} s")
            time.sleep(2)

    def _start_munged(self) -> None:
        munge = self.root / "munge"
        munge.chmod(0o755)  # munged wants its socket's folder searchable by everyone
        key = munge / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        self._launch(
            "munged",
            [
                which("munged") or "munged",
                "--foreground",
                "--force",  # as root, with a key outside /etc/munge
                f"--socket={munge / 'munge.socket'}",
                f"--key-file={key}",
                f"--pid-file={munge / 'munged.pid'}",
                f"--seed-file={munge / 'munged.seed'}",
                f"--log-file={self.root / 'logs' / 'munged.log'}",
            ],
        )
        self._wait_for(lambda: (munge / "munge.socket").exists(), "munged's socket", 30)

    def _write_config(self) -> None:
        root, logs = self.root, self.root / "logs"
        node = node_line()
        host = node.split()[0].split("=", 1)[1]
        settings = {
            "ClusterName": "imagefolder-lmdb-test",
            "SlurmctldHost": f"{host}(127.0.0.1)",
            "SlurmctldPort": free_port(),
            "SlurmdPort": free_port(),
            # Listen on loopback only, never on every interface.
            "CommunicationParameters": "NoInAddrAny,NoCtldInAddrAny",
            "SlurmUser": "root",
            "AuthType": "auth/munge",
            "CredType": "cred/munge",
            "AuthInfo": f"socket={root / 'munge' / 'munge.socket'}",
            "StateSaveLocation": root / "state",
            "SlurmdSpoolDir": root / "spool",
            "SlurmctldPidFile": root / "slurmctld.pid",
            "SlurmdPidFile": root / "slurmd.pid",
            "SlurmctldLogFile": logs / "slurmctld.log",
            "SlurmdLogFile": logs / "slurmd.log",
            "SlurmctldDebug": "info",
            "SlurmdDebug": "info",
            # No cgroups here (containers): track processes by /proc, confine nothing.
            "ProctrackType": "proctrack/linuxproc",
            "TaskPlugin": "task/none",
            "JobAcctGatherType": "jobacct_gather/none",
            "AccountingStorageType": "accounting_storage/none",
            "JobCompType": "jobcomp/none",
            "MpiDefault": "none",
            "MailProg": "/bin/true",
            "SelectType": "select/cons_tres",
            "SelectTypeParameters": "CR_Core_Memory",
            # Look at pending jobs every 2 s, not 60 s: a requeued job starts soon after it is eligible.
            "SchedulerParameters": "sched_interval=2",
            # Without accounting, squeue is the only source of job states, for this long after the end.
            "MinJobAge": MIN_JOB_AGE_SECONDS,
            "ReturnToService": 2,
        }
        lines = [MARKER, *(f"{name}={value}" for name, value in settings.items())]
        lines.append(f"{node} NodeAddr=127.0.0.1 State=UNKNOWN")
        lines.append(f"PartitionName=test Nodes={host} Default=YES MaxTime=INFINITE State=UP")
        SLURM_CONF.parent.mkdir(parents=True, exist_ok=True)
        SLURM_CONF.write_text("\n".join(lines) + "\n")
        # The daemons and this object's own commands read a private copy: they stay on this
        # cluster even if a test session of older code overwrites SLURM_CONF meanwhile.
        self.config.write_text(SLURM_CONF.read_text())

    @property
    def config(self) -> Path:
        return self.root / "slurm.conf"

    def environment(self) -> dict[str, str]:
        return {**client_environment(), "SLURM_CONF": str(self.config)}

    def _launch(self, name: str, command: list[str]) -> None:
        log = open(self.root / "logs" / f"{name}.out", "wb")  # noqa: SIM115 - the child keeps it
        process = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=self.environment() if self.config.exists() else client_environment(),
            start_new_session=True,  # a Ctrl-C to pytest reaches pytest, not the daemons
        )
        log.close()
        self.processes[name] = process
        self._tracked.append(psutil.Process(process.pid))

    def _wait_until_idle(self, timeout: float) -> None:
        def idle() -> bool:
            result = self.command("sinfo", "--noheader", "--Node", "--format=%T", check=False)
            return result.stdout.split() == ["idle"]

        self._wait_for(idle, "the node to be idle", timeout)

    def _wait_for(self, condition: Callable[[], bool], what: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            for name, process in self.processes.items():
                if process.poll() is not None:
                    raise RuntimeError(f"{name} exited ({process.returncode}) while waiting for {what}\n{self.logs()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what}\n{self.logs()}")
            time.sleep(0.5)

    # ----------------------------------------------------------------------------------------------
    # Use.
    # ----------------------------------------------------------------------------------------------

    def command(self, program: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [which(program) or program, *args],
            capture_output=True,
            text=True,
            timeout=60,
            env=self.environment() if self.config.exists() else client_environment(),
            check=check,
        )

    def jobs(self, name: str | None = None) -> list[SlurmJob]:
        """Every job slurmctld still knows (finished ones for MinJobAge), optionally of one name;
        an array's tasks one by one, also those still pending (``--array``)."""
        args = ["--states=all", "--noheader", "--array", f"--format={SQUEUE_FORMAT}"]
        if name:
            args.append(f"--name={name}")
        rows = self.command("squeue", *args).stdout.splitlines()
        return sorted((SlurmJob.from_squeue(row) for row in rows), key=lambda job: (job.task[0], job.task[1] or 0))

    def job_details(self, job_id: int | str) -> dict[str, str]:
        """``scontrol show job``'s fields (JobState, Restarts, Reason, …) of one job; an array task
        as ``<array id>_<task>`` (the last task's own id is the array's, which shows every task)."""
        line = self.command("scontrol", "--oneliner", "show", "job", str(job_id)).stdout
        return dict(field.split("=", 1) for field in line.split() if "=" in field)

    def logs(self, tail: int = 3000) -> str:
        parts = []
        for path in sorted((self.root / "logs").glob("*")):
            parts.append(f"--- {path.name}\n{path.read_text(errors='replace')[-tail:]}")
        return "\n".join(parts)

    # ----------------------------------------------------------------------------------------------
    # Stop.
    # ----------------------------------------------------------------------------------------------

    @property
    def tracked(self) -> list[psutil.Process]:
        """The daemons this object started and the helpers they started (slurmscriptd)."""
        return list(self._tracked)

    def stop(self) -> None:
        """Cancel what still runs, remove our config, stop our daemons by pid. Idempotent; the
        config goes and the daemons stop even when cancelling failed half-way."""
        try:
            if "slurmctld" in self.processes and self.processes["slurmctld"].poll() is None:
                # Best effort: a controller that no longer answers must not keep the daemons running.
                with contextlib.suppress(subprocess.SubprocessError):
                    self._cancel_all_jobs()
        finally:
            self._tracked.extend(helper for helper in self._helpers() if helper not in self._tracked)
            # The config goes before the daemons: at no moment does it name a controller that is
            # down (every snakemake start that reads one waits ~9 s on scontrol). This object's
            # commands and the daemons read their private copy.
            if SLURM_CONF.exists() and self.owns(SLURM_CONF.read_text(errors="replace")):
                SLURM_CONF.unlink()
            self._stop_daemons()

    def _stop_daemons(self) -> None:
        for name in ("slurmd", "slurmctld", "munged"):
            process = self.processes.get(name)
            if process is None or process.poll() is not None:
                continue
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self._claim is not None:
            self._claim.close()  # releases the claim
            self._claim = None

    def owns(self, config: str) -> bool:
        """Whether ``config`` is the one this object wrote (not another session's)."""
        return MARKER in config and f"StateSaveLocation={self.root / 'state'}\n" in config

    def _helpers(self) -> list[psutil.Process]:
        helpers = []
        for process in self._tracked:
            with contextlib.suppress(psutil.Error):  # already gone
                helpers.extend(process.children(recursive=True))
        return helpers

    def _cancel_all_jobs(self) -> None:
        """Job processes run under slurmstepd, which outlives slurmd: end them through SLURM first."""
        active = [job for job in self.jobs() if job.state in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING")]
        if not active:
            return
        self.command("scancel", *(str(job.job_id) for job in active), check=False)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if not any(job.state in ("RUNNING", "CONFIGURING", "COMPLETING") for job in self.jobs()):
                return
            time.sleep(0.5)
