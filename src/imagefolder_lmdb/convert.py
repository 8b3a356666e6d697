# SPDX-License-Identifier: MIT
"""``imagefolder_lmdb.convert()`` and ``imagefolder-lmdb convert``: the packaged workflow, run by
Snakemake's own command line.

The workflow is the checkout's Snakefile, rules, rule scripts, config schema, report captions and
profiles; the wheel holds them inside the package (run/workflow_folder.py finds either). A conversion is
``python -m snakemake --snakefile <workflow>/Snakefile --configfile FILE ...`` with the
interpreter running this, so progress, errors and the end-of-run summary are the workflow's own,
and the same command after a kill resumes as ``snakemake`` does (the work folder holds its state).

- One source: ``convert(SOURCE, OUTDIR)`` writes ``WORK/config.yaml`` (``WORK`` is ``OUTDIR/work``
  unless given) naming that source as one split, and runs Snakemake in ``WORK``: the dataset is
  ``OUTDIR/train.lmdb``, its verify report and contact sheet beside it.
- A whole config: ``convert(configfile=FILE)`` runs it from the current folder, exactly as
  ``snakemake --configfile FILE`` with the workflow's Snakefile would.

This module is the entry, its arguments and what it returns; the steps are the command line's too:
the request (run/request.py), the invocation (run/invocation.py), a URL OUTDIR (publish/destination.py).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from imagefolder_lmdb.run.convert_error import ConvertError
from imagefolder_lmdb.run.workflow_folder import PROFILES, SNAKEFILE, WORKFLOW

if TYPE_CHECKING:
    from imagefolder_lmdb.run.launch import Interrupted
    from imagefolder_lmdb.run.outputs import SplitOutputs

__all__ = ["PROFILES", "SNAKEFILE", "WORKFLOW", "ConvertError", "Interrupted", "SplitOutputs", "convert"]

PathLike = str | os.PathLike[str]


def convert(
    source: PathLike | Sequence[PathLike] | None = None,
    outdir: PathLike | None = None,
    *,
    split: str | None = None,
    layout: str = "imagefolder",
    shards: int | None = None,
    work: PathLike | None = None,
    cores: int | str | None = None,
    profile: str | None = None,
    configfile: PathLike | None = None,
    snakemake_args: Sequence[str] = (),
    config: dict[str, Any] | None = None,
    splits: Sequence[str] = (),
    overwrite: bool = False,
    classes_from: PathLike | None = None,
    clean: bool = False,
    verbose: bool = False,
    is_valid_file: Callable[[str], bool] | None = None,
) -> dict[str, SplitOutputs]:
    """Convert ``source`` into ``outdir/<split>.lmdb``: every split it holds (train/, val/, test/;
    ``splits`` names others), or the one named ``split`` (or every split of ``configfile``).

    Args:
        source: an ImageFolder, a folder of split folders, a .tar/.tar.gz/.tgz/.zip of either, the
            ILSVRC2012 downloads' folder, Kaggle's zip; or shard files (webdataset, parquet).
        outdir: where each dataset and its reports go; a URL (s3://b/prefix): made in ``work``, uploaded.
        layout: how ``source`` is organised (config/schema.yaml). shards: encode jobs per split (None: by count).
        work: the work folder (``outdir/work``): delete it after success, keep it to resume.
        cores: CPU cores to use (an int or ``"all"``); ``"all"`` unless ``profile`` is given.
        profile: ``"slurm"`` (the packaged SLURM profile) or a Snakemake profile of your own.
        configfile: a whole config, run from the current folder instead of ``source``/``outdir``.
        snakemake_args: further Snakemake options (paths in them from the current folder), e.g. ``["--dry-run"]``.
        config: config keys, as a config file sets them (``{"splits": {"*": {...}}}``: every split).
        overwrite: replace a dataset in ``outdir`` made from another source or with other settings.
        classes_from: a dataset whose class list (its numbering) this conversion takes.
        clean: remove the work folder after success (the same call again then finds nothing to do).
        verbose: Snakemake's own output (every job) instead of the progress board.
        is_valid_file: ImageFolder's: a function importable by name, no lambda (docs/sources.md).

    Returns each split's final files by name; ConvertError: a failure (``lines``: what to do); Interrupted
    (a KeyboardInterrupt) once Snakemake and its jobs have stopped (SIGTERM: run/launch.py).
    """
    return _converted(dict(locals()))


def _converted(given: dict[str, Any]) -> dict[str, SplitOutputs]:
    """``convert`` with ``given``, its arguments by name. The run's modules are imported here, not at the
    top: the package imports this module, and every rule job imports the package."""
    from imagefolder_lmdb.publish.destination import published, replaceable, url_outdir
    from imagefolder_lmdb.run.invocation import plan_run, run_planned
    from imagefolder_lmdb.run.launch import interruptible_call
    from imagefolder_lmdb.run.ownership import owning_outdirs
    from imagefolder_lmdb.run.request import (
        ARGUMENTS,
        command_request,
        predicate_importable,
        python_settings,
        run_options,
    )

    config, is_valid_file, configfile = given["config"], given["is_valid_file"], given["configfile"]
    destination, outdir, work = url_outdir(given["source"], given["outdir"], given["work"])  # checks Snakemake too
    arguments = {name: value for name, value in (given | {"outdir": outdir, "work": work}).items() if name in ARGUMENTS}
    with interruptible_call(), owning_outdirs(), predicate_importable(config, is_valid_file, configfile):
        request = command_request(arguments, python_settings(config, given["shards"], is_valid_file), cli=False)
        options = run_options(given["cores"], given["profile"], given["snakemake_args"], cli=False)
        run = plan_run(request, outdir, work, configfile, options)
        run, destination = replaceable(run, destination, given["overwrite"])  # before converting, not after
        built = run_planned(run, given["clean"], bool(given["snakemake_args"]), given["verbose"], python=True)
        return published(built, destination, given["overwrite"])


def __getattr__(name: str) -> Any:
    # PEP 562: the names this module lists that need the run's modules, imported when asked for.
    if name == "SplitOutputs":
        from imagefolder_lmdb.run.outputs import SplitOutputs

        return SplitOutputs
    if name == "Interrupted":
        from imagefolder_lmdb.run.launch import Interrupted

        return Interrupted
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
