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

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

# The reading of a list lives with the reader, whose views take the same lists (LMDBDataset(path,
# classes=...)); re-exported here, where the workflow has always imported them.
from imagefolder_lmdb.reader.class_names import (
    SHIPPED_FOLDER,
    SHIPPED_LISTS,
    ClassListError,
    ShippedList,
    check_names,
    class_names,
    dataset_classes,
    is_dataset,
    is_shipped,
    read_class_file,
    shipped_list,
    shipped_path,
)

__all__ = [
    "SHIPPED_FOLDER",
    "SHIPPED_LISTS",
    "ClassList",
    "ClassListError",
    "OutsideClasses",
    "ShippedList",
    "check_names",
    "class_names",
    "configured_names",
    "configured_origin",
    "dataset_classes",
    "is_dataset",
    "is_shipped",
    "missing_from_source",
    "read_class_file",
    "shipped_list",
    "shipped_path",
    "wordnet_words",
]


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
    return class_names(value, where), configured_origin(value)


def configured_origin(value: str | list[str] | None) -> str:
    """Where the config's class list comes from, in words: a shipped list's name, a file's path, or
    None (or the list itself) for a list written in the config."""
    if is_shipped(value):
        return f"from {value}, the list shipped with imagefolder-lmdb"
    if isinstance(value, str):
        return f"from {value}"
    return "from the config's classes: list"


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
