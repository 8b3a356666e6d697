# SPDX-License-Identifier: MIT
"""A conversion's dry run (``convert ... -- --dry-run`` or ``-n``; ``snakemake_args=["-n"]``) writes
nothing: no OUTDIR, lock file, work folder, config.yaml or made_from.json, no set-aside of what
``--overwrite`` would replace, no ``--clean``. Snakemake still plans in a folder of its own: a
temporary one (in $TMPDIR, gone after) holding the config and a copy of the work folder's Snakemake
records (which outputs are incomplete, and what made each), so that it judges the outputs as the
real run would. What the plan found changed in a source is said by the plan's own lines, since the
made_from.json that would tell Snakemake is not written (run/made_from.py).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from imagefolder_lmdb.run.config_file import write_config
from imagefolder_lmdb.run.launch import run_snakemake, snakemake_command
from imagefolder_lmdb.run.lock import lock_path
from imagefolder_lmdb.run.shared_temporaries import shared_temporary_folder

#: What of the work folder's ``.snakemake`` a dry run reads: the records of each output and the marks of
#: incomplete ones (Snakemake's), the folder listings' cache (work/folder_listing.py). Not conda
#: environments or containers, which are large and which a dry run does not make.
SNAKEMAKE_STATE = ("metadata", "incomplete", "imagefolder-lmdb.listing-stamps.json")


def is_dry_run(options: Sequence[str]) -> bool:
    """Whether Snakemake's options ask for a dry run (run/made_from.py's rule, the Snakefile's too)."""
    from imagefolder_lmdb.run.made_from import dry_run

    return dry_run(list(options))


def takes_lock(results: str, dry_run: bool) -> bool:
    """Whether the plan takes OUTDIR's lock: always to write; for a dry run only where its file is
    there already (holding it writes nothing), so that a run writing into OUTDIR still refuses it."""
    return not dry_run or os.path.exists(lock_path(results))


def run_dry(config: dict[str, Any], options: Sequence[str], verbose: bool) -> None:
    """Snakemake's dry run of a planned conversion's ``config`` in a temporary folder; ConvertError
    on failure."""
    from imagefolder_lmdb.run.made_from import RECORDED_VARIABLE

    with shared_temporary_folder() as scratch, recorded(RECORDED_VARIABLE, config["work"]):
        folder = Path(scratch) / "snakemake"
        copy_snakemake_state(Path(config["work"]), folder)
        configfile = write_config(config, folder / "config.yaml")
        run_snakemake(snakemake_command(configfile, folder, options, verbose), verbose)


def copy_snakemake_state(work: Path, folder: Path) -> None:
    """``folder/.snakemake`` with the SNAKEMAKE_STATE the work folder has (none in a new one)."""
    state = folder / ".snakemake"
    state.mkdir(parents=True)
    for name in SNAKEMAKE_STATE:
        found = work / ".snakemake" / name
        if found.is_dir():
            shutil.copytree(found, state / name, symlinks=True)
        elif found.is_file():
            shutil.copy2(found, state / name)


@contextlib.contextmanager
def recorded(variable: str, work: str) -> Iterator[None]:
    """The Snakefile told that the plan judged every split (its lines are said): it walks no source
    again and, in a dry run, says nothing twice (rules/common.smk)."""
    previous = os.environ.get(variable)
    os.environ[variable] = os.path.abspath(work)
    try:
        yield
    finally:
        if previous is None:
            del os.environ[variable]
        else:
            os.environ[variable] = previous
