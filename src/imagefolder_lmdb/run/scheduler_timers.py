# SPDX-License-Identifier: MIT
"""A finished Snakemake run exits at once, not when its scheduler's last timers fire.

Snakemake's job scheduler rate-limits job starts (``--max-jobs-per-timespan``, 100 a second by
default, which cannot be switched off): after each round of jobs it starts a ``threading.Timer`` of
one timespan that wakes the scheduler again (``JobScheduler._schedule_reevalutation``). The timers
are not daemon threads, so the interpreter waits for the last of them before exiting: every run,
however small, ended up to a second after its last job (BENCHMARKS.md §20). By the time the
workflow's ``onsuccess`` runs, the scheduler has finished and nothing is left for them to wake; the
Snakefile's ``onsuccess`` cancels them. Only those timers are touched, recognised by the function
Snakemake gives them; a Snakemake that names it otherwise keeps its timers, and its second.
"""

from __future__ import annotations

import threading

#: The qualified name of the function Snakemake's reevaluation timers run (Snakemake 9.x).
SCHEDULER_TIMER_FUNCTION = "JobScheduler._schedule_reevalutation.<locals>.<lambda>"


def wakes_the_scheduler(timer: threading.Timer) -> bool:
    """Whether ``timer`` is one of Snakemake's job scheduler's reevaluation timers."""
    return getattr(timer.function, "__qualname__", "") == SCHEDULER_TIMER_FUNCTION


def cancel_scheduler_timers() -> int:
    """Cancel the job scheduler's pending timers (call once the scheduler is done); how many there were."""
    cancelled = 0
    for thread in threading.enumerate():
        if isinstance(thread, threading.Timer) and wakes_the_scheduler(thread):
            thread.cancel()
            cancelled += 1
    return cancelled
