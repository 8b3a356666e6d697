# SPDX-License-Identifier: MIT
"""The config a command-line conversion (``convert SOURCE OUTDIR``, ``convert(source, outdir)``)
writes and runs: every split SOURCE holds (src/imagefolder_lmdb/sources/splits.py), the settings given
as flags, ``--set`` or ``config=`` (src/imagefolder_lmdb/config/settings.py), checked here with the
workflow's own one-line messages before Snakemake starts, and set against what OUTDIR already holds
(src/imagefolder_lmdb/run/existing.py).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import glob
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from imagefolder_lmdb.classes.plan import ClassPlan, plan_classes
from imagefolder_lmdb.config.problems import BaseConfigError
from imagefolder_lmdb.config.settings import Setting, apply, problems_in_users_words
from imagefolder_lmdb.config.shards import choose_shards, cores_of
from imagefolder_lmdb.run.change import Applied, ChangeError, apply_changes
from imagefolder_lmdb.run.dry_run import takes_lock
from imagefolder_lmdb.run.existing import (
    Existing,
    OutputsError,
    existing_splits,
    refuse_replacing,
    shared_classes,
    unlisted_classes,
    up_to_date,
)
from imagefolder_lmdb.run.made_from import Verdict, changed_lines, split_verdicts, write_made_from
from imagefolder_lmdb.run.ownership import clear_temporaries, own_outdir
from imagefolder_lmdb.run.places import mixed_places
from imagefolder_lmdb.run.request import PROFILE_CORES, ConvertRequest
from imagefolder_lmdb.run.split_labels import SplitLabelsError, split_label_settings
from imagefolder_lmdb.sources.base import CountMismatchError
from imagefolder_lmdb.sources.labellings import is_metadata_labels
from imagefolder_lmdb.sources.missing_paths import missing_path_hint, taken_from
from imagefolder_lmdb.sources.splits import SPLIT_NAMES, SplitsError, find_splits
from imagefolder_lmdb.work.paths import RunPaths
from imagefolder_lmdb.writing.added_records import AddedImageError
from imagefolder_lmdb.writing.hold_points import hold_point
from imagefolder_lmdb.writing.revisions import RevisionConflictError


class PlanError(ValueError):
    """The command cannot run as given; the message is the line to show (the fix included)."""


@dataclass
class Plan:
    """The config to run, the notes to show before it, and whether there is anything to do."""

    config: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    nothing_to_do: bool = False
    replaced: list[str] = field(default_factory=list)  # --overwrite: files to replace once the run succeeds
    # what an earlier, interrupted --overwrite of these splits set aside: removed once this one succeeds
    superseded: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)  # what each change written as a new revision did

    @property
    def work(self) -> Path:
        return Path(self.config["work"])


def check_cores(request: ConvertRequest) -> None:
    """``--cores``: a whole number of at least 1, or "all" (Snakemake waits forever with 0)."""
    cores = request.cores
    if cores is None or cores == PROFILE_CORES or cores == "all" or (str(cores).isdigit() and int(cores) >= 1):
        return
    raise PlanError(f"{flag('--cores', request.cli)} {cores}: give a whole number of at least 1, or all")


def flag(name: str, cli: bool) -> str:
    """An option as the user gives it: ``--overwrite`` on the command line, ``overwrite=True`` in Python."""
    return name if cli else f"{name.lstrip('-').replace('-', '_')}=..."


def plan(request: ConvertRequest) -> Plan:
    """The config of ``request``, checked; PlanError with the line to show when it cannot run."""
    check_cores(request)
    mixed = mixed_places(request.source, request.outdir, request.work, request.cli)
    if mixed:  # before anything is written: a swap would put the work folder into the images
        raise PlanError(mixed)
    results = checked_outdir(request.outdir)
    work = os.path.abspath(request.work) if request.work is not None else os.path.join(results, "work")
    splits = splits_of(request)
    request, label_notes = with_split_labels(request, splits)  # --labels, --unlabelled: per split (issue 59)
    config = apply({"results": results, "work": work, "splits": splits}, request.settings)
    try:  # before the first write under OUTDIR or --work: ours from here to the command's end
        if takes_lock(results, request.dry_run):
            own_outdir(results)
    except BaseConfigError:
        raise PlanError(
            f"another conversion is writing into {results}: wait until it ends, or name another OUTDIR"
        ) from None
    if not request.dry_run:  # a dry run writes nothing, here or below
        clear_temporaries(work)
    overwriting = list(splits) if request.overwrite else []
    notes, superseded = ([], []) if request.dry_run else recovered_from_interrupted_overwrite(results, overwriting)
    existing = existing_splits(results)
    replaced = replacing(config, existing, request)  # before the class list: --overwrite is the fix to hear first
    notes += [*label_notes, *split_note(request, splits), *take_classes(config, existing, request, replaced)]
    shards = choose_shards(config, request.cores) if request.cores != PROFILE_CORES else []  # profile: the schema's
    filled = checked(config, request.settings)
    classes = plan_classes(filled)
    verdicts = split_verdicts(filled, classes)  # the walk of every source, made once
    workers = 1 if request.cores == PROFILE_CORES else cores_of(request.cores)  # a profile's cores: the cluster's
    applied = [] if request.dry_run else changes_applied(filled, existing, verdicts, classes, replaced, workers)
    if applied:  # their datasets are new revisions now: read again
        existing = existing_splits(results)
    nothing_to_do = not replaced and up_to_date(filled, existing, verdicts)
    changed = [line for done in applied for line in done.lines()]
    notes += [] if nothing_to_do else changed  # else the summary says them, in place of "nothing to convert"
    if not nothing_to_do:
        if not request.dry_run:
            write_made_from(filled, verdicts)  # Snakemake is told not to walk the sources again
        hold_point("planned")  # made_from written, Snakemake not started
        notes += changed_lines({name: v for name, v in verdicts.items() if name not in replaced})
    notes += [] if nothing_to_do else shards  # the shard counts of a run that does not happen: noise
    notes += [
        f"{name}: replacing {existing[name].path} once the new one is complete (--overwrite)" for name in replaced
    ]
    paths = RunPaths(results, work)
    old = [path for name in replaced for path in paths.final_outputs(name) if os.path.exists(path)]
    return Plan(config, notes, nothing_to_do, old, superseded, changed)


def changes_applied(
    config: dict[str, Any],
    existing: dict[str, Existing],
    verdicts: dict[str, Verdict],
    classes: ClassPlan,
    replaced: list[str],
    workers: int = 1,
) -> list[Applied]:
    """The splits whose images or labels changed, each written as a new revision (run/change.py), their
    added images encoded by ``workers`` threads (--cores)."""
    documents = {name: found.document for name, found in existing.items()}
    try:
        return apply_changes(config, documents, verdicts, classes, replaced, workers)
    except (ChangeError, AddedImageError, RevisionConflictError, CountMismatchError) as exc:
        raise PlanError(str(exc)) from None  # the listing's own line (an empty class folder) too


def with_split_labels(request: ConvertRequest, splits: dict[str, Any]) -> tuple[ConvertRequest, list[str]]:
    """``request`` with its labels given per split (run/split_labels.py), and the notes that say so."""
    try:
        settings, notes = split_label_settings(request.settings, splits)
    except SplitLabelsError as exc:
        raise PlanError(str(exc)) from None
    return dataclasses.replace(request, settings=tuple(settings)), notes


def recovered_from_interrupted_overwrite(results: str, overwriting: list[str]) -> tuple[list[str], list[str]]:
    """Files an --overwrite run set aside (``X.replaced``) and was killed before it could put back or
    remove: one whose ``X`` is missing goes back in place (the new one was never complete), a report
    only together with its own dataset (beside the new dataset, or none, it would describe a file not
    there); the others are kept and named, since they may be the only copy of the old dataset, unless
    this run overwrites their split again (``overwriting``): then they are returned, to be removed once
    it succeeds, as the interrupted run would have."""
    asides = sorted(glob.glob(os.path.join(glob.escape(results), "*.replaced")))
    datasets = [aside for aside in asides if aside.endswith(".lmdb.replaced")]
    notes, kept, restored = [], [], set()
    for aside in datasets + [aside for aside in asides if aside not in datasets]:  # datasets first
        original = aside.removesuffix(".replaced")
        if not os.path.exists(original) and (original.endswith(".lmdb") or dataset_of(original) in restored):
            os.replace(aside, original)
            restored.add(original)
            hold_point("recovered")  # one file put back, maybe not all
            notes.append(f"put back {original}, which an interrupted --overwrite run had set aside")
        else:
            kept.append(aside)
    superseded = [aside for aside in kept if split_of(aside) in overwriting]
    kept = [aside for aside in kept if aside not in superseded]
    if kept:  # the old dataset and its reports (verify, contact sheet), named together
        notes.append(f"{', '.join(sorted(kept))}: what an earlier --overwrite run replaced; remove once not needed")
    return notes, superseded


def remove_superseded(asides: Sequence[str]) -> None:
    """An interrupted --overwrite's set-aside files, once this --overwrite of their split has succeeded."""
    for aside in asides:
        with contextlib.suppress(FileNotFoundError):
            os.remove(aside)


