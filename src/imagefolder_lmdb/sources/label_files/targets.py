"""From labels as written to class indices, as torchvision's ImageFolder would number them.

- Class names: the classes are the names sorted (as ImageFolder sorts class folders), and a label's
  target is its name's index.
- Class indices (a Kaggle ``0..N-1`` column): a label keeps its value as the target; sorting them as
  names would put ``10`` before ``2`` and renumber them. The classes are ``"0"`` .. ``str(max)``: a
  gap is a class without images in this split (train's class 7 stays 7 however few of its images a
  split holds). Labels.py checks each index (0 .. 2**31 - 1, meta/labels' int32); the largest may
  make at most MAX_INDEX_CLASSES classes by itself, checked before the list is made: a column of ids
  taken for labels (``5000000000``) would otherwise name billions of classes. ``classes:`` given
  sets the bound instead: the list is the user's, an index beyond it lies outside it.
- A given class list (the config's ``classes:``, or the list the splits share): names are numbered
  by their place in it; an index ``k`` names its ``k``-th class. A label outside it is left out and
  counted, as a class folder outside it is: a single-label image with it is left out, a multi-label
  image loses that label (and is kept, with the labels it has left).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from imagefolder_lmdb.classes.lists import OutsideClasses
from imagefolder_lmdb.printable import printable
from imagefolder_lmdb.sources.label_files.labels import Label, LabelColumn
from imagefolder_lmdb.sources.label_files.problems import LabelFileError

#: An image's target: a class index, or (multi-label) a tuple of them.
Target = int | tuple[int, ...]
#: The most classes integer labels make by themselves ("0" .. the largest); ``classes:`` goes past it.
MAX_INDEX_CLASSES = 1_000_000


@dataclass(frozen=True)
class Targets:
    """The class list, each row's target (None: left out, its class outside the list), and what was left out."""

    classes: tuple[str, ...]
    targets: list[Target | None]
    outside: OutsideClasses


def class_targets(labels: LabelColumn, places: Sequence[str], given: Sequence[str] | None) -> Targets:
    """Each row's target; ``places``: each row's place, for messages; ``given``: a class list to keep to."""
    written = [value if isinstance(value, tuple) else (value,) for value in labels.values]
    if labels.type == "int" and given is None:
        check_class_count(labels.column, written, places)
    classes = tuple(given) if given is not None else own_classes(labels.type, written)
    index_of = class_indices(labels.type, classes)
    outside = OutsideClasses()
    for label, count in Counter(label for row in written for label in row if label not in index_of).items():
        outside.add(str(label), count)
    targets: list[Target | None]
    if labels.multi:
        targets = [tuple(index_of[label] for label in row if label in index_of) for row in written]
    else:
        targets = [index_of.get(row[0]) for row in written]
    return Targets(classes, targets, outside)


def own_classes(label_type: str, written: Sequence[Sequence[Label]]) -> tuple[str, ...]:
    """The classes the labels themselves make: names sorted, or indices ``0`` .. the largest."""
    labels = {label for row in written for label in row}
    if label_type == "int":
        return tuple(str(index) for index in range(max((int(label) for label in labels), default=-1) + 1))
    return tuple(sorted(str(label) for label in labels))


def class_indices(label_type: str, classes: tuple[str, ...]) -> dict[Label, int]:
    """A label's target: a name's place in ``classes``, or an index that is one of its places."""
    if label_type == "int":
        return {index: index for index in range(len(classes))}
    return {name: index for index, name in enumerate(classes)}


def check_class_count(column: str, written: Sequence[Sequence[Label]], places: Sequence[str]) -> None:
    """Integer labels make classes 0 .. the largest: at most MAX_INDEX_CLASSES of them."""
    largest = max((int(label) for row in written for label in row), default=-1)
    if largest < MAX_INDEX_CLASSES:
        return
    place = next(place for row, place in zip(written, places, strict=True) if largest in row)
    raise LabelFileError(
        f"{printable(place)}: the label {largest} ({column!r}) would make {largest + 1:,} classes (0 .. {largest}), "
        f"more than the {MAX_INDEX_CLASSES:,} integer labels may make by themselves: if this column is an id, "
        "not a class, set label_column to the column of labels; if the dataset has that many classes, list "
        "them with classes: (a file of one name per line), which sets the bound."
    )
