# SPDX-License-Identifier: MIT
"""The splits a command-line SOURCE holds, so that ``imagefolder-lmdb convert DATA OUT`` converts
every split in one run, with one class list (the first split's: train), as a config file would.

- a folder or a .tar/.tar.gz/.tgz/.zip whose top (or one wrapping folder) holds ``train/``,
  ``val/``, ``test/`` (or the names given with ``--splits``): one split per folder;
- a folder holding the ILSVRC2012 downloads (ILSVRC2012_img_train.tar, ILSVRC2012_img_val.tar and
  the devkit, or LOC_val_solution.csv): the ilsvrc-train and ilsvrc-val layouts;
- Kaggle's imagenet-object-localization-challenge.zip, or a folder holding it: its train and val.

Anything else is one split, as before (``--split NAME``, train by default).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from imagefolder_lmdb.sources.listing_options import is_image

#: The split folders looked for, in the order converted (train first: the others take its classes).
SPLIT_NAMES = ("train", "val", "test")
ILSVRC_TRAIN, ILSVRC_VAL = "ILSVRC2012_img_train.tar", "ILSVRC2012_img_val.tar"
ILSVRC_DEVKITS = ("ILSVRC2012_devkit_t12.tar.gz", "ILSVRC2012_devkit_t12.tar")
KAGGLE_ZIP = "imagenet-object-localization-challenge.zip"
KAGGLE_DATA, KAGGLE_LABELS = "ILSVRC/Data/CLS-LOC", "LOC_val_solution.csv"
ARCHIVES = (".tar", ".tar.gz", ".tgz", ".zip")


class SplitsError(ValueError):
    """SOURCE holds splits, but not the ones asked for (or not in a usable way)."""


Splits = dict[str, dict[str, Any]]


def find_splits(source: str, wanted: Sequence[str] | None = None) -> Splits | None:
    """Each split SOURCE holds, as config entries (absolute paths); None for a single split."""
    path = os.path.abspath(source)
    if os.path.basename(path) == KAGGLE_ZIP:
        return kaggle_splits(path)
    if os.path.isdir(path):
        downloads = downloaded_splits(path)
        if downloads is not None:
            return downloads
        folders = {name for name in os.listdir(path) if os.path.isdir(os.path.join(path, name))}
        chosen = chosen_splits(folders, wanted, source, lambda name: folder_holds_images(os.path.join(path, name)))
        return None if chosen is None else {name: {"source": os.path.join(path, name)} for name in chosen}
    if path.endswith(ARCHIVES) and os.path.isfile(path):
        wrapper, folders, images = top_folders(path)
        chosen = chosen_splits(folders, wanted, source, lambda name: name in images)
        if chosen is None:
            return None
        return {name: {"source": path, "root": f"{wrapper}{name}"} for name in chosen}
    return None


def chosen_splits(
    folders: set[str], wanted: Sequence[str] | None, source: str, holds_images: Callable[[str], bool]
) -> list[str] | None:
    """The split folders to convert, in order; None when ``folders`` are no splits (class folders).
    Split folders beside other folders holding images (``valid/``; or classes ``cat/``, ``dog/``
    and one named ``test``) are either: the user says which, rather than losing those images."""
    if wanted:
        missing = [name for name in wanted if name not in folders]
        if missing:
            raise SplitsError(
                f"{source} holds no folder {', '.join(missing)} (--splits {','.join(wanted)}); "
                f"it holds {', '.join(sorted(folders)) or 'no folders'}"
            )
        return list(wanted)
    found = [name for name in SPLIT_NAMES if name in folders]
    others = sorted(name for name in folders - set(found) if not is_left_aside(name) and holds_images(name))
    if found and others:
        named = f"the split folder{'s' if len(found) > 1 else ''} {', '.join(found)}"
        every = ",".join(found + others)
        raise SplitsError(
            f"{source} holds {named} and other folders with images: {', '.join(others)}. If those are "
            f"splits too, name every split: --splits {every}; if {source} is one ImageFolder tree whose "
            f"classes are its folders, give --split train"
        )
    return found or None


def is_left_aside(folder: str) -> bool:
    """A hidden folder or macOS's ``__MACOSX``: no split and no class of anyone's."""
    return folder.startswith(".") or folder == "__MACOSX"


def folder_holds_images(folder: str) -> bool:
    """Whether any file under ``folder`` is one ImageFolder takes (the walk stops at the first)."""
    return any(any(map(is_image, names)) for _, _, names in os.walk(folder, followlinks=True))


def top_folders(archive: str) -> tuple[str, set[str], set[str]]:
    """The folders at the top of an archive, under its one wrapping folder if it has one
    (``data/train/...``): the wrapper (``"data/"`` or ``""``), the folder names, and those of
    them holding an image."""
    names = member_names(archive)
    tops = {name.split("/", 1)[0] for name in names if "/" in name}
    wrapper = ""
    if len(tops) == 1 and not set(SPLIT_NAMES) & tops:
        wrapper = f"{next(iter(tops))}/"
        names = [name.removeprefix(wrapper) for name in names if name.startswith(wrapper)]
    folders = {name.split("/", 1)[0] for name in names if "/" in name}
    images = {name.split("/", 1)[0] for name in names if "/" in name and is_image(name)}
    return wrapper, folders, images


def member_names(archive: str) -> list[str]:
    """Every member path of a .zip or tar (a .tar.gz is read through once)."""
    # imported here: every rule job imports this module (through the label keys), few read an archive
    import tarfile
    import zipfile

    if archive.endswith(".zip"):
        with zipfile.ZipFile(archive) as stream:
            return [name.lstrip("./") for name in stream.namelist()]
    with tarfile.open(archive) as stream:
        return [member.name.removeprefix("./") for member in stream]


def downloaded_splits(folder: str) -> Splits | None:
    """A folder of the ILSVRC2012 downloads, or of Kaggle's zip: its splits as the shipped configs have them."""
    entries = set(os.listdir(folder))
    if KAGGLE_ZIP in entries:
        return kaggle_splits(os.path.join(folder, KAGGLE_ZIP))
    if ILSVRC_TRAIN not in entries and ILSVRC_VAL not in entries:
        return None
    devkit = next((os.path.join(folder, name) for name in ILSVRC_DEVKITS if name in entries), None)
    splits: Splits = {}
    if ILSVRC_TRAIN in entries:
        splits["train"] = {"source": os.path.join(folder, ILSVRC_TRAIN), "layout": "ilsvrc-train"}
        if devkit:
            splits["train"]["devkit"] = devkit
    if ILSVRC_VAL in entries:
        labels = {"devkit": devkit} if devkit else {}
        if KAGGLE_LABELS in entries:
            labels = {"val_labels": os.path.join(folder, KAGGLE_LABELS)}
        if not labels:
            raise SplitsError(
                f"{folder} holds {ILSVRC_VAL} but not its labels: put {ILSVRC_DEVKITS[0]} "
                f"(or {KAGGLE_LABELS}) beside it"
            )
        splits["val"] = {"source": os.path.join(folder, ILSVRC_VAL), "layout": "ilsvrc-val", **labels}
    return splits


def kaggle_splits(archive: str) -> Splits:
    """Kaggle's ImageNet zip: train (class folders) and val (labelled by its CSV member), as
    config/imagenet-kaggle.yaml converts them."""
    return {
        "train": {"source": archive, "root": f"{KAGGLE_DATA}/train"},
        "val": {"source": archive, "root": f"{KAGGLE_DATA}/val", "layout": "ilsvrc-val", "val_labels": KAGGLE_LABELS},
    }
