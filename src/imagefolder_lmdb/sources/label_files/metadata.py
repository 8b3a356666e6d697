"""Hugging Face's imagefolder convention (``labels: metadata``): ``metadata.csv``, ``metadata.jsonl``
or ``metadata.parquet`` files anywhere in a split's tree, each ``file_name`` relative to its metadata
file's folder, the ``label`` column the label (``label_column``), every other column a field.

The tree is a list of relative POSIX paths and a way to read a file, so a folder and an archive's
members (a zip) are read alike. As in ``datasets``: the metadata files of a tree share one suffix and
one set of columns, and a ``file_name`` may not leave its metadata file's folder. Where this differs
from ``datasets`` (5.2.0) on purpose:

- an image without a row is an error (``datasets`` leaves it out of the dataset without a word);
- an image named by two rows (in one file, or in two metadata files) is an error (``datasets`` gives
  it twice);
- a row naming no image is an error found before any image is read;
- CSV cells are typed by this project's rule (value_types.py), not by pandas: ``True``, ``NA``,
  ``nan``, ``inf`` stay text, and an empty cell in a numeric column is an error (pandas: NaN, and
  the column becomes float);
- ``*_file_name`` and ``*_file_names`` columns (several images a row) are refused;
- a field may not be named ``label`` unless it is the label column;
- labels become class indices (targets.py): ``datasets`` keeps a metadata label as written;
- class folders are not labels once metadata files are there (the same in ``datasets``).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence

from imagefolder_lmdb.printable import printable
from imagefolder_lmdb.sources.label_files.problems import LabelFileError, did_you_mean
from imagefolder_lmdb.sources.label_files.reading import RawTable, read_table
from imagefolder_lmdb.sources.label_files.settings import (
    DEFAULT_SETTINGS,
    METADATA_FILE_COLUMN,
    Columns,
    LabelSettings,
    refuse_more_images_per_row,
    resolve_columns,
)
from imagefolder_lmdb.sources.label_files.table import LabelTable, build_table
from imagefolder_lmdb.sources.listing_options import is_image as imagefolder_image

#: The metadata files' names (``datasets``' FolderBasedBuilder.METADATA_FILENAMES).
METADATA_NAMES = ("metadata.csv", "metadata.jsonl", "metadata.parquet")


def read_metadata_tree(
    tree: str,
    paths: Sequence[str],
    read: Callable[[str], bytes],
    settings: LabelSettings = DEFAULT_SETTINGS,
    classes: Sequence[str] | None = None,
    is_image: Callable[[str], bool] = imagefolder_image,
) -> LabelTable:
    """The table the metadata files among ``paths`` (every file of split tree ``tree``, relative to
    it) make of its images; ``read(path)``: a file's bytes; ``classes``: a class list to keep to."""
    found = metadata_files(tree, paths, settings)
    tables = [read_table(path, read(path)) for path in found]
    columns = shared_columns(tables, settings)
    images = [path for path in paths if is_image(path)]
    others = [path for path in paths if not is_image(path) and posixpath.basename(path) not in METADATA_NAMES]
    folders = [posixpath.dirname(path) for path in found]
    return build_table(tables, folders, columns, images, settings, classes, is_image, others)


def metadata_files(tree: str, paths: Sequence[str], settings: LabelSettings) -> list[str]:
    """The tree's metadata files, of one suffix."""
    if settings.file_column not in (None, METADATA_FILE_COLUMN):
        raise LabelFileError(
            f"{printable(tree)}: metadata files name each image in {METADATA_FILE_COLUMN!r} (Hugging Face's "
            f"convention), not {settings.file_column!r}: remove file_column, or name one label file (labels: PATH)."
        )
    found = sorted(path for path in paths if posixpath.basename(path) in METADATA_NAMES)
    if not found:
        json_files = sorted(path for path in paths if posixpath.basename(path) == "metadata.json")
        if json_files:
            raise LabelFileError(json_array_refusal(posixpath.join(tree, json_files[0])))
        raise LabelFileError(
            f"{printable(tree)}: no {', '.join(METADATA_NAMES)} in the tree: add one beside the images "
            "(file_name,label), or name the label file (labels: PATH)."
        )
    suffixes = {posixpath.splitext(path)[1] for path in found}
    if len(suffixes) > 1:
        first, other = found[0], next(path for path in found if not path.endswith(posixpath.splitext(found[0])[1]))
        raise LabelFileError(
            f"{printable(tree)}: metadata files of two kinds, {printable(first)!r} and {printable(other)!r}: "
            "write them all as one of .csv, .jsonl, .parquet."
        )
    return found


def json_array_refusal(path: str) -> str:
    """Why ``metadata.json`` (or a label file ``*.json``: a JSON array) is not read, and the line that
    converts it: Hugging Face's convention is one object a line (``datasets`` reads no
    ``metadata.json`` either), so a dataset made here is the one the hub's loader makes."""
    target = posixpath.splitext(path)[0] + ".jsonl"
    if holds_json_lines(path):  # a .jsonl misnamed: the array conversion below would fail on it
        return (
            f"{printable(path)!r} is not read: it holds one JSON object a line (JSON Lines), which Hugging "
            f"Face's convention names .jsonl: rename it to {printable(target)!r}"
        )
    return (
        f"{printable(path)!r} is not read: a label file, as Hugging Face's metadata files, is .jsonl "
        f'(one JSON object a line), .csv or .parquet. Convert it to JSON Lines: python -c "import json; '
        f"rows = json.load(open('{printable(path)}')); open('{printable(target)}', 'w')"
        f'.writelines(json.dumps(row) + chr(10) for row in rows)"'
    )


def holds_json_lines(path: str) -> bool:
    """Whether the file at ``path`` starts as JSON Lines do (an object, not an array); False where it
    cannot be read here (a member of an archive)."""
    try:
        with open(path, "rb") as handle:
            start = handle.read(4096).lstrip()
    except OSError:
        return False
    return start.startswith(b"{")


def refuse_without_file_names(table: RawTable) -> None:
    """A metadata file names its images in ``file_name``: no setting changes that."""
    if METADATA_FILE_COLUMN not in table.columns:
        raise LabelFileError(
            f"{printable(table.name)}: no column {METADATA_FILE_COLUMN!r}"
            f"{did_you_mean(METADATA_FILE_COLUMN, table.columns)}: a metadata file names each image, relative "
            f"to its folder, in a {METADATA_FILE_COLUMN!r} column (the file has: {', '.join(table.columns)})."
        )


def shared_columns(tables: Sequence[RawTable], settings: LabelSettings) -> Columns:
    """The columns every metadata file has: one set, so every image has the same fields."""
    metadata_settings = LabelSettings(METADATA_FILE_COLUMN, settings.label_column, settings.label_separator)
    first: Columns | None = None
    for table in tables:
        refuse_more_images_per_row(table)
        refuse_without_file_names(table)
        columns = resolve_columns(table, metadata_settings)
        if first is None:
            first = columns
        elif set(columns.fields) != set(first.fields):
            differ = sorted(set(columns.fields) ^ set(first.fields))
            raise LabelFileError(
                f"{printable(table.name)}: its columns differ from {printable(tables[0].name)}'s (in "
                f"{', '.join(differ)}): give every metadata file of the tree the same columns."
            )
    assert first is not None, "metadata_files found at least one"
    return first
