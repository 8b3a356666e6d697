"""The class list a split is converted with: by default one list that every split shares.

ImageFolder gives each folder the classes it finds, so a val folder that lacks one class (or the
ILSVRC2012 val tar labelled with the devkit's 1,000 classes beside a 100-class train) gets other
indices for the same class names: a model is then scored against wrong labels. Here every split
of a config shares one list, from the config's ``classes:`` key (a list, or a text file with one
name per line) or else from the first split listed; a split may opt out with
``share_classes: false``. Index = position in the sorted list, as ImageFolder gives on a tree
holding exactly those class folders. Images of classes outside the list are set aside and
counted, never stored under another class's index.

The package ships named lists (``classes: imagenet1k``: the 1,000 ILSVRC2012 WNIDs with their
WordNet words, ``src/imagefolder_lmdb/classes/data/``); a name stands for its file wherever a list or
the devkit's class list is accepted. Any dataset whose classes are all ImageNet-1k WNIDs gets their
words (meta/json ``class_words``), whatever named the classes.
"""

from __future__ import annotations

import functools
import os
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The class lists the package ships, by the name a config gives (``classes: imagenet1k``).
SHIPPED_LISTS = ("imagenet1k",)
#: Where they lie: package data beside this module.
SHIPPED_FOLDER = Path(__file__).resolve().parent / "data"


class ClassListError(ValueError):
    """The configured class list is unusable, or names a class the source lacks."""


@dataclass
class ClassList:
    """The classes a split is stored with (sorted: index = position) and where they came from."""

    names: list[str]
    origin: str  # "from config/imagenet100.txt", "shared from train", ...
    explicit: bool  # from the config's classes: key, so every name must be in the source
    index: dict[str, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.index = {name: i for i, name in enumerate(self.names)}

    def __contains__(self, name: object) -> bool:
        return name in self.index


@dataclass
class OutsideClasses:
    """What a split's source holds beyond its class list: set aside, counted, and listed."""

    images: Counter[str] = field(default_factory=Counter)  # class name -> images set aside
    unread: list[str] = field(default_factory=list)  # classes whose folder or tar was never opened

    def add(self, name: str, images: int) -> None:
        if images:  # a class folder without images outside the list loses nothing
            self.images[name] += images

    def report(self, examples: int = 50) -> dict[str, Any]:
        """The counts.json entry."""
        return {
            "images": sum(self.images.values()),
            "classes": len(self.images),
            "per_class": dict(sorted(self.images.items())),
            "unread_classes": len(self.unread),
            "unread_examples": sorted(self.unread)[:examples],
        }


def read_class_file(path: str) -> list[str]:
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
        raise ClassListError(f"config key classes: cannot read {path!r} ({exc}){hint}") from exc
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


def wordnet_words(classes: list[str]) -> list[str] | None:
    """The words of each class when every class is an ImageNet-1k WNID (a WNID names one WordNet
    synset, so its words hold whatever named the class); None otherwise."""
    known = shipped_list("imagenet1k")
    words = dict(zip(known.names, known.words, strict=True))
    if not classes or any(name not in words for name in classes):
        return None
    return [words[name] for name in classes]


def configured_names(value: str | list[str], where: str = "config key classes") -> tuple[list[str], str]:
    """The sorted names of a ``classes:`` value (a shipped list's name, a list, or a file's path)
    and their origin text."""
    if is_shipped(value):
        return list(shipped_list(str(value)).names), configured_origin(value)
    if is_dataset(value):
        return dataset_classes(str(value), where), configured_origin(value)
    if isinstance(value, str):
        names = read_class_file(value)
        where = f"{where} ({value})"
    else:
        names = [str(name) for name in value]
    check_names(names, where)
    return sorted(names), configured_origin(value)


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


def configured_origin(value: str | list[str] | None) -> str:
    """Where the config's class list comes from, in words: a shipped list's name, a file's path, or
    None (or the list itself) for a list written in the config."""
    if is_shipped(value):
        return f"from {value}, the list shipped with imagefolder-lmdb"
    if isinstance(value, str):
        return f"from {value}"
    return "from the config's classes: list"


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


def missing_from_source(class_list: ClassList, found: Iterable[str], source: str) -> ClassListError | None:
    """For a list from the config: the error naming the classes ``source`` does not hold."""
    missing = sorted(set(class_list.names) - set(found))
    if not class_list.explicit or not missing:
        return None
    shown = ", ".join(missing[:20]) + (f" and {len(missing) - 20} more" if len(missing) > 20 else "")
    return ClassListError(
        f"{source}: the class list ({class_list.origin}) names {len(missing)} class(es) the source does not "
        f"hold: {shown}. Correct the list, or point the split at a source that has them."
    )
