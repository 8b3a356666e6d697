"""A label file's rows as they are written, before any meaning: ``.csv`` (the stdlib csv module: a
byte order mark, quoted commas and CRLF line ends read right), ``.jsonl`` (one JSON object a line) or
``.parquet`` (pyarrow). Each row keeps its place in the file for messages."""

from __future__ import annotations

import codecs
import hashlib
import io
import json
import os
import posixpath
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from imagefolder_lmdb.printable import printable
from imagefolder_lmdb.sources.label_files.problems import LabelFileError

#: The kinds of label file, by suffix.
SUFFIXES = (".csv", ".jsonl", ".parquet")


class RawRow(NamedTuple):  # a tuple: made once per row, 100k times for a large file
    """One row: where it is (``train.csv line 3``) and its values by column."""

    place: str
    values: dict[str, Any]


@dataclass(frozen=True)
class RawTable:
    """A label file's columns and rows. ``text_cells``: every value is the text of a CSV cell, typed
    later by the CSV rule (fields.py); JSONL and Parquet values keep the type they were written with."""

    name: str  # as the caller names the file: in messages and in the digest
    columns: tuple[str, ...]
    rows: tuple[RawRow, ...]
    text_cells: bool
    sha256: str


def label_file_bytes(path: str) -> bytes:
    """The bytes of the label file at ``path``, read once while it is unchanged: the plan's check of
    its columns and its check against a folder's images read the same bytes (issue 62)."""
    found = os.stat(path)
    key = (os.path.realpath(path), found.st_ino, found.st_size, found.st_mtime_ns)
    if key not in _LABEL_FILES_READ:
        with open(path, "rb") as stream:
            data = stream.read()
        if len(_LABEL_FILES_READ) >= 4:  # a few splits' label files in one plan; no more held
            _LABEL_FILES_READ.pop(next(iter(_LABEL_FILES_READ)))
        _LABEL_FILES_READ[key] = data
    return _LABEL_FILES_READ[key]


#: The label files read, by real path and what ``os.stat`` says of them (a changed file: another key).
_LABEL_FILES_READ: dict[tuple[str, int, int, int], bytes] = {}


def read_table(name: str, data: bytes) -> RawTable:
    """The rows of label file ``name`` whose bytes are ``data``; its kind from its suffix."""
    reader = TABLE_READERS.get(posixpath.splitext(name)[1].lower())
    if reader is None:
        raise LabelFileError(
            f"{printable(name)}: a label file must end in {', '.join(SUFFIXES)}: rename it, or convert it to one."
        )
    columns, rows = reader(name, data)
    return RawTable(name, columns, rows, name.lower().endswith(".csv"), hashlib.sha256(data).hexdigest())


def utf8_text(name: str, data: bytes) -> str:
    """``data`` as text; a byte order mark (some spreadsheet programs write one) is not text."""
    start = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        return data[start:].decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = start + exc.start
        line = data.count(b"\n", 0, offset) + 1
        raise LabelFileError(
            f"{printable(name)}: not UTF-8 text at byte {offset} (line {line}): save the file as UTF-8."
        ) from None


def read_csv(name: str, data: bytes) -> tuple[tuple[str, ...], tuple[RawRow, ...]]:
    """A header line, then one row per record; blank lines skipped."""
    import csv  # only where a .csv is read: every rule job imports this module

    lines = csv.reader(io.StringIO(utf8_text(name, data), newline=""))
    columns: tuple[str, ...] = ()
    rows: list[RawRow] = []
    try:
        for cells in lines:
            if not cells:
                continue
            if not columns:
                columns = header(name, cells)
            elif len(cells) == len(columns):  # csv_row's check, inlined: 100k rows
                rows.append(RawRow(f"{name} line {lines.line_num}", dict(zip(columns, cells, strict=True))))
            else:
                rows.append(csv_row(name, lines.line_num, columns, cells))
    except csv.Error as exc:
        raise LabelFileError(f"{printable(name)} line {lines.line_num}: not CSV ({exc}): fix the line.") from None
    if not columns:
        raise LabelFileError(f"{printable(name)}: the file is empty: write a header line, then one row per image.")
    return columns, tuple(rows)


def header(name: str, cells: list[str]) -> tuple[str, ...]:
    """The column names; a name written twice would hide one of its columns."""
    seen: set[str] = set()
    for cell in cells:
        if cell in seen:
            raise LabelFileError(f"{printable(name)} line 1: column {cell!r} appears twice: rename one of them.")
        seen.add(cell)
    return tuple(cells)


def csv_row(name: str, line: int, columns: tuple[str, ...], cells: list[str]) -> RawRow:
    """A record as a row; a cell count other than the header's is a comma left unquoted (or a cell lost)."""
    if len(cells) != len(columns):
        raise LabelFileError(
            f"{printable(name)} line {line}: {len(cells)} cells, but the header names {len(columns)} columns: "
            'quote a cell that holds a comma ("a, b") or add the missing cells.'
        )
    return RawRow(f"{name} line {line}", dict(zip(columns, cells, strict=True)))


def read_jsonl(name: str, data: bytes) -> tuple[tuple[str, ...], tuple[RawRow, ...]]:
    """One JSON object a line; the columns are every key any line has, in the order first seen."""
    columns: dict[str, None] = {}
    rows: list[RawRow] = []
    for number, line in enumerate(utf8_text(name, data).split("\n"), start=1):
        if not line.strip():
            continue
        values = json_object(name, number, line)
        columns.update(dict.fromkeys(values))
        rows.append(RawRow(f"{name} line {number}", values))
    return tuple(columns), tuple(rows)


def json_object(name: str, number: int, line: str) -> dict[str, Any]:
    """Line ``number`` read as a JSON object."""
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        raise LabelFileError(
            f"{printable(name)} line {number}: not JSON ({exc.msg} at column {exc.colno}): "
            "write one JSON object per line."
        ) from None
    except ValueError:  # an integer of more digits than Python converts (4,300): no label or field holds one
        raise LabelFileError(
            f"{printable(name)} line {number}: a number of thousands of digits, which no label or field holds: "
            "fix the line (a number as text in quotes, or one that fits 64 bits)."
        ) from None
    if not isinstance(value, dict):
        raise LabelFileError(
            f"{printable(name)} line {number}: a JSON {type(value).__name__}, not an object: write one object "
            'per line, {"file_name": "a.jpg", "label": "cat"}.'
        )
    return value


def read_parquet(name: str, data: bytes) -> tuple[tuple[str, ...], tuple[RawRow, ...]]:
    """The file's columns and rows (pyarrow: the layout parquet source's reader too)."""
    from imagefolder_lmdb.extras import installed, missing_extra

    if not installed("pyarrow"):  # the [parquet] extra: only a Parquet label file needs it
        raise LabelFileError(missing_extra(f"{printable(name)}: a Parquet label file", "pyarrow"))
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(pa.BufferReader(data))
    except pa.ArrowException as exc:
        raise LabelFileError(f"{printable(name)}: not a Parquet file ({exc}): write it again or give a CSV.") from None
    rows = tuple(RawRow(f"{name} row {number}", values) for number, values in enumerate(table.to_pylist(), 1))
    return tuple(table.column_names), rows


TABLE_READERS: dict[str, Callable[[str, bytes], tuple[tuple[str, ...], tuple[RawRow, ...]]]] = {
    ".csv": read_csv,
    ".jsonl": read_jsonl,
    ".parquet": read_parquet,
}
