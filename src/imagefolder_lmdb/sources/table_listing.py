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
from imagefolder_lmdb.sources.label_files.metadata import METADATA_NAMES
from imagefolder_lmdb.sources.label_files.settings import LabelsFrom
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
        with open(labels.labels, "rb") as stream:
            data = stream.read()
        return read_label_file(
            labels.labels, data, [path for path in paths if is_image(path)], labels.settings, classes
        )
    except LabelFileError as exc:
        raise CountMismatchError(str(exc)) from None


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
