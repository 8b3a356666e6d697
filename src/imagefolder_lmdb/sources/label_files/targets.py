"""From labels as written to class indices, as torchvision's ImageFolder would number them.

- Class names: the classes are the names sorted (as ImageFolder sorts class folders), and a label's
  target is its name's index.
- Class indices (a Kaggle ``0..N-1`` column): a label keeps its value as the target; sorting them as
  names would put ``10`` before ``2`` and renumber them. The classes are ``"0"`` .. ``str(max)``: a
  gap is a class without images in this split (train's class 7 stays 7 however few of its images a
  split holds); a negative index is an error.
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


@dataclass(frozen=True)
class Targets:
    """The class list, each row's target (None: left out, its class outside the list), and what was left out."""

    classes: tuple[str, ...]
    targets: list[Target | None]
    outside: OutsideClasses


def class_targets(labels: LabelColumn, places: Sequence[str], given: Sequence[str] | None) -> Targets:
    """Each row's target; ``places``: each row's place, for messages; ``given``: a class list to keep to."""
    written = [value if isinstance(value, tuple) else (value,) for value in labels.values]
    if labels.type == "int":
        check_indices(written, places)
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


def check_indices(written: Sequence[Sequence[Label]], places: Sequence[str]) -> None:
    """Class indices count from 0."""
    for row, place in zip(written, places, strict=True):
        negative = next((label for label in row if int(label) < 0), None)
        if negative is not None:
            raise LabelFileError(
                f"{printable(place)}: the label {negative} is negative: class indices count from 0; "
                "write the class index (0 .. number of classes - 1) or the class name."
            )
