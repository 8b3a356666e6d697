"""The label column: each row's label, or list of labels (multi-label), as written.

A label is a class name (text) or a class index (an integer): one kind across the file. A row holds
one label, or, in a multi-label file, a list of them (``[]``: none). A file is multi-label when its
label values are lists (JSONL, Parquet), or when ``label_separator`` is set (CSV: ``cat|dog``, an
empty cell for none).

One rule for numbers, in every format: a label that is a whole number is a class index (a CSV's
``3``, ``3.0`` or ``3e0``; JSON's ``3`` or ``3.0``, as pandas writes an int column that once held a
NaN), so ``1`` and ``1.0`` are one class; a number that is not whole (``1.5``, NaN) is refused, and so
is an index outside ``0 .. 2**31 - 1`` (meta/labels stores int32). A CSV cell carries no type, so a
CSV column is class indices only if every label is a number, else class names, each cell as written
(``7`` beside ``cat`` is a name, as a class folder ``7`` would be); JSON and Parquet write their
types, and indices beside names are an error there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from imagefolder_lmdb.printable import printable
from imagefolder_lmdb.sources.label_files.problems import LabelFileError
from imagefolder_lmdb.sources.label_files.reading import RawRow
from imagefolder_lmdb.sources.label_files.value_types import FLOAT_LITERAL, value_type

#: One label as written: a class name or a class index.
Label = int | str
#: A row's labels: one, or (multi-label) a tuple of them.
RowLabels = Label | tuple[Label, ...]
#: The largest class index a dataset stores: meta/labels and meta/label_lists hold int32.
LARGEST_INDEX = 2**31 - 1
#: How many characters of a label a message shows (a label may be thousands of digits long).
SHOWN = 24


@dataclass(frozen=True)
class LabelColumn:
    """Each row's label(s); ``type``: ``int`` (class indices) or ``str`` (class names)."""

    column: str  # the label column's name, for messages
    multi: bool
    type: str
    values: list[RowLabels]


def label_column(column: str, rows: Sequence[RawRow], text_cells: bool, separator: str | None) -> LabelColumn:
    """The labels of ``rows``: CSV cells, or values as JSONL and Parquet write them."""
    if text_cells:
        return text_labels(column, rows, separator)
    if separator is not None:
        raise LabelFileError(
            f"{printable(rows[0].place if rows else column)}: label_separator splits a CSV cell; in a JSONL or "
            "Parquet file write each row's labels as a list, and remove label_separator."
        )
    multi = next((row.place for row in rows if isinstance(row.values.get(column), list)), None)
    return written_labels(column, rows, multi) if multi else written_label(column, rows)


def text_labels(column: str, rows: Sequence[RawRow], separator: str | None) -> LabelColumn:
    """CSV labels: one per cell, or the cell split at ``separator``; class indices if all are numbers."""
    written: list[list[str] | str] = []
    for row in rows:
        cell = row.values[column]
        if separator is None:
            written.append(one_text_label(column, cell, row.place))
        else:
            written.append([one_text_label(column, item, row.place, cell) for item in split(cell, separator)])
    texts = [label for labels in written for label in (labels if isinstance(labels, list) else [labels])]
    if not texts or not all(plain_index(label) or FLOAT_LITERAL.match(label) for label in texts):
        names: list[RowLabels] = [tuple(labels) if isinstance(labels, list) else labels for labels in written]
        return LabelColumn(column, separator is not None, "str", names)
    values: list[RowLabels] = [
        tuple(text_index(column, label, row.place) for label in labels)
        if isinstance(labels, list)
        else text_index(column, labels, row.place)
        for labels, row in zip(written, rows, strict=True)
    ]
    return LabelColumn(column, separator is not None, "int", values)


def text_index(column: str, label: str, place: str) -> int:
    """A CSV number label as a class index: whole (``3``, ``3.0``, ``3e2``) and within int32,
    checked on the text before any int is made of it (a 5,000-digit cell is no int to make)."""
    if len(label) < 10 and plain_index(label):  # most labels: parsed without Decimal
        return int(label)
    try:
        number = Decimal(label)
        whole = number == number.to_integral_value()
    except InvalidOperation:  # an exponent beyond what Decimal holds: no class index either
        raise LabelFileError(out_of_range(column, label, place)) from None
    if not whole:
        raise LabelFileError(not_whole(column, label, place))
    return checked_index(column, number, label, place)


def plain_index(label: str) -> bool:
    """Whether a CSV label is ASCII digits only (``²`` is a digit to str.isdigit, not to int): a test
    in C, ahead of the regular expression, for the million labels of a Kaggle column."""
    return label.isascii() and label.isdigit()


