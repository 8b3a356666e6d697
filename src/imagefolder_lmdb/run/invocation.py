# SPDX-License-Identifier: MIT
"""One Snakemake invocation of a conversion (``Run``): planned from a ConvertRequest (its config
written into the work folder) or a user's config file, then run, or its summary shown where every
output is up to date; ``--overwrite``'s old files set aside around it (run/overwrite.py)."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from imagefolder_lmdb.run.config_file import config_outputs, configfile_folders, write_config
from imagefolder_lmdb.run.launch import ConvertError, Interrupted, run_snakemake, snakemake_command
from imagefolder_lmdb.run.outputs import SplitOutputs, outputs_of
from imagefolder_lmdb.run.overwrite import put_back, set_aside
from imagefolder_lmdb.work.paths import RunPaths
from imagefolder_lmdb.writing.hold_points import hold_point

if TYPE_CHECKING:
    from imagefolder_lmdb.run.request import ConvertRequest

PathLike = str | os.PathLike[str]


@dataclass(frozen=True)
class Run:
    """One Snakemake invocation: its config file, the folder it runs in, what it will produce."""

    configfile: Path
    directory: Path | None  # None: the current folder (a user's --configfile)
    outputs: dict[str, SplitOutputs]
    options: tuple[str, ...]  # --cores, --profile and the caller's own Snakemake options
    config: dict[str, Any] | None = None  # the config written for SOURCE OUTDIR (None: a user's file)
    up_to_date: bool = False  # every output is there, from the same source and settings
    replaced: tuple[str, ...] = ()  # --overwrite: the old files, removed once the run has succeeded
    superseded: tuple[str, ...] = ()  # what an interrupted --overwrite set aside, removed once this succeeds
    dry_run: bool = False  # -- --dry-run of SOURCE OUTDIR: nothing written (run/dry_run.py)
    changed: tuple[str, ...] = ()  # what the changes written as new revisions did (run/change.py)


def plan_run(
    request: ConvertRequest | None,
    outdir: PathLike | None,
    work: PathLike | None,
    configfile: PathLike | None,
    options: tuple[str, ...],
) -> Run:
    """The invocation for SOURCE OUTDIR (``request``: its config, written into the work folder) or
    for a config file."""
    if configfile is not None:
        if request is not None or outdir is not None or work is not None:
            raise ConvertError("give either SOURCE and OUTDIR or --configfile FILE (its splits name the sources)", 2)
        return Run(Path(configfile), None, config_outputs(Path(configfile)), options)
    if request is None:
        raise ConvertError("give SOURCE and OUTDIR (or --configfile FILE)", 2)
    from imagefolder_lmdb.run.dry_run import is_dry_run
    from imagefolder_lmdb.run.plan import PlanError, plan

    dry_run = is_dry_run(options)
    try:
        planned = plan(dataclasses.replace(request, dry_run=dry_run))
    except PlanError as exc:
        raise ConvertError(str(exc), 1) from None
    for note in planned.notes:
        print(note, file=sys.stderr)
    config = planned.config
    outputs = outputs_of(config["results"], list(config["splits"]))
    superseded = tuple(planned.superseded)
    if dry_run:  # its config goes into a temporary folder, not the work folder
        return Run(planned.work / "config.yaml", planned.work, outputs, options, config, dry_run=True)
    if planned.nothing_to_do:
        changed = tuple(planned.changed)
        return Run(
            planned.work / "config.yaml", planned.work, outputs, options, config, True, (), superseded, False, changed
        )
    configfile = write_config(config, planned.work / "config.yaml")
    return Run(configfile, planned.work, outputs, options, config, False, tuple(planned.replaced), superseded)


def run_planned(
    run: Run, clean: bool, own_options: bool, verbose: bool = False, python: bool = False
) -> dict[str, SplitOutputs]:
    """Run Snakemake for ``run``, or show the summary of outputs already up to date (unless the
    caller gave Snakemake options of their own: a --dry-run, a --forceall); ConvertError on failure,
    its fixes in the caller's words (``python``: ``convert()``'s, else the command line's)."""
    from imagefolder_lmdb.run.plan import remove_superseded

    if run.dry_run:
        return dry_run_planned(run, verbose)
    if run.up_to_date and not own_options:
        show_existing(run)
        remove_superseded(run.superseded)
        finish(run, clean)
        return run.outputs
    kept = set_aside(run.replaced)
    hold_point("set-aside")  # the old dataset renamed, Snakemake not started
    try:
        command = snakemake_command(run.configfile, run.directory, run.options, verbose)
        with sources_recorded(run):
            run_snakemake(command, verbose, progress_runs(run))
    except Interrupted:
        put_back(kept)  # an interrupted run too
        raise
    except ConvertError as exc:
        put_back(kept)  # a failed run leaves the old datasets as they were
        if run.config is None:  # a config file's run: its messages speak of its keys
            raise
        from imagefolder_lmdb.config.settings import in_command_line_words, in_python_words

        words = in_python_words if python else in_command_line_words
        raise ConvertError(words(str(exc)), exc.returncode, [words(line) for line in exc.lines]) from None
    put_back({path: aside for path, aside in kept.items() if not os.path.exists(path)})  # --report, --touch...
    for path in kept.values():
        if os.path.exists(path):
            os.remove(path)
    remove_superseded(run.superseded)
    finish(run, clean)
    return run.outputs


