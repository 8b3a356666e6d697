"""The version of the rule a label file's labels are read by, and whether an earlier rule read a
file otherwise: a dataset made by an earlier rule is made again only where its labels differ.

- Rule 1 (before the rule was versioned): a CSV label column was class indices only if every label
  was an integer literal; ``2.0`` and ``10.0`` (pandas' output for an int column that once held a
  NaN) were class names, sorted as text (``10.0`` before ``2.0``).
- Rule 2 (issue 57): a CSV column of numbers only is class indices, each a whole number (labels.py).
  JSONL and Parquet labels read as before (rule 1 refused a float label there), and so does every
  CSV column that holds a label that is not a number.

run/made_from.py records the rule for a split labelled by a file; a dataset without it was made by
rule 1, and is made again only where ``read_differently`` finds a difference.
"""

from __future__ import annotations

from collections.abc import Iterable

from imagefolder_lmdb.sources.label_files.problems import LabelFileError, first_few
from imagefolder_lmdb.sources.label_files.reading import read_table
from imagefolder_lmdb.sources.label_files.settings import LabelSettings, resolve_columns
from imagefolder_lmdb.sources.label_files.value_types import FLOAT_LITERAL, INT_LITERAL

#: The rule labels are read by now.
LABEL_RULE = 2


def read_differently(name: str, data: bytes, settings: LabelSettings) -> str | None:
    """How rule 2 reads label file ``name`` (its bytes ``data``) otherwise than rule 1, in words that
    follow "made again: "; None where both read it alike (or it cannot be read: its check says why)."""
    try:
        table = read_table(name, data)
        if not table.text_cells:
            return None
        column = resolve_columns(table, settings).label
    except LabelFileError:
        return None
    separator = settings.label_separator
    cells = (row.values.get(column, "") for row in table.rows)
    labels = [label for cell in cells for label in ((cell.split(separator) if cell else []) if separator else [cell])]
    return numbers_as_names(labels, f"the labels of {name}")


def classes_read_differently(classes: Iterable[str]) -> str | None:
    """Whether a dataset's class list is what rule 1 made of CSV labels that rule 2 reads as class
    indices: numbers only, some written as floats (Hugging Face's metadata files, which lie inside
    the source, are judged by the list they made rather than read again)."""
    return numbers_as_names(list(classes), "its classes")


def numbers_as_names(labels: list[str], what: str) -> str | None:
    """The words for labels that rule 1 read as names and rule 2 as class indices; None for others."""
    if not labels or not all(FLOAT_LITERAL.match(label) for label in labels):
        return None
    floats = sorted({label for label in labels if not INT_LITERAL.match(label)})
    if not floats:
        return None
    return (
        f"its labels are read by label rule {LABEL_RULE}: {what} are numbers, written as floats too "
        f"({first_few(floats)}), which are class indices now, not class names sorted as text"
    )