def split_of(aside: str) -> str:
    """The split a set-aside file of OUTDIR belongs to: ``train.verify.json.replaced`` -> ``train``."""
    return os.path.basename(aside).split(".")[0]


def dataset_of(report: str) -> str:
    """The dataset a report of OUTDIR describes: ``train.verify.json`` -> ``train.lmdb``."""
    folder, name = os.path.split(report)
    return os.path.join(folder, name.split(".")[0] + ".lmdb")


def replacing(config: dict[str, Any], existing: dict[str, Existing], request: ConvertRequest) -> list[str]:
    """The splits whose dataset in OUTDIR this run replaces (``--overwrite``); PlanError naming the
    file and the flag where one would be replaced in silence."""
    try:
        return refuse_replacing(
            checked(with_class_list(config, existing, request), request.settings), existing, request.overwrite
        )
    except OutputsError as exc:
        raise PlanError(str(exc).replace("--overwrite", flag("--overwrite", request.cli))) from None


def with_class_list(config: dict[str, Any], existing: dict[str, Existing], request: ConvertRequest) -> dict[str, Any]:
    """``config`` with the class list ``take_classes`` will give it (``--classes-from``, or the other
    splits' in OUTDIR), so that the file there is compared with what this run would make."""
    if request.classes_from is not None:
        return {**config, "classes": os.path.abspath(request.classes_from)}
    try:
        classes = shared_classes(config, existing, flag("--classes-from", request.cli))
    except OutputsError:
        return config  # take_classes says it
    if classes is None:
        return config
    others = sorted(existing[name].path for name in existing if name not in config["splits"])
    return {**config, "classes": others[0]}


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


