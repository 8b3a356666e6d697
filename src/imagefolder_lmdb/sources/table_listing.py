"""A split listed by its label file (``labels: PATH``) or Hugging Face's metadata files (``labels:
metadata``): every image under the split's root, at any depth, named by a row; the class list and
each image's target and fields from the rows (sources/label_files/). The images are in the order of
their sorted paths, as ImageFolder orders the files of a folder; folder names are no labels.
"""

from __future__ import annotations

import contextlib
import gc
import os
import posixpath
from collections.abc import Callable, Iterator, Mapping, Sequence

from imagefolder_lmdb.classes.lists import ClassList
from imagefolder_lmdb.sources.base import CountMismatchError, Listing
from imagefolder_lmdb.sources.inputs_read import InputRead
from imagefolder_lmdb.sources.label_files import (
    ImageLabels,
    LabelFileError,
    LabelTable,
    read_label_file,
    read_metadata_tree,
)
from imagefolder_lmdb.sources.label_files.labels import label_column
from imagefolder_lmdb.sources.label_files.metadata import METADATA_NAMES
from imagefolder_lmdb.sources.label_files.reading import label_file_bytes, read_table
from imagefolder_lmdb.sources.label_files.settings import LabelsFrom, resolve_columns
from imagefolder_lmdb.sources.listing_options import is_image
from imagefolder_lmdb.sources.tree import relative_files
from imagefolder_lmdb.work.files import Annotations, Sample
from imagefolder_lmdb.work.source_locations import Location


def read_labels(
    labels: LabelsFrom, where: str, paths: Sequence[str], read: Callable[[str], bytes], wanted: ClassList | None
) -> LabelTable:
    """The table the split's label file or metadata files make of ``paths`` (every file of the
    split's tree ``where``, relative to it); ``read(path)``: a file of the tree's bytes."""
    classes = None if wanted is None else wanted.names
    try:
        if labels.metadata:
            return read_metadata_tree(where, paths, read, labels.settings, classes)
        return read_label_file(labels.labels, label_file_bytes(labels.labels), paths, labels.settings, classes)
    except LabelFileError as exc:
        raise CountMismatchError(str(exc)) from None


def labels_outside(split: Mapping[str, object], classes: Sequence[str]) -> list[str]:
    """The labels of a split's label file (``labels: PATH``) that ``classes`` lacks, as text: the
    images with them would be set aside, as those of a class folder the list lacks. Read from the
    label column alone (no walk of the images); Hugging Face's metadata files in a folder by the
    table they make of it (a walk); in an archive, none here (its listing sets them aside). A file
    that cannot be read gives none here: the config check words its problem."""
    labels = LabelsFrom.from_split(split)
    if labels is not None and labels.metadata:
        return metadata_outside(labels, split, classes)
    if labels is None or not os.path.isfile(labels.labels):
        return []
    try:
        with open(labels.labels, "rb") as stream:
            table = read_table(labels.labels, stream.read())
        columns = resolve_columns(table, labels.settings)
        column = label_column(columns.label, table.rows, table.text_cells, labels.settings.label_separator)
    except LabelFileError:
        return []
    written = {label for row in column.values for label in (row if isinstance(row, tuple) else (row,))}
    if column.type == "int":
        return [str(index) for index in sorted(written) if int(index) >= len(classes)]
    known = set(classes)
    return sorted(str(name) for name in written if name not in known)


def metadata_outside(labels: LabelsFrom, split: Mapping[str, object], classes: Sequence[str]) -> list[str]:
    """labels_outside for Hugging Face's metadata files in a folder source: the labels its table of
    the folder leaves outside ``classes``."""
    source, root = split.get("source"), split.get("root")
    if not isinstance(source, str):
        return []
    folder = os.path.join(source, root.strip("/")) if isinstance(root, str) and root.strip("/") else source
    if not os.path.isdir(folder):
        return []
    try:
        table, _ = folder_labels(labels, folder, ClassList(list(classes), "OUTDIR", True))
    except CountMismatchError:
        return []
    return sorted(table.outside.images)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused while a table is read and listed: ~10 objects an
    image are made there, none in a cycle, and its passes over the growing heap took a third of the
    listing's time (BENCHMARKS.md §18). Restored as it was, whatever ends the block."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def folder_labels(labels: LabelsFrom, root: str, wanted: ClassList | None) -> tuple[LabelTable, list[str]]:
    """The table the labels make of folder ``root``'s files, and those files (relative, sorted)."""
    paths = sorted(relative_files(root))

    def read(path: str) -> bytes:
        with open(os.path.join(root, path), "rb") as stream:
            return stream.read()

    return read_labels(labels, root, paths, read, wanted), paths


def parsed_label_files(labels: LabelsFrom, table: LabelTable) -> list[InputRead]:
    """The label file as ``table`` was parsed from it, its digest that of those very bytes (metadata
    files lie in the source, which the source's record covers)."""
    return [] if labels.metadata else [InputRead.of_sha256(read.path, read.sha256) for read in table.label_files]


def table_listing(table: LabelTable, paths: Sequence[str], locations: Mapping[str, Location] | None = None) -> Listing:
    """The listing of the tree's files ``paths`` that ``table`` labels (``locations``: where each lies,
    an archive's members; None: files under the root): images in sorted path order (as the table
    holds them), each with its class index (-1 in a multi-label table, whose lists are the
    annotations) and fields; the other files ignored (metadata files are the labels, not ignored)."""
    images = table.images.items()
    if locations is None:
        samples = [sample(index, path, None, labels) for index, (path, labels) in enumerate(images)]
    else:
        samples = [sample(index, path, locations[path], labels) for index, (path, labels) in enumerate(images)]
    ignored = sorted(path for path in paths if not is_image(path) and posixpath.basename(path) not in METADATA_NAMES)
    listing = Listing(list(table.classes), samples, ignored, outside=table.outside)
    listing.label_kind = "multi" if table.label_kind == "multi" else None
    listing.field_types = dict(table.field_types) or None
    return listing


def sample(index: int, path: str, location: Location, labels: ImageLabels) -> Sample:
    """The manifest's sample of image ``path``: its class index, or -1 and its list; its fields."""
    target = labels.target
    annotations: Annotations = {"labels": list(target)} if isinstance(target, tuple) else {}
    if labels.fields:
        annotations["fields"] = labels.fields
    label = -1 if isinstance(target, tuple) else target
    return Sample(index, label, path, location, annotations or None)
