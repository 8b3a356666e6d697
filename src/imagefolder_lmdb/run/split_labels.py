"""Which split a label file labels, and which splits have no labels, in a command-line conversion of
several splits (issue 59): ``--labels`` and ``--unlabelled`` made into each split's ``labels`` key
before the config is made (run/plan.py).

- ``--labels SPLIT=FILE`` labels that split only (``--labels`` may be given once per split).
- ``--labels FILE`` with several splits labels the split it belongs to: the one whose folder holds it
  (``data/train/labels.csv``), or the one it lies beside and is named after (``data/train.csv``,
  ``train_labels.csv``, ``trainLabels.csv`` beside ``data/train/``). Before, it labelled every split,
  which no file fits unless every split's images are named alike; a file that belongs to no split
  still labels every split, and where it fits some splits' images and not the others' the run stops
  naming them and the fix.
- ``--unlabelled SPLIT[,SPLIT]``: those splits have no labels (``labels: unlabelled``, format version
  6); bare, every split no ``--labels`` labels (with several splits, some split must be labelled).
- A split of several given nothing, whose folder holds images and no class folder (a competition's
  flat ``test/``), is refused before any job, naming ``--unlabelled`` and ``--labels SPLIT=FILE``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

from imagefolder_lmdb.config.settings import Setting
from imagefolder_lmdb.sources.labellings import COLUMN_KEYS, UNLABELLED, label_file_misfit, names_a_label_file
from imagefolder_lmdb.sources.listing_options import is_image

#: Every split's ``labels`` key, as a flag or ``--set labels=...`` gives it.
ANY_SPLIT = ("splits", "*", "labels")
#: ``--labels SPLIT=FILE``.
NAMED = re.compile(r"^(?P<split>[\w.-]+)=(?P<file>.+)$")
#: The flag that names splits without labels.
UNLABELLED_FLAG = "--unlabelled"
#: The column settings a label file is read with (COLUMN_KEYS: to try it on each split's images).
COLUMN_PATHS = tuple((key,) for key in COLUMN_KEYS)
#: A split's keys that change how its folder is read: no refusal of a flat folder where one is set.
READ_AS = ("layout", "root")


class SplitLabelsError(ValueError):
    """``--labels`` or ``--unlabelled`` that names no split, or a split left without labels."""


def split_label_settings(
    settings: Sequence[Setting], splits: dict[str, dict[str, Any]]
) -> tuple[list[Setting], list[str]]:
    """``settings`` with every split's labels given per split, and the notes that say which split
    each label file labels; SplitLabelsError naming the fix where that cannot be done."""
    names, kept, notes = list(splits), [], []
    labelled: set[str] = set()
    unlabelled = [setting for setting in settings if setting.given_as.startswith(UNLABELLED_FLAG)]
    for setting in settings:
        if setting.path != ANY_SPLIT or setting in unlabelled:
            kept.append(setting)
            continue
        split, value, note = label_target(setting, splits, column_settings(settings))
        kept.append(Setting(("splits", split, "labels"), value, setting.given_as) if split else setting)
        labelled |= {split} if split else set(names)  # labels: metadata, a file, unlabelled: given
        notes += [note] if note else []
    kept = [setting for setting in kept if setting not in unlabelled]
    for setting in unlabelled:
        given_as = UNLABELLED_FLAG if setting.value == "*" else setting.given_as  # bare: const "*"
        for name in unlabelled_splits(setting, names, labelled):
            kept.append(Setting(("splits", name, "labels"), UNLABELLED, given_as))
            notes.append(f"{name}: no labels ({given_as}): each target -1, the other splits' classes")
            labelled.add(name)
    given = given_per_split(settings)
    if len(names) > 1 and "*" not in given:
        refuse_flat_splits_without_labels(splits, set(names) - labelled - given)
    return kept, notes


def given_per_split(settings: Sequence[Setting]) -> set[str]:
    """The splits a setting gives labels by name (``--set splits.test.labels=...``, ``config=``), or a
    layout or root (read otherwise than as class folders, judged by the config's checks): ``*`` is each."""
    given = {s.path[1] for s in settings if s.path[::2] == ("splits", "labels") and s.path != ANY_SPLIT and s.value}
    return given | {s.path[1] for s in settings if len(s.path) == 3 and s.path[0] == "splits" and s.path[2] in READ_AS}


def column_settings(settings: Sequence[Setting]) -> dict[str, Any]:
    """The label file's column settings every split is given (``--label-column tag``): what it is read by."""
    return {s.path[2]: s.value for s in settings if s.path[:2] == ("splits", "*") and s.path[2:] in COLUMN_PATHS}


def label_target(
    setting: Setting, splits: dict[str, dict[str, Any]], columns: dict[str, Any]
) -> tuple[str, Any, str | None]:
    """The split ``--labels`` labels ("": every split), its value, and the note that says so."""
    value = setting.value
    if not names_a_label_file(value):  # metadata files, unlabelled: every split's
        return "", value, None
    named = NAMED.match(value)
    if named and not os.path.exists(value):
        if named["split"] not in splits:
            raise SplitLabelsError(
                f"{setting.given_as}: there is no split {named['split']} in this conversion "
                f"(it converts {', '.join(splits)}): name one of them"
            )
        return named["split"], named["file"], None
    owner = owning_split(value, splits) if len(splits) > 1 else None
    if owner is None:
        refuse_partial_fit(setting, splits, columns)
        return "", value, None
    why = (
        "its folder holds it" if inside(value, folder_of(splits[owner]) or "") else "it lies beside it, named after it"
    )
    return owner, value, f"{owner}: labels from {value} ({why}; --labels SPLIT=FILE to choose)"


def folder_of(split: dict[str, Any]) -> str | None:
    """The folder a split reads (its root inside a folder source); None for an archive or shards."""
    source = split.get("source")
    if not isinstance(source, str) or not os.path.isdir(source):
        return None
    root = str(split.get("root") or "").strip("/")
    return os.path.join(source, root) if root else source


def inside(path: str, folder: str) -> bool:
    real, folder = os.path.realpath(path), os.path.realpath(folder)
    return bool(folder) and real.startswith(folder.rstrip(os.sep) + os.sep)


def owning_split(path: str, splits: dict[str, dict[str, Any]]) -> str | None:
    """The split a label file belongs to: the one whose folder holds it, else the one whose folder it
    lies beside and whose name begins its file name (the longest such name); None for no one split."""
    folders = {name: folder for name, split in splits.items() if (folder := folder_of(split))}
    holding = [name for name, folder in folders.items() if inside(path, folder)]
    if len(holding) == 1:
        return holding[0]
    here, file_name = os.path.dirname(os.path.realpath(path)), os.path.basename(path).lower()
    beside = [
        name
        for name, folder in folders.items()
        if os.path.dirname(os.path.realpath(folder)) == here and file_name.startswith(name.lower())
    ]
    return max(beside, key=len) if beside else None


def refuse_partial_fit(setting: Setting, splits: dict[str, dict[str, Any]], columns: dict[str, Any]) -> None:
    """A label file of no one split, given for several: where it names the images of some splits and
    not of the others, the line naming them and the fix (else the config check words its problem)."""
    if len(splits) < 2 or not os.path.isfile(setting.value):
        return
    fits = {name: fitting(setting.value, {**split, **columns}) for name, split in splits.items() if folder_of(split)}
    misfits = {name: problem for name, problem in fits.items() if problem}
    if not misfits or len(misfits) == len(fits):
        return
    good = [name for name in fits if name not in misfits]
    name, problem = next(iter(misfits.items()))
    raise SplitLabelsError(
        f"{setting.given_as}: the file labels the images of {', '.join(good)}, not those of {name} ({problem}): "
        f"give --labels {good[0]}={setting.value} to label {good[0]} alone (and {UNLABELLED_FLAG} {name} for a "
        f"split without labels), or convert {good[0]} alone with --split {good[0]}"
    )


def fitting(label_file: str, split: dict[str, Any]) -> str | None:
    """Why ``label_file`` does not label the images of ``split``'s folder (None: it does)."""
    labelled = {**split, "labels": label_file, **{key: split.get(key) for key in COLUMN_KEYS}}
    return label_file_misfit(labelled, str(folder_of(split)))


def unlabelled_splits(setting: Setting, names: list[str], labelled: set[str]) -> list[str]:
    """The splits ``--unlabelled [SPLIT,...]`` names: those given, else every split not labelled."""
    given = [name.strip() for name in str(setting.value).split(",") if name.strip() and name.strip() != "*"]
    unknown = [name for name in given if name not in names]
    if unknown:
        raise SplitLabelsError(
            f"{setting.given_as}: there is no split {', '.join(unknown)} in this conversion "
            f"(it converts {', '.join(names)}): name one of them"
        )
    both = [name for name in given if name in labelled]
    if both:
        raise SplitLabelsError(f"{setting.given_as}: split {both[0]} is given labels by --labels too: give one")
    if given:
        return given
    rest = [name for name in names if name not in labelled]
    if len(names) > 1 and len(rest) == len(names):
        raise SplitLabelsError(
            f"{UNLABELLED_FLAG} alone would leave every split ({', '.join(names)}) without labels: "
            f"name the splits that have none, e.g. {UNLABELLED_FLAG} {names[-1]}"
        )
    return rest


def refuse_flat_splits_without_labels(splits: dict[str, dict[str, Any]], bare: set[str]) -> None:
    """A split given no labels whose folder holds images and no class folder: it cannot be an
    ImageFolder; the line that names the flags that convert it."""
    for name in [name for name in splits if name in bare]:
        folder = folder_of(splits[name])
        if folder is None or splits[name].get("layout", "imagefolder") != "imagefolder":
            continue
        entries = list(os.scandir(folder))
        if any(entry.is_dir() for entry in entries) or not any(is_image(entry.name) for entry in entries):
            continue
        others = [other for other in splits if other != name]
        raise SplitLabelsError(
            f"{name}: {folder} holds images but no class folders, and no labels: give {UNLABELLED_FLAG} {name} "
            f"to convert it without labels (each target -1, the classes of {others[0]}), or "
            f"--labels {name}=FILE for a label file"
        )
