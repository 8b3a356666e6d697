"""The label column: each row's label, or list of labels (multi-label), as written.

A label is a class name (text) or a class index (an integer): one kind across the file. A row holds
one label, or, in a multi-label file, a list of them (``[]``: none). A file is multi-label when its
label values are lists (JSONL, Parquet), or when ``label_separator`` is set (CSV: ``cat|dog``, an
empty cell for none). In a CSV the labels are integers only if every label is an integer literal.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from imagefolder_lmdb.printable import printable
from imagefolder_lmdb.sources.label_files.problems import LabelFileError
from imagefolder_lmdb.sources.label_files.reading import RawRow
from imagefolder_lmdb.sources.label_files.value_types import INT_LITERAL, value_type

#: One label as written: a class name or a class index.
Label = int | str
#: A row's labels: one, or (multi-label) a tuple of them.
RowLabels = Label | tuple[Label, ...]


@dataclass(frozen=True)
class LabelColumn:
    """Each row's label(s); ``type``: ``int`` (class indices) or ``str`` (class names)."""

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
    """CSV labels: one per cell, or the cell split at ``separator``; integers if all are literals."""
    written: list[list[str] | str] = []
    for row in rows:
        cell = row.values[column]
        if separator is None:
            written.append(one_text_label(column, cell, row.place))
        else:
            written.append([one_text_label(column, item, row.place, cell) for item in split(cell, separator)])
    texts = [label for labels in written for label in (labels if isinstance(labels, list) else [labels])]
    is_int = all(INT_LITERAL.match(label) for label in texts) and bool(texts)
    kind = int if is_int else str
    values: list[RowLabels] = [
        tuple(kind(label) for label in labels) if isinstance(labels, list) else kind(labels) for labels in written
    ]
    return LabelColumn(separator is not None, kind.__name__, values)


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
    for row in rows:
        types_seen.setdefault(written_type(column, row.values.get(column), row.place), row.place)
    return LabelColumn(False, one_label_type(column, types_seen), [row.values[column] for row in rows])


def written_labels(column: str, rows: Sequence[RawRow], first_list: str) -> LabelColumn:
    """JSONL or Parquet label lists: every row a list, every label of every list of one type."""
    types_seen: dict[str, str] = {}
    for row in rows:
        labels = row.values.get(column)
        if not isinstance(labels, list):
            raise LabelFileError(
                f"{printable(row.place)}: the label ({column!r}) is {labels!r}, but {printable(first_list)} "
                "holds a list: write every row's labels as a list ([] for none)."
            )
        for label in labels:
            types_seen.setdefault(written_type(column, label, row.place), row.place)
    values: list[RowLabels] = [tuple(row.values[column]) for row in rows]
    return LabelColumn(True, one_label_type(column, types_seen), values)


def written_type(column: str, label: Any, place: str) -> str:
    """``int`` or ``str``: the type of one label as JSONL or Parquet writes it."""
    kind = value_type(label)
    if kind in ("int", "str") and label != "":
        return str(kind)
    if label is None or label == "":
        raise LabelFileError(
            f"{printable(place)}: the label ({column!r}) is empty: give the image its label or remove the row "
            "(a multi-label file writes [] for an image with none)."
        )
    raise LabelFileError(
        f"{printable(place)}: the label ({column!r}) is {label!r}: a label is a class name (text) or a class "
        "index (an integer); write it as one."
    )


def one_label_type(column: str, types_seen: dict[str, str]) -> str:
    """The labels' one type; names beside indices are an error (which class would ``3`` be?)."""
    if len(types_seen) > 1:
        raise LabelFileError(
            f"{printable(types_seen['str'])}: a label ({column!r}) is text, but {printable(types_seen['int'])} "
            "holds an integer: write every label as a class name, or every one as a class index."
        )
    return next(iter(types_seen), "str")
