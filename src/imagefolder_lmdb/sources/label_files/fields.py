"""Per-image fields: every column besides the file column and the label column, typed by the rule of
value_types.py (``int``, ``float``, ``str``, or ``list[...]`` of one of them); every row needs a value.
A value is bounded by what a dataset can store and read back: a float is finite (meta/fields is
JSON, which has no NaN or infinity: such a value failed once the images were encoded), an int has
at most the 4,300 digits Python reads (a longer CSV cell was a ValueError traceback), checked on the
cell before an int is made of it. A large int within that is kept exactly, as before."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from imagefolder_lmdb.printable import printable
from imagefolder_lmdb.sources.label_files.problems import LabelFileError
from imagefolder_lmdb.sources.label_files.reading import RawRow
from imagefolder_lmdb.sources.label_files.value_types import (
    CONVERT,
    MixedTypes,
    column_type,
    value_type,
    values_type,
)

#: A field's value: a scalar, or a list of scalars of one type.
FieldValue = int | float | str | list[int] | list[float] | list[str]
#: The name ``target_type`` and the reader use for the label: no field may take it.
RESERVED = "label"
#: The most digits of an int cell a field holds: those Python converts (sys.int_info).
MAX_INT_DIGITS = sys.int_info.default_max_str_digits


@dataclass(frozen=True)
class TypedColumn:
    """A field's type (``int``, ``float``, ``str``, ``list[int]``, ...) and its value in each row."""

    type: str
    values: list[FieldValue]


def field_column(column: str, rows: Sequence[RawRow], text_cells: bool) -> TypedColumn:
    """Column ``column`` of ``rows`` typed: CSV cells by the CSV rule, other values as written."""
    return text_field(column, rows) if text_cells else written_field(column, rows)


def text_field(column: str, rows: Sequence[RawRow]) -> TypedColumn:
    """A CSV column: its type from its non-empty cells; an empty cell in a numeric column is a value
    missing (never 0, never text), an error."""
    cells = [row.values[column] for row in rows]
    kind = column_type([cell for cell in cells if cell != ""])
    if kind != "str" and "" in cells:
        empty = rows[cells.index("")].place
        raise LabelFileError(
            f"{printable(empty)}: column {column!r} is empty, and its other cells are {kind} numbers: "
            "give every row a value, or drop the column."
        )
    if kind == "int":
        too_long = next((index for index, cell in enumerate(cells) if too_many_digits(cell)), None)
        if too_long is not None:
            raise LabelFileError(unstorable(column, cells[too_long], rows[too_long].place))
    convert = CONVERT[kind]
    return checked_column(column, TypedColumn(kind, [convert(cell) for cell in cells]), rows)


def written_field(column: str, rows: Sequence[RawRow]) -> TypedColumn:
    """A JSONL or Parquet column: each value's own type; a column of lists or of scalars, not both."""
    scalars: dict[str, str] = {}
    items: dict[str, str] = {}
    lists: str | None = None
    for row in rows:
        value = row.values.get(column)
        if isinstance(value, list):
            lists = lists or row.place
            for item in value:
                items.setdefault(scalar_type(column, item, row.place), row.place)
        else:
            scalars.setdefault(scalar_type(column, value, row.place), row.place)
    if lists and scalars:
        raise LabelFileError(
            f"{printable(lists)}: column {column!r} holds a list, but {printable(next(iter(scalars.values())))} "
            "a single value: write every row's value as a list, or every one as a single value."
        )
    kind = one_type(column, items if lists else scalars)
    convert = CONVERT[kind]
    if lists:
        values: list[FieldValue] = [[convert(item) for item in row.values[column]] for row in rows]
        return checked_column(column, TypedColumn(f"list[{kind}]", values), rows)
    return checked_column(column, TypedColumn(kind, [convert(row.values[column]) for row in rows]), rows)


def checked_column(column: str, typed: TypedColumn, rows: Sequence[RawRow]) -> TypedColumn:
    """``typed``, once every float is finite (ints and text: nothing to check here)."""
    if "float" not in typed.type:
        return typed
    for value, row in zip(typed.values, rows, strict=True):
        for item in value if isinstance(value, list) else [value]:
            if not storable(item):
                raise LabelFileError(unstorable(column, item, row.place))
    return typed


def too_many_digits(cell: str) -> bool:
    """Whether an integer literal has more digits than Python converts (its sign is no digit)."""
    return len(cell) > MAX_INT_DIGITS and len(cell.lstrip("+-")) > MAX_INT_DIGITS


def storable(value: object) -> bool:
    return not isinstance(value, float) or math.isfinite(value)


def unstorable(column: str, value: object, place: str) -> str:
    """The line for a field value no dataset stores: an int of thousands of digits, NaN or an infinity."""
    text = str(value)
    shown = text if len(text) <= 24 else f"{text[:24]}... ({len(text)} characters)"
    if isinstance(value, float):
        why = "not a finite number (a dataset stores a field's floats as JSON, which has no NaN or infinity)"
    else:
        why = f"an int of more than the {MAX_INT_DIGITS:,} digits Python reads"
    return (
        f"{printable(place)}: column {column!r} holds {shown}, {why}: write a value that fits, give it as text "
        "in a column of text, or drop the column."
    )


def scalar_type(column: str, value: Any, place: str) -> str:
    """The type of one value of field ``column``; an error for a value no field holds."""
    kind = value_type(value)
    if kind is not None:
        return kind
    if value is None:
        raise LabelFileError(
            f"{printable(place)}: column {column!r} has no value: give every row a value, or drop the column."
        )
    written = "true/false" if isinstance(value, bool) else f"a {type(value).__name__}"
    raise LabelFileError(
        f"{printable(place)}: column {column!r} holds {written}: a field is an int, a float, a str or a list "
        "of one of them; write it as one of these (1/0 for true/false), or drop the column."
    )


def one_type(column: str, types_seen: dict[str, str]) -> str:
    """The one type of a column's values (or of its lists' items)."""
    try:
        return values_type(types_seen)
    except MixedTypes as mixed:
        (number, number_place), (_, text_place) = mixed.first, mixed.second
        raise LabelFileError(
            f"{printable(text_place)}: column {column!r} holds text, but {printable(number_place)} a number "
            f"({number}): write the column's values as one type (numbers as text in quotes, or text as numbers)."
        ) from None
