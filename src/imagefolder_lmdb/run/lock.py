# SPDX-License-Identifier: MIT
"""The lock that keeps two conversions out of one results folder (OUTDIR): an exclusive flock on
``{results}/.imagefolder-lmdb.lock``, taken by ``convert`` before its first write (run/ownership.py)
and handed to the Snakemake it starts, or taken by the workflow in a plain ``snakemake --configfile``
run (rules/resume.smk); the kernel drops it however its holders end, so a kill leaves nothing stale.
"""

from __future__ import annotations

import fcntl
import os
from typing import IO

LOCK_NAME = ".imagefolder-lmdb.lock"
#: names the descriptor of the lock a ``convert`` holds and hands to its Snakemake (pass_fds)
INHERITED_LOCK_VARIABLE = "IMAGEFOLDER_LMDB_RESULTS_LOCK_FD"


def lock_path(results: str) -> str:
    return os.path.join(results, LOCK_NAME)


def hold_lock(results: str) -> IO[str]:
    """The open, locked file (keep it open); ConfigError naming the other run when it is held."""
    os.makedirs(results, exist_ok=True)
    handle = open(lock_path(results), "a")  # noqa: SIM115 - held until the process exits
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        from imagefolder_lmdb.config.problems import Problem, config_error

        text = f"another conversion is writing into {results} (it holds {lock_path(results)}): wait until it ends"
        raise config_error([Problem("", f"{text}, or convert into another folder")]) from None
    return handle  # nothing written: the file's bytes and time stay as they were


def held_elsewhere(results: str) -> bool:
    """Whether a running conversion holds the lock of ``results`` (checked, then released at once)."""
    if not os.path.exists(lock_path(results)):
        return False
    with open(lock_path(results), "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
    return False


def adopt_or_hold_lock(results: str) -> IO[str]:
    """The lock the parent ``convert`` handed down (its descriptor, when it is the lock of
    ``results``), else this process's own (:func:`hold_lock`)."""
    named = os.environ.get(INHERITED_LOCK_VARIABLE)
    if named is not None and named.isdigit() and os.path.exists(lock_path(results)):
        try:
            inherited, present = os.fstat(int(named)), os.stat(lock_path(results))
        except OSError:  # not inherited after all (a variable left in a shell)
            pass
        else:
            if (inherited.st_dev, inherited.st_ino) == (present.st_dev, present.st_ino):
                return open(int(named), "a", closefd=False)
    return hold_lock(results)
