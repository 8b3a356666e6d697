# SPDX-License-Identifier: MIT
"""One command owns its OUTDIR from its first write (issue 49): ``convert`` takes the results lock
(run/lock.py) before it writes anything under OUTDIR or the work folder (the put-back of an
interrupted --overwrite, the set-aside, config.yaml, made_from.json), holds it through the run and
the upload of a URL OUTDIR, and hands the locked descriptor to the Snakemake it starts, which
adopts it (rules/resume.smk) instead of taking its own. A flock belongs to the open file
description, so parent and child hold one lock: there is no moment when neither does."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from typing import IO

from imagefolder_lmdb.run.lock import INHERITED_LOCK_VARIABLE, LOCK_NAME, hold_lock, lock_path

#: The work folder's subfolder for a run's temporaries (its own, Snakemake's and its jobs' TMPDIR).
TEMPORARY_FOLDER = ".temporary"

# results folder -> the locked file this process holds for it (one per folder: a second flock on
# another description of the same file would refuse this very process)
_OWNED: dict[str, IO[str]] = {}
# the results folders the lock created: a command that stops before writing anything leaves none
_CREATED: set[str] = set()


def own_outdir(results: str) -> None:
    """Hold the results lock of ``results`` from now on; ConfigError when another command holds it."""
    results = os.path.abspath(results)
    if results not in _OWNED:
        existed = os.path.isdir(results)
        _OWNED[results] = hold_lock(results)
        if not existed:
            _CREATED.add(results)


def clear_temporaries(work: str) -> None:
    """Remove what a killed run left in ``work``'s temporary folder: the owner's to clear, the lock
    says so (also where nothing is left to run, so an up-to-date rerun leaves none behind)."""
    shutil.rmtree(os.path.join(work, TEMPORARY_FOLDER), ignore_errors=True)


def inherited_lock_fds() -> tuple[int, ...]:
    """The descriptors a child Snakemake inherits (``pass_fds``)."""
    return tuple(handle.fileno() for handle in _OWNED.values())


def lock_environment() -> dict[str, str]:
    """The variable naming the inherited descriptor (one OUTDIR a run: the last owned), or nothing."""
    fds = inherited_lock_fds()
    return {INHERITED_LOCK_VARIABLE: str(fds[-1])} if fds else {}


@contextlib.contextmanager
def owning_outdirs() -> Iterator[None]:
    """Release what the block took once it ends (a ``convert()`` call; a CLI's lock ends with it)."""
    before = set(_OWNED)
    try:
        yield
    finally:
        for results in set(_OWNED) - before:
            release(results)


def release(results: str) -> None:
    """Let go of the lock of ``results``; a folder it created and nothing else wrote into is removed
    (the lock file first, while still held: a command waiting on it is refused, not handed an orphan)."""
    handle = _OWNED.pop(results)
    if results in _CREATED:
        _CREATED.discard(results)
        if os.listdir(results) == [LOCK_NAME]:
            os.remove(lock_path(results))
            os.rmdir(results)
    handle.close()