def splits_of(request: ConvertRequest) -> dict[str, dict[str, Any]]:
    """The splits to convert: each one SOURCE holds, or SOURCE as one split."""
    source = request.source
    hold_point("plan")  # the crash tests' hook: SOURCE about to be listed, Snakemake not started
    if isinstance(source, str) and not any(c in source for c in "*{") and not os.path.exists(source):
        hint = missing_path_hint(source) or " Name a folder, an archive or shard files."
        raise PlanError(f"SOURCE {source!r} does not exist{taken_from(source)}.{hint}")
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
    return {request.split or split_named_after(source): {"source": absolute, "layout": request.layout}}


def split_named_after(source: str | list[str]) -> str:
    """The split a folder of class folders becomes without --split: the one it is named after
    (``data/val`` is val, as it would be inside ``data``), else train."""
    name = os.path.basename(os.path.normpath(source)) if isinstance(source, str) and os.path.isdir(source) else ""
    return name if name in SPLIT_NAMES else "train"


def split_note(request: ConvertRequest, splits: dict[str, Any]) -> list[str]:
    """A folder of class folders (no split folders in it) given without --split: the note that says
    which split it became, so that a user who meant another hears it before the file is written."""
    source = request.source
    if request.split is not None or len(splits) != 1 or not isinstance(source, str):
        return []
    [(name, split)] = splits.items()
    alone = os.path.isdir(source) and split.get("source") == os.path.abspath(source)
    if alone and os.path.basename(os.path.normpath(source)) != "train":
        why = ", after its folder's name" if name != "train" else ""
        return [f"{source}: treated as split {name!r}{why} ({flag('--split', request.cli)} NAME to choose)"]
    return []


