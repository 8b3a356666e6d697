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
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from imagefolder_lmdb.run.launch import (
    PROFILES,
    SNAKEFILE,
    WORKFLOW,
    ConvertError,
    Interrupted,
    check_snakemake,
    interruptible_call,
    run_snakemake,
    snakemake_command,
)
from imagefolder_lmdb.run.ownership import owning_outdirs
from imagefolder_lmdb.run.paths import RunPaths
from imagefolder_lmdb.writing.hold_points import hold_point

if TYPE_CHECKING:
    from imagefolder_lmdb.run.plan import ConvertRequest

__all__ = [
    "PROFILES",
    "SNAKEFILE",
    "WORKFLOW",
    "ConvertError",
    "Interrupted",
    "Run",
    "SplitOutputs",
    "convert",
    "plan_run",
]

PathLike = str | os.PathLike[str]


@dataclass(frozen=True)
class SplitOutputs:
    """The final files of one split, and what its verify report says was built."""

    dataset: Path  # {results}/{split}.lmdb
    verify_report: Path  # {results}/{split}.verify.json
    contact_sheet: Path  # {results}/{split}.contact.png

    @property
    def report(self) -> dict[str, Any]:
        """The verify report: images, classes, per-class counts, bytes stored and of the source, storage, skipped."""
        import json

        return dict(json.loads(self.verify_report.read_text()))

    @property
    def images(self) -> int:
        return int(self.report["images"])

    @property
    def classes(self) -> list[str]:
        return list(self.report["class_counts"])

    def summary(self) -> str:
        """One line: ``out/train.lmdb: 1,281,167 images, 1,000 classes, 140,123.4 MB, verified``."""
        report = self.report
        state = "verified" if report["ok"] else "verification FAILED: " + "; ".join(report["problems"])
        return (
            f"{self.dataset}: {report['images']:,} images, {len(report['class_counts']):,} classes, "
            f"{report['file_bytes'] / 1e6:,.1f} MB, {state}"
        )


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
        snakemake_args: further Snakemake options, e.g. ``["--dry-run"]``.
        config: config keys, as a config file sets them (``{"splits": {"*": {...}}}``: every split).
        overwrite: replace a dataset in ``outdir`` made from another source or with other settings.
        classes_from: a dataset whose class list (its numbering) this conversion takes.
        clean: remove the work folder after success (the same call again then finds nothing to do).
        verbose: Snakemake's own output (every job) instead of the progress board.
        is_valid_file: ImageFolder's: a function importable by name, no lambda (docs/sources.md).

    Returns each split's final files by name; ConvertError: a failure (``lines``: what to do); Interrupted
    (a KeyboardInterrupt) once Snakemake and its jobs have stopped (SIGTERM: run/launch.py).
    """
    destination, outdir, work = url_outdir(source, outdir, work)  # checks Snakemake too
    with interruptible_call(), owning_outdirs(), predicate_importable(config, is_valid_file, configfile):
        request = command_request(source=source, outdir=outdir, split=split, layout=layout, splits=splits, work=work,
            cores=cores, cli=False, settings=python_settings(config, shards, is_valid_file), overwrite=overwrite,
            classes_from=classes_from, profile=profile)  # fmt: skip
        run = plan_run(request, outdir, work, configfile, run_options(cores, profile, snakemake_args))
        return published(run_planned(run, clean, bool(snakemake_args), verbose, python=True), destination, overwrite)


def predicate_importable(
    config: Any, is_valid_file: Callable[[str], bool] | None, configfile: PathLike | None
) -> contextlib.AbstractContextManager[None]:
    """The caller's folder importable while a conversion naming ``is_valid_file`` plans and runs (a
    predicate given that other processes cannot import is refused first, by python_settings)."""
    from imagefolder_lmdb.sources.listing_options import caller_folder_importable, names_a_predicate

    return caller_folder_importable(is_valid_file is not None or names_a_predicate(config, configfile))


def published(outputs: dict[str, SplitOutputs], destination: str | None, overwrite: bool) -> dict[str, SplitOutputs]:
    """``outputs``, each split uploaded to ``destination`` and checked first (a URL OUTDIR)."""
    if destination is not None:
        after_conversion(outputs, destination, overwrite)
    return outputs


def after_conversion(outputs: dict[str, Any], destination: str, overwrite: bool) -> None:
    """``convert``'s last step for a URL OUTDIR: each split uploaded, as ConvertError on failure
    (130 / 143 for an interrupt, the way back's exit codes). Here, not in remote/: ConvertError is
    the run's, above the uploader."""
    from imagefolder_lmdb.publish.upload import PublishError, UploadInterrupted, publish_splits

    try:
        publish_splits({name: str(split.dataset) for name, split in outputs.items()}, destination, overwrite)
    except UploadInterrupted as exc:
        raise ConvertError(
            f"stopped while publishing to {destination} (above); the same command uploads again without converting",
            exc.code,
        ) from None
    except PublishError as exc:
        raise ConvertError(str(exc), 1) from None


def url_outdir(
    source: Any, outdir: PathLike | None, work: PathLike | None
) -> tuple[str | None, PathLike | None, PathLike | None]:
    """Snakemake checked, and (the URL to publish to, the local outdir, work) for an ``outdir`` that is
    a URL: converted in a local folder first (publish/upload.py local_folder), once the bucket is
    known to take an upload (publish/preflight.py); else (None, outdir, work)."""
    from imagefolder_lmdb.remote import is_url

    check_snakemake()
    if not isinstance(outdir, str) or source is None or not is_url(outdir):
        return None, outdir, work
    import importlib.util

    if importlib.util.find_spec("obstore") is None:
        raise ConvertError(f"publishing to {outdir} needs obstore: pip install 'imagefolder-lmdb[convert,remote]'", 1)
    from imagefolder_lmdb.publish.upload import PublishError, check_destination, local_folder

    try:
        folder = local_folder(outdir, source, None if work is None else os.fspath(work))
        check_destination(outdir)  # a missing bucket or refused keys: said before converting
    except (PublishError, ValueError) as exc:
        raise ConvertError(str(exc), 1) from None
    return outdir, folder, None


def python_settings(
    config: dict[str, Any] | None, shards: int | None, is_valid_file: Callable[[str], bool] | None = None
) -> list[Any]:
    """``convert()``'s ``config``, ``shards`` and ``is_valid_file`` as the command line's settings, each
    named as the caller wrote it (``shards=3``); ConvertError for a ``config`` that is not a mapping of
    keys, or a predicate that other processes cannot import by name."""
    from imagefolder_lmdb.config.settings import FLAG_KEYS, Setting, mapping_settings
    from imagefolder_lmdb.sources.listing_options import PredicateError, importable_name

    if config is not None and not isinstance(config, Mapping):
        raise ConvertError(
            f"config={config!r}: give a dict of config keys, as a config file sets them, e.g. "
            "config={'encode': {'quality': 90}, 'splits': {'*': {'shards': 8}}}",
            2,
        )
    settings = mapping_settings(config or {})
    if shards:
        settings.append(Setting(FLAG_KEYS["--shards"], shards, f"shards={shards!r}"))
    if is_valid_file is not None:
        try:
            name = importable_name(is_valid_file)
        except PredicateError as exc:
            raise ConvertError(str(exc), 2) from None
        settings.append(Setting(FLAG_KEYS["--is-valid-file"], name, f"is_valid_file={name}"))
    return settings


def run_planned(
    run: Run, clean: bool, own_options: bool, verbose: bool = False, python: bool = False
) -> dict[str, SplitOutputs]:
    """Run Snakemake for ``run``, or show the summary of outputs already up to date (unless the
    caller gave Snakemake options of their own: a --dry-run, a --forceall); ConvertError on failure,
    its fixes in the caller's words (``python``: ``convert()``'s, else the command line's)."""
    from imagefolder_lmdb.run.plan import remove_superseded

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
    for path in kept.values():
        os.remove(path)
    remove_superseded(run.superseded)
    finish(run, clean)
    return run.outputs


@contextlib.contextmanager
def sources_recorded(run: Run) -> Iterator[None]:
    """Tell the Snakemake run of a planned conversion that its made_from files are written (the plan
    walked every source to judge the datasets there; run/made_from.py): it does not walk them again."""
    # here, not at the top: made_from imports the sources (~0.15 s), and importing the package, which
    # binds convert(), is the window in which a Ctrl-C could only end in a traceback
    from imagefolder_lmdb.run.made_from import RECORDED_VARIABLE

    if run.config is None or not all(os.path.exists(path) for path in made_from_files(run.config)):
        yield
        return
    previous = os.environ.get(RECORDED_VARIABLE)
    os.environ[RECORDED_VARIABLE] = os.path.abspath(run.config["work"])
    try:
        yield
    finally:
        if previous is None:
            del os.environ[RECORDED_VARIABLE]
        else:
            os.environ[RECORDED_VARIABLE] = previous


def made_from_files(config: dict[str, Any]) -> list[str]:
    paths = RunPaths(config["results"], config["work"])
    return [paths.made_from(split) for split in config["splits"]]


def progress_runs(run: Run) -> list[tuple[Any, list[str]]]:
    """The run's folders and splits, to tell how far each split got when it is interrupted."""
    from imagefolder_lmdb.run.paths import RunPaths

    if run.config is not None:
        return [(RunPaths(run.config["results"], run.config["work"]), list(run.config["splits"]))]
    import yaml

    try:
        config = yaml.safe_load(run.configfile.read_text()) or {}
        return [
            (RunPaths(str(config.get("results") or "results"), str(config.get("work") or "work")), list(run.outputs))
        ]
    except (OSError, yaml.YAMLError, AttributeError):
        return []


def set_aside(paths: Sequence[str]) -> dict[str, str]:
    """Rename the files a run with --overwrite replaces (``X`` -> ``X.replaced``), so that the run
    builds them anew and a failed run can put them back; {original: set-aside path}."""
    kept = {}
    for path in paths:
        os.replace(path, f"{path}.replaced")
        kept[path] = f"{path}.replaced"
    return kept


def put_back(kept: dict[str, str]) -> None:
    """After a failed run: the files set aside back in place (over whatever the run left there)."""
    for path, aside in kept.items():
        os.replace(aside, path)
        hold_point("put-back")  # one file back in place, maybe not all


def command_request(
    *,
    source: PathLike | Sequence[PathLike] | None,
    outdir: PathLike | None,
    split: str | None,
    layout: str,
    splits: Sequence[str],
    work: PathLike | None,
    settings: Sequence[Any],
    overwrite: bool,
    classes_from: PathLike | None,
    cli: bool,
    cores: int | str | None,
    profile: str | None,
) -> ConvertRequest | None:
    """What ``convert SOURCE OUTDIR`` asks for, a ConvertRequest (src/imagefolder_lmdb/run/plan.py plans
    it): made here once, from the command line's arguments (cli.py) or ``convert()``'s keywords; the
    paths as strings, the cores a profile's cluster's where --cores is not given. None without SOURCE
    and OUTDIR (a config file's run)."""
    from imagefolder_lmdb.run.plan import PROFILE_CORES, ConvertRequest

    if source is None or outdir is None:
        return None
    given = os.fspath(source) if isinstance(source, str | os.PathLike) else [os.fspath(p) for p in source]
    return ConvertRequest(
        source=given,
        outdir=os.fspath(outdir),
        split=split,
        layout=layout,
        splits=tuple(splits),
        work=None if work is None else os.fspath(work),
        settings=tuple(settings),
        overwrite=overwrite,
        classes_from=None if classes_from is None else os.fspath(classes_from),
        cli=cli,
        cores=PROFILE_CORES if cores is None and profile is not None else cores,
    )


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
    from imagefolder_lmdb.run.plan import PlanError, plan

    try:
        planned = plan(request)
    except PlanError as exc:
        raise ConvertError(str(exc), 1) from None
    for note in planned.notes:
        print(note, file=sys.stderr)
    config = planned.config
    outputs = outputs_of(config["results"], list(config["splits"]))
    superseded = tuple(planned.superseded)
    if planned.nothing_to_do:
        return Run(planned.work / "config.yaml", planned.work, outputs, options, config, True, (), superseded)
    configfile = write_config(config, planned.work / "config.yaml")
    return Run(configfile, planned.work, outputs, options, config, False, tuple(planned.replaced), superseded)


def show_existing(run: Run) -> None:
    """Nothing to convert: the summary of what OUTDIR holds, and its paths."""
    from imagefolder_lmdb.run.summary import summary_lines

    config = cast("dict[str, Any]", run.config)  # a planned run's config
    verb = "is" if len(run.outputs) == 1 else "are"
    print(f"Nothing to convert: {', '.join(run.outputs)} in {config['results']} {verb} up to date.")
    for line in summary_lines(config)[2:]:
        print(line)


def finish(run: Run, clean: bool) -> None:
    """After success: ``clean`` removes the work folder (never a user's --configfile run's)."""
    import shutil

    if clean and run.directory is not None and run.config is not None and run.directory.exists():
        shutil.rmtree(run.directory, ignore_errors=True)
        print(f"removed the work folder {run.directory} (--clean)")


def write_config(config: dict[str, Any], path: Path) -> Path:
    """``config`` as YAML at ``path``, replaced whole (a rerun of the same command writes the same)."""
    import yaml

    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.incomplete")
    partial.write_text(yaml.safe_dump(config, sort_keys=False))
    partial.replace(path)
    return path


def config_outputs(configfile: Path) -> dict[str, SplitOutputs]:
    """The final files a config file's run produces (its ``results`` folder, default ``results``)."""
    import yaml

    try:
        config = yaml.safe_load(configfile.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConvertError(f"--configfile {configfile}: cannot read it as YAML: {exc}", 2) from exc
    splits = config.get("splits") if isinstance(config, dict) else None
    if not isinstance(splits, dict):
        return {}  # the workflow itself says what is missing
    return outputs_of(str(config.get("results") or "results"), list(splits))


def outputs_of(results: str, splits: list[str]) -> dict[str, SplitOutputs]:
    from imagefolder_lmdb.run.paths import RunPaths

    paths = RunPaths(results, "work")
    return {
        name: SplitOutputs(Path(paths.dataset(name)), Path(paths.verify_report(name)), Path(paths.contact_sheet(name)))
        for name in splits
    }


def run_options(cores: int | str | None, profile: str | None, snakemake_args: Sequence[str]) -> tuple[str, ...]:
    """--cores (all by default, left to the profile when one is given), --profile, the rest."""
    options: list[str] = []
    if profile is not None:
        options += ["--profile", profile_folder(profile)]
    if cores is not None or profile is None:
        options += ["--cores", str(cores if cores is not None else "all")]
    return (*options, *snakemake_args)


def profile_folder(profile: str) -> str:
    """A profile shipped with the workflow by its name (``slurm``), anything else as given."""
    shipped = PROFILES / profile
    return str(shipped) if profile != "default" and "/" not in profile and shipped.is_dir() else profile


@functools.cache
def layouts() -> list[str] | None:
    """The config schema's layouts (the packaged config/schema.yaml is their one list); None
    without PyYAML (an install without the ``convert`` extra, which cannot convert anyway)."""
    try:
        import yaml
    except ImportError:
        return None
    schema = yaml.safe_load((WORKFLOW / "config" / "schema.yaml").read_text())
    return list(schema["$defs"]["split"]["properties"]["layout"]["enum"])
