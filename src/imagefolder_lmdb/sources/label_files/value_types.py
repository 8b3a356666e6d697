"""The types a label file's values may have, and the rule that gives a column one type.

A CSV cell is text: it is an ``int`` if it is an integer literal (``[+-]?[0-9]+``), a ``float`` if it
is a decimal literal (``1.5``, ``-.5``, ``2e-3``, or an integer literal), else a ``str``. A column is
``int`` only if every cell is an integer literal, ``float`` if every cell is an integer or decimal
literal, else ``str`` (so ``inf``, ``nan``, ``NA``, ``True`` are text). A JSONL or Parquet value keeps
the type it was written with: ``int``, ``float``, ``str`` or a list of them; a column of ints and
floats is ``float``, any other mix is an error, and so are ``true``/``false``, ``null``, objects and
bytes (no field of this format holds them).
"""

from __future__ import annotations

import re
from typing import Any

#: An integer literal and a decimal literal, the CSV rule's two tests of a cell.
INT_LITERAL = re.compile(r"[+-]?[0-9]+\Z")
FLOAT_LITERAL = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\Z")
#: The scalar types, narrowest first: a column takes the first that holds every value.
SCALAR_TYPES = ("int", "float", "str")
#: What a value of each type becomes once the column's type is known.
CONVERT: dict[str, type] = {"int": int, "float": float, "str": str}


class MixedTypes(ValueError):
    """Values of two types that no one type holds: ``first`` and ``second`` are (type, place)."""

    def __init__(self, first: tuple[str, str], second: tuple[str, str]) -> None:
        super().__init__(first, second)
        self.first, self.second = first, second


def column_type(cells: list[str]) -> str:
    """The type of a CSV column of these (non-empty) cells: the narrowest that is every cell's
    (one pass a type: the int test stops at the first cell that is not one)."""
    if not cells:
        return "str"
    if all(INT_LITERAL.match(cell) for cell in cells):
        return "int"
    if all(FLOAT_LITERAL.match(cell) for cell in cells):
        return "float"
    return "str"


def cells_type(types_seen: dict[str, str]) -> str:
    """The type of a CSV column whose cells are of ``types_seen`` (type -> first place): the widest."""
    return max(types_seen, key=SCALAR_TYPES.index, default="str")


def value_type(value: Any) -> str | None:
    """The scalar type of a JSONL or Parquet value; None for one no field holds (bool, null, ...)."""
    if isinstance(value, bool) or value is None:
        return None
    for name in SCALAR_TYPES:
        if isinstance(value, CONVERT[name]):
            return name
    return None


def values_type(types_seen: dict[str, str]) -> str:
    """The one type of JSONL or Parquet values of ``types_seen`` (type -> first place): ints widen to
    float (JSON writers drop a whole float's ``.0``); text beside numbers is an error."""
    if "str" in types_seen and len(types_seen) > 1:
        number = next(name for name in types_seen if name != "str")
        raise MixedTypes((number, types_seen[number]), ("str", types_seen["str"]))
    return cells_type(types_seen)
