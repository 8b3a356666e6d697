# SPDX-License-Identifier: MIT
"""The lock that keeps two conversions out of one results folder (OUTDIR): an exclusive flock on
``{results}/.imagefolder-lmdb.lock``, held by the Snakemake controller for its whole life (the
kernel drops it however the process ends, so a kill leaves nothing stale). It covers the command
line and a plain ``snakemake --configfile`` run alike: the workflow takes it (rules/resume.smk).
"""

from __future__ import annotations

import fcntl
import os
from typing import IO

LOCK_NAME = ".imagefolder-lmdb.lock"


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
        from imagefolder_lmdb.config.problems import ConfigError, Problem

        text = f"another conversion is writing into {results} (it holds {lock_path(results)}): wait until it ends"
        raise ConfigError([Problem("", f"{text}, or convert into another folder")]) from None
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
