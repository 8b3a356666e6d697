"""What label files say about a split's images, in one value: ``LabelTable``; and how it is built
from the files' rows (``build_table``), the same for a label file and for Hugging Face's metadata
files."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

from imagefolder_lmdb.classes.lists import OutsideClasses
from imagefolder_lmdb.sources.label_files.fields import FieldValue, TypedColumn, field_column
from imagefolder_lmdb.sources.label_files.labels import RowLabels, label_column
from imagefolder_lmdb.sources.label_files.matching import RowNames, match_rows, row_path
from imagefolder_lmdb.sources.label_files.reading import RawTable
from imagefolder_lmdb.sources.label_files.settings import Columns, LabelSettings
from imagefolder_lmdb.sources.label_files.targets import Target, class_targets


@dataclass(frozen=True)
class LabelFileDigest:
    """A label file as ``made_from`` records it: its path (as the caller named it) and content."""

    path: str
    sha256: str


class ImageLabels(NamedTuple):  # a tuple: made once per image, 100k times for a large file
    """One image's target (a class index, or a tuple of them) and its fields by name."""

    target: Target
    fields: Mapping[str, FieldValue]


@dataclass(frozen=True)
class LabelTable:
    """A split's images (relative POSIX paths, sorted) with their targets and fields.

    ``label_kind``: one label per image, or a list (``multi``). ``label_type``: the labels as written,
    class names (``str``) or class indices (``int``). ``classes``: the class list (targets index it).
    ``field_types``: each field's type (``int``, ``float``, ``str``, ``list[int]``, ...). ``outside``:
    the labels left out, their class outside a given list. ``label_files``: what it was read from.
    """

    label_kind: Literal["single", "multi"]
    label_type: str
    classes: tuple[str, ...]
    images: Mapping[str, ImageLabels]
    field_types: Mapping[str, str]
    outside: OutsideClasses
    label_files: tuple[LabelFileDigest, ...]

    @property
    def class_to_idx(self) -> dict[str, int]:
        return {name: index for index, name in enumerate(self.classes)}

    def labels(self, path: str) -> RowLabels:
        """Image ``path``'s label(s) as the file writes them (names, or indices), less those left out."""
        target = self.images[path].target
        if isinstance(target, tuple):
            return tuple(self.written(index) for index in target)
        return self.written(target)

    def written(self, index: int) -> int | str:
        return index if self.label_type == "int" else self.classes[index]


def build_table(
    tables: Sequence[RawTable],
    folders: Sequence[str],
    columns: Columns,
    images: Sequence[str],
    settings: LabelSettings,
    classes: Sequence[str] | None,
    is_image: Callable[[str], bool],
    others: Sequence[str] = (),
) -> LabelTable:
    """The table of ``images`` from the rows of ``tables`` (their columns: ``columns``), each naming
    images relative to its folder in ``folders``; ``classes``: a class list to keep to; ``others``:
    the split's files that are no images, named where a row names one."""
    rows = [row for table in tables for row in table.rows]
    places = [row.place for row in rows]
    written = [row.values.get(columns.file) for row in rows]
    folder_of = [folder for table, folder in zip(tables, folders, strict=True) for _ in table.rows]
    paths = [
        name  # a plain name in a label file at the root: nothing to check or join (row_path's first case)
        if not folder and type(name) is str and name and "/" not in name and name not in (".", "..")
        else row_path(place, name, folder, columns.file)
        for place, name, folder in zip(places, written, folder_of, strict=True)
    ]
    names = RowNames(paths, [str(name) for name in written], places)
    where = " and ".join(table.name for table in tables) if len(tables) < 3 else f"{len(tables)} label files"
    matched = match_rows(names, images, is_image, where, others)
    text_cells = all(table.text_cells for table in tables)
    labels = label_column(columns.label, rows, text_cells, settings.label_separator)
    fields = {name: field_column(name, rows, text_cells) for name in columns.fields}
    targets = class_targets(labels, places, classes)
    return LabelTable(
        "multi" if labels.multi else "single",
        labels.type,
        targets.classes,
        image_entries(matched, targets.targets, fields),
        {name: column.type for name, column in fields.items()},
        targets.outside,
        tuple(LabelFileDigest(table.name, table.sha256) for table in tables),
    )


def image_entries(
    matched: Sequence[str], targets: Sequence[Target | None], fields: Mapping[str, TypedColumn]
) -> dict[str, ImageLabels]:
    """Each image's target and fields, by sorted path; an image whose label lies outside the class
    list (target None) is left out."""
    names = list(fields)
    columns = [fields[name].values for name in names]
    entries = {}
    for row in sorted(range(len(matched)), key=matched.__getitem__):
        target = targets[row]
        if target is not None:
            entries[matched[row]] = ImageLabels(
                target, dict(zip(names, [column[row] for column in columns], strict=True))
            )
    return entries
