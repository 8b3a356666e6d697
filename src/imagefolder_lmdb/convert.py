# SPDX-License-Identifier: MIT
"""``imagefolder_lmdb.convert()`` and ``imagefolder-lmdb convert``: the packaged workflow, run by
Snakemake's own command line.

The wheel holds the workflow (src/imagefolder_lmdb/workflow: the Snakefile, rules, rule scripts,
config schema, report captions and profiles, links to the checkout's files). A conversion is
``python -m snakemake --snakefile <package>/workflow/Snakefile --configfile FILE ...`` with the
interpreter running this, so progress, errors and the end-of-run summary are the workflow's own,
and the same command after a kill resumes as ``snakemake`` does (the work folder holds its state).

- One source: ``convert(SOURCE, OUTDIR)`` writes ``WORK/config.yaml`` (``WORK`` is ``OUTDIR/work``
  unless given) naming that source as one split, and runs Snakemake in ``WORK``: the dataset is
  ``OUTDIR/train.lmdb``, its verify report and contact sheet beside it.
- A whole config: ``convert(configfile=FILE)`` runs it from the current folder, exactly as
  ``snakemake --configfile FILE`` with the workflow's Snakefile would.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from imagefolder_lmdb.run.launch import (
    PROFILES,
    SNAKEFILE,
    WORKFLOW,
    ConvertError,
    check_snakemake,
    run_snakemake,
    snakemake_command,
)

__all__ = ["PROFILES", "SNAKEFILE", "WORKFLOW", "ConvertError", "Run", "SplitOutputs", "convert", "plan_run"]

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


def convert(
    source: PathLike | Sequence[PathLike] | None = None,
    outdir: PathLike | None = None,
    *,
    split: str = "train",
    layout: str = "imagefolder",
    shards: int | None = None,
    work: PathLike | None = None,
    cores: int | str | None = None,
    profile: str | None = None,
    configfile: PathLike | None = None,
    snakemake_args: Sequence[str] = (),
    verbose: bool = False,
) -> dict[str, SplitOutputs]:
    """Convert ``source`` into ``outdir/<split>.lmdb`` (or every split of ``configfile``).

    Args:
        source: an ImageFolder directory or an archive of one (.tar, .tar.gz, .tgz, .zip); for
            ``layout`` webdataset or parquet, the shard files (a list, a glob or a brace pattern).
        outdir: where the dataset, its ``.verify.json`` report and ``.contact.png`` sheet go.
        split: the split's name, the dataset's file name (``train`` -> ``train.lmdb``).
        layout: how ``source`` is organised: one of the config schema's layouts (imagefolder,
            ilsvrc-train, ilsvrc-val, webdataset, parquet); ilsvrc-val needs a config file.
        shards: how many encode jobs the split is cut into (the schema's default, 16, if None):
            the parallel units, and what a failure reruns.
        work: the work folder (manifests, parts, logs, Snakemake's state); ``outdir/work`` by
            default. Safe to delete after success; keep it to resume after a kill.
        cores: CPU cores to use (an int or ``"all"``); ``"all"`` unless ``profile`` is given.
        profile: ``"slurm"`` for the packaged SLURM profile (every job an sbatch job; needs the
            ``slurm`` extra), or a Snakemake profile of your own (a folder or a profile name).
        configfile: a whole config (every split and setting, see config/schema.yaml), run from
            the current folder instead of ``source``/``outdir``/``split``/``layout``/``shards``/``work``.
        snakemake_args: further Snakemake options, e.g. ``["--dry-run"]`` or ``["--keep-going"]``.
        verbose: Snakemake's own output (every job) instead of the progress board.

    Returns:
        Each split's final files, by split name.

    Raises:
        ConvertError: the workflow failed or the arguments conflict; its ``lines`` say what to do.
    """
    check_snakemake()
    entry = None if source is None else split_entry(source, layout, shards)
    run = plan_run(entry, outdir, split, work, configfile, run_options(cores, profile, snakemake_args))
    run_snakemake(snakemake_command(run.configfile, run.directory, run.options, verbose), verbose)
    return run.outputs


def plan_run(
    entry: dict[str, Any] | None,
    outdir: PathLike | None,
    split: str,
    work: PathLike | None,
    configfile: PathLike | None,
    options: tuple[str, ...],
) -> Run:
    """The invocation for one split (``entry``: its config, written into the work folder) or for a
    config file."""
    if configfile is not None:
        if entry is not None or outdir is not None or work is not None:
            raise ConvertError("give either SOURCE and OUTDIR or --configfile FILE (its splits name the sources)", 2)
        return Run(Path(configfile), None, config_outputs(Path(configfile)), options)
    if entry is None or outdir is None:
        raise ConvertError("give SOURCE and OUTDIR (or --configfile FILE)", 2)
    results = Path(outdir).absolute()
    folder = Path(work).absolute() if work is not None else results / "work"
    config = {"results": str(results), "work": str(folder), "splits": {split: entry}}
    return Run(write_config(config, folder / "config.yaml"), folder, outputs_of(str(results), [split]), options)


def split_entry(source: PathLike | Sequence[PathLike], layout: str, shards: int | None) -> dict[str, Any]:
    """The config's one split: ``source`` made absolute (Snakemake runs in the work folder)."""
    if isinstance(source, str | os.PathLike):
        entry: dict[str, Any] = {"source": os.path.abspath(source), "layout": layout}
    else:
        entry = {"source": [os.path.abspath(path) for path in source], "layout": layout}
    return entry if shards is None else {**entry, "shards": shards}


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
