"""What a label file's settings mean: which column names the image, which holds the label, how a
multi-label CSV cell is split; and which columns are left as per-image fields.

Defaults that fit both common shapes: the file column is ``file_name`` (Hugging Face's imagefolder
convention) if the file has one, else ``id`` (a Kaggle competition's ``id,label``); the label column
is ``label`` (both conventions). Every other column is a field; a field named ``label`` is refused
(the reader's ``target_type="label"`` is the label), and so, in Hugging Face's metadata files, is a
``*_file_name(s)`` column (several images per row)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from imagefolder_lmdb.printable import printable
from imagefolder_lmdb.sources.label_files.fields import RESERVED
from imagefolder_lmdb.sources.label_files.problems import LabelFileError, did_you_mean
from imagefolder_lmdb.sources.label_files.reading import RawTable

#: The file column when none is set: the first of these the file has.
FILE_COLUMNS = ("file_name", "id")
#: Hugging Face's one file column in metadata files.
METADATA_FILE_COLUMN = "file_name"


@dataclass(frozen=True)
class LabelSettings:
    """``file_column``: None for the first of FILE_COLUMNS; ``label_separator``: None for one label a
    CSV cell (JSONL and Parquet write several labels as a list)."""

    file_column: str | None = None
    label_column: str = "label"
    label_separator: str | None = None


#: Every setting at its default.
DEFAULT_SETTINGS = LabelSettings()


@dataclass(frozen=True)
class Columns:
    """A label file's columns by role."""

    file: str
    label: str
    fields: tuple[str, ...]


def resolve_columns(table: RawTable, settings: LabelSettings) -> Columns:
    """Each column's role in ``table``; an error naming the file for a column missing or reserved."""
    file_column = settings.file_column or next((name for name in FILE_COLUMNS if name in table.columns), None)
    if file_column is None or file_column not in table.columns:
        wanted = file_column or FILE_COLUMNS[0]
        raise LabelFileError(missing_column(table, wanted, "file_column", "the path (or id) of each image"))
    if settings.label_column not in table.columns:
        raise LabelFileError(missing_column(table, settings.label_column, "label_column", "each image's label"))
    if RESERVED in table.columns and settings.label_column != RESERVED and file_column != RESERVED:
        raise LabelFileError(
            f"{printable(table.name)}: column {RESERVED!r} is reserved for the label, but label_column is "
            f"{settings.label_column!r}: set label_column: {RESERVED}, or rename the column {RESERVED!r}."
        )
    fields = tuple(name for name in table.columns if name not in (file_column, settings.label_column))
    return Columns(file_column, settings.label_column, fields)


def missing_column(table: RawTable, wanted: str, setting: str, holding: str) -> str:
    """A column the settings name that the file lacks, with the closest one."""
    columns = ", ".join(table.columns)
    return (
        f"{printable(table.name)}: no column {wanted!r}{did_you_mean(wanted, table.columns)}: set {setting} to the "
        f"column holding {holding} (the file has: {columns})."
    )


def refuse_more_images_per_row(table: RawTable) -> None:
    """Hugging Face's ``*_file_name`` and ``*_file_names`` columns (a mask, several views): one image
    a row is what a dataset of this format holds."""
    for name in table.columns:
        if name != METADATA_FILE_COLUMN and (name.endswith("_file_name") or name.endswith("file_names")):
            raise LabelFileError(
                f"{printable(table.name)}: column {name!r} names more images per row (Hugging Face's "
                f"*_file_name(s)): one image a row is converted; drop the column, or rename it if it is text."
            )


#: ``labels: metadata``: Hugging Face's metadata files in the tree, not one label file.
METADATA = "metadata"


@dataclass(frozen=True)
class LabelsFrom:
    """Where a split's labels are read from (the config's ``labels``): Hugging Face's metadata files
    in the tree (``METADATA``), or one label file (its absolute path), with the columns' settings."""

    labels: str
    settings: LabelSettings = DEFAULT_SETTINGS

    @property
    def metadata(self) -> bool:
        return self.labels == METADATA

    def as_data(self) -> dict[str, str]:
        """As plain data (a rule's param, a recipe entry): the settings only where not at their default."""
        data = {"from": self.labels}
        for key, value in self.settings.__dict__.items():
            if value != getattr(DEFAULT_SETTINGS, key):
                data[key] = value
        return data

    @classmethod
    def from_data(cls, data: dict[str, str]) -> LabelsFrom:
        return cls(data["from"], LabelSettings(**{key: value for key, value in data.items() if key != "from"}))

    @classmethod
    def from_split(cls, split: Mapping[str, Any]) -> LabelsFrom | None:
        """A checked split config's (None: the split gives no ``labels``); a label file's path made absolute."""
        labels = split.get("labels")
        if labels is None:
            return None
        settings = LabelSettings(
            split.get("file_column"), split.get("label_column") or "label", split.get("label_separator")
        )
        return cls(labels if labels == METADATA else os.path.abspath(labels), settings)
