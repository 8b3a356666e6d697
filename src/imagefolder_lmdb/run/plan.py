# SPDX-License-Identifier: MIT
"""The config a command-line conversion (``convert SOURCE OUTDIR``, ``convert(source, outdir)``)
writes and runs: every split SOURCE holds (src/imagefolder_lmdb/sources/splits.py), the settings given
as flags, ``--set`` or ``config=`` (src/imagefolder_lmdb/config/settings.py), checked here with the
workflow's own one-line messages before Snakemake starts, and set against what OUTDIR already holds
(src/imagefolder_lmdb/run/existing.py).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from imagefolder_lmdb.config.settings import Setting, apply, in_users_words
from imagefolder_lmdb.run.existing import (
    Existing,
    OutputsError,
    existing_splits,
    refuse_replacing,
    shared_classes,
    unlisted_classes,
    up_to_date,
)
from imagefolder_lmdb.run.lock import held_elsewhere
from imagefolder_lmdb.run.paths import RunPaths
from imagefolder_lmdb.run.shards import choose_shards
from imagefolder_lmdb.sources.splits import SplitsError, find_splits

#: ``Request.cores`` of a run with a profile and no --cores: the cores are the cluster's.
PROFILE_CORES = "profile"


class PlanError(ValueError):
    """The command cannot run as given; the message is the line to show (the fix included)."""


@dataclass(frozen=True)
class Request:
    """What a command-line conversion asks for."""

    source: str | list[str]
    outdir: str
    split: str | None = None  # None: every split SOURCE holds, else train
    layout: str = "imagefolder"
    splits: Sequence[str] = ()  # --splits: the split folders to convert
    work: str | None = None
    settings: Sequence[Setting] = ()
    overwrite: bool = False
    classes_from: str | None = None
    cli: bool = True  # messages name flags (--overwrite) rather than convert()'s parameters
    cores: int | str | None = None  # --cores, which the shard count follows (None: all; PROFILE_CORES)


@dataclass
class Plan:
    """The config to run, the notes to show before it, and whether there is anything to do."""

    config: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    nothing_to_do: bool = False

    @property
    def work(self) -> Path:
        return Path(self.config["work"])


def flag(name: str, cli: bool) -> str:
    """An option as the user gives it: ``--overwrite`` on the command line, ``overwrite=True`` in Python."""
    return name if cli else f"{name.lstrip('-').replace('-', '_')}=..."


def plan(request: Request) -> Plan:
    """The config of ``request``, checked; PlanError with the line to show when it cannot run."""
    results = checked_outdir(request.outdir)
    work = os.path.abspath(request.work) if request.work is not None else os.path.join(results, "work")
    config = apply({"results": results, "work": work, "splits": splits_of(request)}, request.settings)
    if held_elsewhere(results):
        raise PlanError(f"another conversion is writing into {results}: wait until it ends, or name another OUTDIR")
    existing = existing_splits(results)
    notes = take_classes(config, existing, request)
    if request.cores != PROFILE_CORES:  # a cluster profile's jobs: the schema's default
        notes += choose_shards(config, request.cores)
    filled = checked(config, request.settings)
    try:
        for name in refuse_replacing(filled, existing, request.overwrite):
            for path in RunPaths(results, work).final_outputs(name):
                if os.path.exists(path):
                    os.remove(path)
            notes.append(f"{name}: replacing {existing[name].path} (--overwrite)")
    except OutputsError as exc:
        raise PlanError(str(exc).replace("--overwrite", flag("--overwrite", request.cli))) from None
    return Plan(config, notes, up_to_date(filled, existing_splits(results)))


def checked_outdir(outdir: str) -> str:
    """OUTDIR made absolute, refused in one line where it cannot hold the datasets."""
    results = os.path.abspath(outdir)
    if os.path.exists(results) and not os.path.isdir(results):
        raise PlanError(f"OUTDIR {outdir} is a file, not a folder: name a folder (it is created if missing)")
    candidates: list[str | Path] = [results, *Path(results).parents]
    parent = next((p for p in candidates if os.path.exists(p)), Path("/"))
    if not os.access(parent, os.W_OK | os.X_OK):
        raise PlanError(f"OUTDIR {outdir}: {parent} is not writable here (a read-only mount?): name another folder")
    return results


def splits_of(request: Request) -> dict[str, dict[str, Any]]:
    """The splits to convert: each one SOURCE holds, or SOURCE as one split."""
    source = request.source
    if isinstance(source, str) and not any(c in source for c in "*{") and not os.path.exists(source):
        raise PlanError(f"SOURCE {source!r} does not exist: name a folder, an archive or shard files")
    found = None
    rooted = any(setting.path == ("splits", "*", "root") for setting in request.settings)  # one folder inside
    if request.split is None and request.layout == "imagefolder" and isinstance(source, str) and not rooted:
        try:
            found = find_splits(source, request.splits or None)
        except SplitsError as exc:
            raise PlanError(str(exc)) from None
    if found is not None:
        return found
    if request.splits:
        raise PlanError(f"{source} holds no split folders (train/, val/, ...); --splits names them")
    absolute = os.path.abspath(source) if isinstance(source, str) else [os.path.abspath(p) for p in source]
    return {request.split or "train": {"source": absolute, "layout": request.layout}}


def take_classes(config: dict[str, Any], existing: dict[str, Existing], request: Request) -> list[str]:
    """Set ``config``'s class list from ``--classes-from`` or from the other splits in OUTDIR, so
    that a split converted alone numbers its classes as they do; the note to show."""
    given = flag("--classes-from", request.cli)
    if request.classes_from is not None:
        config["classes"] = os.path.abspath(request.classes_from)  # the config check reads it
        return [f"classes: those of {request.classes_from}"]
    try:
        classes = shared_classes(config, existing, given)
    except OutputsError as exc:
        raise PlanError(str(exc)) from None
    if classes is None:
        return []
    others = sorted(existing[name].path for name in existing if name not in config["splits"])
    extra = unlisted_classes(config, classes)
    if extra:
        name, names = next(iter(extra.items()))
        raise PlanError(
            f"{name}: class folders {', '.join(names[:5])}{' ...' if len(names) > 5 else ''} are not classes of "
            f"{', '.join(others)}, whose numbering this split must share: convert every split in one command "
            f"(SOURCE holding train/ and {name}/), or give {given} FILE.lmdb to use its list (other images set aside)"
        )
    config["classes"] = others[0]
    return [f"classes: the {len(classes)} of {others[0]} (one numbering for every split in {config['results']})"]


def checked(config: dict[str, Any], settings: Sequence[Setting]) -> dict[str, Any]:
    """``config`` with the schema's defaults filled in (a copy), after the workflow's own checks;
    PlanError with one line per problem, each naming the setting as the user gave it."""
    from imagefolder_lmdb.config.check import check_config
    from imagefolder_lmdb.config.problems import ConfigError
    from imagefolder_lmdb.config.schema import load_schema
    from imagefolder_lmdb.convert import WORKFLOW

    filled = copy.deepcopy(config)
    try:
        check_config(filled, load_schema(str(WORKFLOW / "config" / "schema.yaml")))
    except ConfigError as exc:
        lines = [in_users_words(problem, settings) for problem in exc.problems]
        raise PlanError("\n".join(lines)) from None
    return filled
