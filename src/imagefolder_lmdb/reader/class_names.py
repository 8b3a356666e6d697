"""Class lists as names: a text file of them (one per line), a list the package ships
(``imagenet1k``), a dataset's own list (``FILE.lmdb``), or the names themselves, checked
(``class_names``). The converter's ``classes:`` (imagefolder_lmdb.classes.lists, which imports them
from here) and the reader's views (``LMDBDataset(path, classes=...)``) read a list by the same rules.
"""

from __future__ import annotations

import functools
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

#: The class lists the package ships, by the name a config gives (``classes: imagenet1k``).
SHIPPED_LISTS = ("imagenet1k",)
#: Where they lie: package data of imagefolder_lmdb.classes (read as files here: the reader imports
#: nothing of the workflow, and the lists ship in every install).
SHIPPED_FOLDER = Path(__file__).resolve().parent.parent / "classes" / "data"


class ClassListError(ValueError):
    """The configured class list is unusable, or names a class the source lacks."""


def read_class_file(path: str, where: str = "config key classes") -> list[str]:
    """Class names from a text file: one per line; blank lines and ``#`` comments ignored; a byte
    order mark (some editors save one) is not part of the first name."""
    try:
        with open(path, encoding="utf-8-sig") as stream:
            lines = [line.split("#", 1)[0].strip() for line in stream]
    except (OSError, UnicodeDecodeError) as exc:
        one = os.path.basename(path)
        hint = (
            f"; for a list of the one class {one!r} give a list: [{one}] in a config file, "
            f"config={{'classes': [{one!r}]}} in Python, --classes {one}, on the command line (the comma makes "
            "it a list; without it a file of that name is read)"
            if isinstance(exc, FileNotFoundError) and os.sep not in path
            else ""
        )
        raise ClassListError(f"{where}: cannot read {path!r} ({exc}){hint}") from exc
    return [line for line in lines if line]


@dataclass(frozen=True)
class ShippedList:
    """A class list the package ships: sorted names (WNIDs) and the words of each."""

    name: str
    names: list[str]
    words: list[str]
    path: str


def is_shipped(value: object) -> bool:
    """Whether a ``classes:`` or ``devkit:`` value names a shipped list (a path never does)."""
    return isinstance(value, str) and value in SHIPPED_LISTS


def shipped_path(name: str) -> str:
    return str(SHIPPED_FOLDER / f"{name}.tsv")


@functools.cache
def shipped_list(name: str) -> ShippedList:
    """The shipped list ``name``: ``WNID<TAB>words`` lines, ``#`` comments, sorted by WNID."""
    path = shipped_path(name)
    try:
        with open(path, encoding="utf-8") as stream:
            rows = [line.rstrip("\n").split("\t", 1) for line in stream if line.strip() and not line.startswith("#")]
    except (OSError, UnicodeDecodeError) as exc:
        raise ClassListError(
            f"{path}: the shipped class list {name} cannot be read ({exc}). Reinstall imagefolder-lmdb."
        ) from exc
    names, words = [row[0] for row in rows], [row[1] if len(row) > 1 else "" for row in rows]
    check_names(names, path)
    if names != sorted(names) or not all(words):
        raise ClassListError(f"{path}: damaged: not sorted, or a class without words. Reinstall imagefolder-lmdb.")
    return ShippedList(name, names, words, path)


def is_dataset(value: object) -> bool:
    """Whether a ``classes:`` value names a dataset file, whose class list (its numbering) a split
    takes as a split sharing another's does: a class without images here keeps its number."""
    return isinstance(value, str) and value.endswith(".lmdb")


def dataset_classes(path: str, where: str) -> list[str]:
    """The class list stored in the dataset ``path``."""
    from imagefolder_lmdb.reader.document import read_document

    document = read_document(path) if os.path.isfile(path) else None
    if document is None or not isinstance(document.get("classes"), list):
        raise ClassListError(f"{where} ({path}): not an imagefolder-lmdb dataset file, whose class list it could take")
    return list(document["classes"])


def check_names(names: list[str], where: str) -> None:
    """A class list must be non-empty, hold each name once, and hold names a folder can have."""
    if not names:
        raise ClassListError(f"{where}: the class list is empty")
    twice = sorted(name for name, count in Counter(names).items() if count > 1)
    if twice:
        raise ClassListError(f"{where}: listed more than once: {', '.join(twice[:10])}")
    odd = [name for name in names if "/" in name or "\\" in name or name in (".", "..")]
    if odd:
        raise ClassListError(f"{where}: not a class folder name: {odd[0]!r}")


def class_names(value: str | Sequence[str], where: str = "config key classes") -> list[str]:
    """The sorted names of a class list: a shipped list's name (``imagenet1k``), a dataset file
    (``FILE.lmdb``: its class list), a text file's path (one name per line), or the names."""
    if is_shipped(value):
        return list(shipped_list(str(value)).names)
    if is_dataset(value):
        return dataset_classes(str(value), where)
    if isinstance(value, str):
        names = read_class_file(value, where)
        where = f"{where} ({value})"
    else:
        names = [str(name) for name in value]
    check_names(names, where)
    return sorted(names)
