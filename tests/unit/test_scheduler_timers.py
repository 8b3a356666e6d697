"""A finished Snakemake run exits at once: the workflow's onsuccess cancels the job scheduler's pending
reevaluation timers (run/scheduler_timers.py), and no other timer."""

from __future__ import annotations

import inspect
import threading

from snakemake.scheduling import job_scheduler

from imagefolder_lmdb.run.scheduler_timers import SCHEDULER_TIMER_FUNCTION, cancel_scheduler_timers


class JobScheduler:
    """Starts a timer as Snakemake's scheduler does: its function's qualified name is the same."""

    def _schedule_reevalutation(self, delay: float) -> threading.Timer:
        timer = threading.Timer(delay, lambda: None)
        timer.start()
        return timer


def test_the_scheduler_s_timers_are_cancelled_and_no_other() -> None:
    theirs = JobScheduler()._schedule_reevalutation(30)
    other = threading.Timer(30, lambda: None)
    other.start()
    try:
        assert cancel_scheduler_timers() == 1
        theirs.join(5)
        assert not theirs.is_alive() and other.is_alive()
    finally:
        other.cancel()
        theirs.cancel()


def test_snakemake_still_starts_its_timers_as_this_module_knows_them() -> None:
    """An upgrade of Snakemake that renames them fails here, not silently a second slower per run."""
    method = job_scheduler.JobScheduler._schedule_reevalutation
    assert "threading.Timer(" in inspect.getsource(method)
    assert f"{method.__qualname__}.<locals>.<lambda>" == SCHEDULER_TIMER_FUNCTION