def dry_run_planned(run: Run, verbose: bool) -> dict[str, SplitOutputs]:
    """A dry run: Snakemake's plan said, nothing written (run/dry_run.py)."""
    from imagefolder_lmdb.run.dry_run import run_dry

    run_dry(cast("dict[str, Any]", run.config), run.options, verbose)
    return run.outputs


@contextlib.contextmanager
def sources_recorded(run: Run) -> Iterator[None]:
    """Tell the Snakemake run of a planned conversion that its made_from files are written (the plan
    walked every source to judge the datasets there; run/made_from.py): it does not walk them again."""
    # here, not at the top: made_from imports the sources (~0.15 s), and importing the package, which
    # binds convert(), is the window in which a Ctrl-C could only end in a traceback
    from imagefolder_lmdb.run.dry_run import recorded
    from imagefolder_lmdb.run.made_from import RECORDED_VARIABLE

    if run.config is None or not all(os.path.exists(path) for path in made_from_files(run.config)):
        yield
        return
    with recorded(RECORDED_VARIABLE, run.config["work"]):
        yield


def made_from_files(config: dict[str, Any]) -> list[str]:
    paths = RunPaths(config["results"], config["work"])
    return [paths.made_from(split) for split in config["splits"]]


def progress_runs(run: Run) -> list[tuple[Any, list[str]]]:
    """The run's folders and splits, to tell how far each split got when it is interrupted."""
    if run.config is not None:
        return [(RunPaths(run.config["results"], run.config["work"]), list(run.config["splits"]))]
    return configfile_folders(run.configfile, list(run.outputs))


def show_existing(run: Run) -> None:
    """Nothing to convert: the summary of what OUTDIR holds, and its paths."""
    from imagefolder_lmdb.board.summary import summary_lines

    config = cast("dict[str, Any]", run.config)  # a planned run's config
    verb = "is" if len(run.outputs) == 1 else "are"
    for line in run.changed:  # a change written as a new revision: what it did, in place of "nothing"
        print(line)
    if not run.changed:
        print(f"Nothing to convert: {', '.join(run.outputs)} in {config['results']} {verb} up to date.")
    for line in summary_lines(config)[2:]:
        print(line)


def finish(run: Run, clean: bool) -> None:
    """After success: ``clean`` removes the work folder (never a user's --configfile run's)."""
    import shutil

    if clean and run.directory is not None and run.config is not None and run.directory.exists():
        shutil.rmtree(run.directory, ignore_errors=True)
        print(f"removed the work folder {run.directory} (--clean)")