def checked_index(column: str, number: int | Decimal, written: object, place: str) -> int:
    """``number`` (written as ``written``) as a class index: from 0 to LARGEST_INDEX."""
    if number < 0:
        raise LabelFileError(
            f"{printable(place)}: the label {shown(written)} is negative: class indices count from 0; "
            "write the class index (0 .. number of classes - 1) or the class name."
        )
    if number > LARGEST_INDEX:
        raise LabelFileError(out_of_range(column, written, place))
    return int(number)


def out_of_range(column: str, written: object, place: str) -> str:
    return (
        f"{printable(place)}: the label {shown(written)} ({column!r}) is beyond the largest class index a "
        f"dataset stores, {LARGEST_INDEX} (meta/labels is int32): if this column is an id, not a class, set "
        "label_column to the column of labels; else write the class index (0 .. number of classes - 1) or "
        "the class name."
    )


def not_whole(column: str, written: object, place: str) -> str:
    return (
        f"{printable(place)}: the label {shown(written)} ({column!r}) is a number but not a whole one: a "
        "number label is a class index (3 or 3.0); write the class index, or a class name that is not a "
        "number."
    )


def shown(written: object) -> str:
    """A label as a message shows it: at most SHOWN characters of it."""
    text = str(written) if isinstance(written, (str, Decimal)) else repr(written)
    return text if len(text) <= SHOWN else f"{text[:SHOWN]}... ({len(text)} characters)"


def split(cell: str, separator: str) -> list[str]:
    """A multi-label cell's labels; an empty cell holds none."""
    return cell.split(separator) if cell else []


def one_text_label(column: str, label: str, place: str, cell: str | None = None) -> str:
    """A CSV label; an empty one is an error (an image with no label in a single-label file)."""
    if label:
        return label
    if cell is None:
        raise LabelFileError(
            f"{printable(place)}: the label ({column!r}) is empty: give the image its label or remove the row "
            "(for several labels per image, or none, set label_separator)."
        )
    raise LabelFileError(
        f"{printable(place)}: the labels {cell!r} ({column!r}) hold an empty one: remove the doubled or "
        "trailing separator."
    )


def written_label(column: str, rows: Sequence[RawRow]) -> LabelColumn:
    """JSONL or Parquet single labels: all names or all indices."""
    types_seen: dict[str, str] = {}
    values: list[RowLabels] = []
    for row in rows:
        label = written_one(column, row.values.get(column), row.place)
        types_seen.setdefault(type(label).__name__, row.place)
        values.append(label)
    return LabelColumn(column, False, one_label_type(column, types_seen), values)


def written_labels(column: str, rows: Sequence[RawRow], first_list: str) -> LabelColumn:
    """JSONL or Parquet label lists: every row a list, every label of every list of one type."""
    types_seen: dict[str, str] = {}
    values: list[RowLabels] = []
    for row in rows:
        labels = row.values.get(column)
        if not isinstance(labels, list):
            raise LabelFileError(
                f"{printable(row.place)}: the label ({column!r}) is {labels!r}, but {printable(first_list)} "
                "holds a list: write every row's labels as a list ([] for none)."
            )
        checked = tuple(written_one(column, label, row.place) for label in labels)
        for label in checked:
            types_seen.setdefault(type(label).__name__, row.place)
        values.append(checked)
    return LabelColumn(column, True, one_label_type(column, types_seen), values)


def written_one(column: str, label: Any, place: str) -> Label:
    """One label as JSONL or Parquet writes it: a class name, or a class index (a whole number,
    ``3.0`` too, within int32)."""
    kind = value_type(label)
    if kind == "str" and label != "":
        return str(label)
    if kind == "int":
        return checked_index(column, label, label, place)
    if kind == "float" and label == label:  # NaN is pandas' missing value: an empty label, below
        if not label.is_integer():
            raise LabelFileError(not_whole(column, label, place))
        return checked_index(column, Decimal(label), label, place)
    if label is None or label == "" or kind == "float":
        raise LabelFileError(
            f"{printable(place)}: the label ({column!r}) is empty: give the image its label or remove the row "
            "(a multi-label file writes [] for an image with none)."
        )
    raise LabelFileError(
        f"{printable(place)}: the label ({column!r}) is {shown(label)}: a label is a class name (text) or a "
        "class index (a whole number); write it as one."
    )


def one_label_type(column: str, types_seen: dict[str, str]) -> str:
    """The labels' one type; names beside indices are an error (which class would ``3`` be?)."""
    if len(types_seen) > 1:
        raise LabelFileError(
            f"{printable(types_seen['str'])}: a label ({column!r}) is text, but {printable(types_seen['int'])} "
            "holds an integer: write every label as a class name, or every one as a class index."
        )
    return next(iter(types_seen), "str")
