"""How each image of a split gets its label: one of the two axes of a layout (sources/layouts.py;
the other is where the bytes are, a kind of source: sources/__init__.py).

A kind of source that holds a tree of paths (a folder, an archive read in place or unpacked) asks
the split's labelling to list it: ``list_tree`` for files on disk, ``list_members`` for an archive's
members. A labelling that reads the label beside each image (WebDataset's ``.cls``, Parquet's
column) is listed by its kind of source itself, which knows where that label lies.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from imagefolder_lmdb.classes.lists import ClassList
from imagefolder_lmdb.sources.base import Labels, Listing
from imagefolder_lmdb.sources.ilsvrc_val import label_val, val_files
from imagefolder_lmdb.sources.listing_options import ListingOptions
from imagefolder_lmdb.sources.table_listing import (
    collector_paused,
    folder_labels,
    parsed_label_files,
    read_labels,
    table_listing,
)
from imagefolder_lmdb.sources.tree import order_members, scan_folder
from imagefolder_lmdb.work.source_locations import Location


class Labelling:
    """How each image gets its label; what a listing of a tree looks for. By default ImageFolder's
    rules list a tree (class folders), which a labelling that reads labels elsewhere overrides."""

    #: In words, for the docs and messages: "class folders".
    name: str = "class folders"
    #: What a listing looks for, in words, for "no images found".
    expects: str = "images in class folders"
    #: Whether a folder that wraps every image of an archive (``train/`` in ``train/cls/x.jpg``) is
    #: stripped: it is no class. A labelling that takes no class from a folder keeps every path whole.
    strips_wrapper: bool = True
    #: Whether the classes are tars (ILSVRC2012's train tar: a tar of one tar per class), each read as
    #: a class folder of that name.
    class_tars: bool = False
    #: Whether a folder source's classes are its subfolders, as they stand (what a plan may read of
    #: them before any listing: run/made_from.py, run/existing.py).
    classes_are_folders: bool = False

    def list_tree(
        self, root: str, labels: Labels, progress: dict, wanted: ClassList | None, options: ListingOptions
    ) -> Listing:
        """The images of a tree on disk under ``root``, in ImageFolder order, within ``wanted``."""
        return scan_folder(root, progress, wanted, options)

    def list_members(
        self,
        entries: list[tuple[str, Location]],
        where: str,
        folders: Iterable[str],
        labels: Labels,
        wanted: ClassList | None,
        read: Callable[[str], bytes] | None = None,
    ) -> Listing:
        """The images among an archive's members (``folders``: its top folders, classes even where
        empty; ``where``: the archive, for messages; ``read(path)``: a member's bytes), in
        ImageFolder order, within ``wanted``."""
        return order_members(entries, where, folders, wanted)


class ClassFolders(Labelling):
    """ImageFolder's own: an image's class is the folder it lies in, one level under the root."""

    classes_are_folders = True


class ClassTars(Labelling):
    """ILSVRC2012's train tar: one tar a class, named after it, read as that class's folder."""

    name = "class tars"
    class_tars = True


class LabelFile(Labelling):
    """Images whose labels a file gives, not the folders they lie in: every path is kept whole. Its
    cases: ILSVRC2012 val's devkit or CSV (``IlsvrcValLabels``), and a label file or Hugging Face's
    metadata files (``TableLabels``); the dataset's ``made_from`` records each file by path and content
    (run/made_from.py ``label_files``)."""

    name = "a label file"
    strips_wrapper = False


class IlsvrcValLabels(LabelFile):
    """Flat images labelled by their ILSVRC2012_IDs: ILSVRC2012 val, by the devkit's ground truth or
    Kaggle's LOC_val_solution.csv (``Labels``). Listed as ImageFolder lists ``val/<wnid>/<file>``."""

    expects = "ILSVRC2012_val_NNNNNNNN.JPEG files"

    def list_tree(
        self, root: str, labels: Labels, progress: dict, wanted: ClassList | None, options: ListingOptions
    ) -> Listing:
        return label_val(val_files(root), labels.devkit, labels.csv, wanted)

    def list_members(
        self,
        entries: list[tuple[str, Location]],
        where: str,
        folders: Iterable[str],
        labels: Labels,
        wanted: ClassList | None,
        read: Callable[[str], bytes] | None = None,
    ) -> Listing:
        return label_val(entries, labels.devkit, labels.csv, wanted)


class TableLabels(LabelFile):
    """Images at any depth under the split's root, labelled by one label file (``labels: PATH``) or
    by Hugging Face's metadata files in the tree (``labels: metadata``): sources/table_listing.py."""

    expects = "images that the label file names"

    def list_tree(
        self, root: str, labels: Labels, progress: dict, wanted: ClassList | None, options: ListingOptions
    ) -> Listing:
        assert labels.table is not None, "layout label-file is given its labels (config/check.py)"
        with collector_paused():
            table, paths = folder_labels(labels.table, root, wanted)
            listing = table_listing(table, paths)
        listing.inputs = parsed_label_files(labels.table, table)
        return listing

    def list_members(
        self,
        entries: list[tuple[str, Location]],
        where: str,
        folders: Iterable[str],
        labels: Labels,
        wanted: ClassList | None,
        read: Callable[[str], bytes] | None = None,
    ) -> Listing:
        assert labels.table is not None and read is not None, "an archive's listing reads its members"
        with collector_paused():
            paths = [path for path, _ in entries]
            table = read_labels(labels.table, where, paths, read, wanted)
            listing = table_listing(table, paths, dict(entries))
        listing.inputs = parsed_label_files(labels.table, table)
        return listing


class StoredLabels(Labelling):
    """The label stored with each image (WebDataset's ``.cls``, a Parquet column): the kind of
    source that reads those files lists them itself, never through a tree's listing."""

    name = "stored with the image"
    expects = "images with their labels"