def take_classes(
    config: dict[str, Any], existing: dict[str, Existing], request: ConvertRequest, replaced: Sequence[str] = ()
) -> list[str]:
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
        names = sorted(set(existing) - set(config["splits"]))
        label_file = config["splits"][next(iter(extra))].get("labels")
        raise PlanError(unlisted_message(extra, others, names, given, replaced, label_file))
    config["classes"] = others[0]
    return [f"classes: the {len(classes)} of {others[0]} (one numbering for every split in {config['results']})"]


def unlisted_message(
    extra: dict[str, list[str]],
    others: list[str],
    names: list[str],
    given: str,
    replaced: Sequence[str],
    label_file: str | None = None,
) -> str:
    """The line for class folders (or a label file's labels) the other splits in OUTDIR lack: what
    to do, so that no two splits number their classes differently."""
    name, folders = next(iter(extra.items()))
    shown = ", ".join(folders[:5]) + (" ..." if len(folders) > 5 else "")
    if label_file is not None:
        return unlisted_labels_message(name, shown, len(folders), label_file, others, given, name in replaced)
    what = f"class folder {shown} is not a class" if len(folders) == 1 else f"class folders {shown} are not classes"
    start = f"{name}: {what} of {', '.join(others)}, whose numbering this split must share"
    if name in replaced:  # --overwrite: the new dataset would not number its classes as the old ones there
        return (
            f"{start}: {'they are' if len(others) > 1 else 'it is'} not replaced by this command; remove "
            f"{' and '.join(others)} to replace the whole dataset, or convert into another OUTDIR"
        )
    holding = " and ".join(f"{other}/" for other in [*names, name])
    return (
        f"{start}: convert every split in one command (SOURCE holding {holding}), "
        f"or give {given} FILE.lmdb to use its list (other images set aside)"
    )


def unlisted_labels_message(
    name: str, shown: str, count: int, label_file: str, others: list[str], given: str, replacing: bool
) -> str:
    """unlisted_message's line for a split labelled by a label file: as for class folders, the
    images of those labels would be set aside in silence; stop, unless the list is asked for."""
    what = f"label {shown} is not a class" if count == 1 else f"labels {shown} are not classes"
    where = "its metadata files" if is_metadata_labels(label_file) else label_file
    start = f"{name}: {what} of {', '.join(others)} (in {where}), whose numbering this split must share"
    if replacing:
        return (
            f"{start}: {'they are' if len(others) > 1 else 'it is'} not replaced by this command; remove "
            f"{' and '.join(others)} to replace the whole dataset, or convert into another OUTDIR"
        )
    return (
        f"{start}: convert every split in one command (a config giving each split its labels), "
        f"or give {given} FILE.lmdb to use its list (the images of other labels set aside)"
    )


def checked(config: dict[str, Any], settings: Sequence[Setting]) -> dict[str, Any]:
    """``config`` with the schema's defaults filled in (a copy), after the workflow's own checks;
    PlanError with one line per problem, each naming the setting as the user gave it."""
    from imagefolder_lmdb.config.check import check_config
    from imagefolder_lmdb.config.schema import load_schema
    from imagefolder_lmdb.run.launch import WORKFLOW

    filled = copy.deepcopy(config)
    try:
        check_config(filled, load_schema(str(WORKFLOW / "config" / "schema.yaml")))
    except BaseConfigError as exc:
        lines = problems_in_users_words(exc.problems, settings)
        raise PlanError("\n".join(lines)) from None
    return filled
