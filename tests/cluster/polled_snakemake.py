"""The snakemake CLI for the cluster tests' controller, with the SLURM plugin's pause between two
status checks capped at ``CAP_SECONDS``.

    python tests/cluster/polled_snakemake.py SNAKEMAKE_ARGS...

Plugin 2.8.0 waits ``--slurm-init-seconds-before-status-checks`` (2 s in the tests) after a check
that saw a job end, and 10 s more after each check that saw none, up to 180 s (its
``check_active_jobs``; the growth has no option): made for jobs of hours on a busy cluster. The test
cluster's jobs take seconds, so each step of a run waited up to 22 s for a check to notice it had
ended. Capping the pause changes nothing the tests look at: every check is the same squeue of the
run's jobs, and jobs and their states are what SLURM records; polling more often only sees more of
their passing states (a requeued job's PENDING, say), which makes the tests stricter, not weaker.
The jobs themselves run the plain snakemake (the job step plugin), untouched.
"""

from __future__ import annotations

import sys

from snakemake.cli import main
from snakemake_executor_plugin_slurm import Executor
from snakemake_interface_executor_plugins.executors.remote import RemoteExecutor

CAP_SECONDS = 3


def capped(executor: RemoteExecutor, seconds: float | None) -> None:
    """The plugin's next pause, at most ``CAP_SECONDS``."""
    executor._next_seconds_between_status_checks = None if seconds is None else min(seconds, CAP_SECONDS)


Executor.next_seconds_between_status_checks = property(  # type: ignore[assignment]
    RemoteExecutor.next_seconds_between_status_checks.fget, capped
)

if __name__ == "__main__":
    sys.exit(main())
