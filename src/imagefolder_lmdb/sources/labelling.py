"""How each image of a split gets its label: one of the two axes of a layout (sources/layouts.py;
the other is where the bytes are, a kind of source: sources/__init__.py).

What the rest of the workflow asks of a labelling (its keys' settings, files, recipe and checks)
each answers for itself, asked through sources/labellings.py; the keys every split may give are
sources/label_keys.py's.

A kind of source that holds a tree of paths (a folder, an archive read in place or unpacked) asks
the split's labelling to list it: ``list_tree`` for files on disk, ``list_members`` for an archive's
members. A labelling that reads the label beside each image (WebDataset's ``.cls``, Parquet's
column) is listed by its kind of source itself, which knows where that label lies.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from imagefolder_lmdb.classes.lists import ClassList, is_shipped
from imagefolder_lmdb.sources.base import Labels, Listing
from imagefolder_lmdb.sources.ilsvrc_val import label_val, val_files
from imagefolder_lmdb.sources.inputs_read import InputRead
from imagefolder_lmdb.sources.label_files.rules import LABEL_RULE
from imagefolder_lmdb.sources.label_files.settings import METADATA, LabelsFrom
from imagefolder_lmdb.sources.label_keys import (
    COPIED_VAL_LABELS,
    LABELS_WANTED,
    UNLABELLED,
    KeyProblem,
    common_files,
    common_inputs,
    common_settings,
    label_file_recipe,
    label_file_settings,
    label_settings_problems,
    labels_member,
    missing_label_files,
    recorded,
)
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

    # What the rest of the workflow asks of a labelling, of the checked split config ``split``
    # (sources/labellings.py asks the split's): every labelling answers for the keys every split may
    # give (sources/label_keys.py); one that reads more adds its own.

    def picks(self, labels: object) -> bool:
        """Whether a split's ``labels`` value picks this labelling where its layout is the default."""
        return False

    def labels_kept(self, labels: object) -> object:
        """The ``labels`` value a split that this labelling was picked for keeps."""
        return labels

    def settings(self, split: Mapping[str, Any]) -> dict[str, Any]:
        """The label keys its listing reads, as plain data (rule count_check's param)."""
        return common_settings(split)

    def extract_settings(self, split: Mapping[str, Any]) -> dict[str, Any]:
        """What rule extract copies out of the source for the listing (rule extract's param, as plain
        data): ``val_labels`` naming a member of the source archive."""
        return {"labels_member": labels_member(split)}

    def read_with(self, settings: Labels, copies: Mapping[str, Any]) -> Labels:
        """``settings`` as the listing reads them, with extract's copies (source.json) in their place."""
        return {**settings, "val_labels": copies.get(COPIED_VAL_LABELS) or settings.get("val_labels")}

    def input_files(self, split: Mapping[str, Any]) -> list[str]:
        """The label files rule extract reads (so that a changed file runs it again)."""
        return common_inputs(split)

    def listing_files(self, split: Mapping[str, Any]) -> list[str]:
        """The label files rule count_check reads."""
        return self.input_files(split)

    def recipe(self, split: Mapping[str, Any]) -> dict[str, Any]:
        """What of its keys changes the split's records, as run/made_from.py records it: ``labels``,
        each file by path and content, and what else changes how they are read."""
        return {"labels": recorded(common_files(split))}

    def problems(self, split: Mapping[str, Any], classes: object) -> list[KeyProblem]:
        """Its keys' problems, before any job (``classes``: the config's class list, for the hints)."""
        return missing_label_files(split) + self.unread_keys(split)

    def unread_keys(self, split: Mapping[str, Any]) -> list[KeyProblem]:
        """A label file's keys, given to a labelling that reads none."""
        return label_settings_problems(split, split["layout"], LABELS_WANTED)

    def listing_problems(self, split: Mapping[str, Any], wanted: list[str] | None) -> list[KeyProblem]:
        """What reading its label files against a folder's images finds, before any job."""
        return []

    def classes_expected(self, labels: Labels) -> tuple[list[str], list[InputRead]] | None:
        """The classes a full source holds, checked by rule count_check, and the files they were read
        from, as parsed; None: no such check."""
        return None

    def extras(self, split: Mapping[str, Any]) -> list[tuple[str, str, str]]:
        """The keys given whose files need a package of an extra: (key, module, what needs it)."""
        devkit = split["devkit"]
        needs = ("devkit", "scipy", "the ILSVRC2012 devkit (its meta.mat)")
        return [needs] if devkit is not None and not is_shipped(devkit) else []


class ClassFolders(Labelling):
    """ImageFolder's own: an image's class is the folder it lies in, one level under the root."""

    classes_are_folders = True


class ClassTars(Labelling):
    """ILSVRC2012's train tar: one tar a class, named after it, read as that class's folder."""

    name = "class tars"
    class_tars = True

    def classes_expected(self, labels: Labels) -> tuple[list[str], list[InputRead]] | None:
        """With a devkit, its 1,000 classes (``devkit: imagenet1k``: the shipped list, no file read)."""
        if not labels.get("devkit"):
            return None
        from imagefolder_lmdb.sources.ilsvrc import devkit_class_list

        expected, read = devkit_class_list(labels["devkit"])
        return expected, [read] if read is not None else []


class LabelFile(Labelling):
    """Images whose labels a file gives, not the folders they lie in: every path is kept whole. Its
    cases: ILSVRC2012 val's devkit or CSV (``IlsvrcValLabels``), and a label file or Hugging Face's
    metadata files (``TableLabels``); the dataset's ``made_from`` records each file by path and content
    (its ``recipe``)."""

    name = "a label file"
    strips_wrapper = False


class IlsvrcValLabels(LabelFile):
    """Flat images labelled by their ILSVRC2012_IDs: ILSVRC2012 val, by the devkit's ground truth or
    Kaggle's LOC_val_solution.csv (``Labels``). Listed as ImageFolder lists ``val/<wnid>/<file>``."""

    expects = "ILSVRC2012_val_NNNNNNNN.JPEG files"

    def list_tree(
        self, root: str, labels: Labels, progress: dict, wanted: ClassList | None, options: ListingOptions
    ) -> Listing:
        return label_val(val_files(root), labels.get("devkit"), labels.get("val_labels"), wanted)

    def list_members(
        self,
        entries: list[tuple[str, Location]],
        where: str,
        folders: Iterable[str],
        labels: Labels,
        wanted: ClassList | None,
        read: Callable[[str], bytes] | None = None,
    ) -> Listing:
        return label_val(entries, labels.get("devkit"), labels.get("val_labels"), wanted)

    def problems(self, split: Mapping[str, Any], classes: object) -> list[KeyProblem]:
        """Also: its ground truth given (``devkit: imagenet1k`` names classes, not each image's)."""
        from imagefolder_lmdb.sources.label_checks import ground_truth_problems

        return super().problems(split, classes) + ground_truth_problems(split, classes)


class TableLabels(LabelFile):
    """Images at any depth under the split's root, labelled by one label file (``labels: PATH``) or
    by Hugging Face's metadata files in the tree (``labels: metadata``): sources/table_listing.py."""

    expects = "images that the label file names"

    def list_tree(
        self, root: str, labels: Labels, progress: dict, wanted: ClassList | None, options: ListingOptions
    ) -> Listing:
        table = LabelsFrom.from_data(labels["labels"])  # given, or the config's checks refused the split
        with collector_paused():
            found, paths = folder_labels(table, root, wanted)
            listing = table_listing(found, paths)
        listing.inputs = parsed_label_files(table, found)
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
        assert read is not None, "an archive's listing reads its members"
        table = LabelsFrom.from_data(labels["labels"])
        with collector_paused():
            paths = [path for path, _ in entries]
            found = read_labels(table, where, paths, read, wanted)
            listing = table_listing(found, paths, dict(entries))
        listing.inputs = parsed_label_files(table, found)
        return listing

    def picks(self, labels: object) -> bool:
        return labels is not None and labels != UNLABELLED

    def settings(self, split: Mapping[str, Any]) -> dict[str, Any]:
        return super().settings(split) | label_file_settings(split)

    def listing_files(self, split: Mapping[str, Any]) -> list[str]:
        """Also the label file (metadata files lie in the source, which extract reads)."""
        labels = split["labels"]
        return self.input_files(split) + ([labels] if labels and labels != METADATA else [])

    def recipe(self, split: Mapping[str, Any]) -> dict[str, Any]:
        """The label file first (metadata files by the source they lie in: its record holds their
        content), its columns not at their defaults, and the rule its labels are read by."""
        labels = split["labels"]
        files = {"metadata": [METADATA, "in the source"]} if labels == METADATA else None
        found = {"labels": files or recorded({"labels": labels} | common_files(split))}
        return found | label_file_recipe(split) | {"label_rule": LABEL_RULE}

    def unread_keys(self, split: Mapping[str, Any]) -> list[KeyProblem]:
        """``labels`` missing, or a label file that cannot be read with the columns set."""
        from imagefolder_lmdb.sources.label_checks import label_file_problems

        return label_file_problems(split)

    def listing_problems(self, split: Mapping[str, Any], wanted: list[str] | None) -> list[KeyProblem]:
        """A folder's label files read against its images: an image without a row, a row without an
        image, costs a second, not a run (an archive's are read by its listing)."""
        from imagefolder_lmdb.sources.label_checks import folder_label_problems

        return folder_label_problems(split, wanted)


class StoredLabels(Labelling):
    """The label stored with each image (WebDataset's ``.cls``, a Parquet column): the kind of
    source that reads those files lists them itself, never through a tree's listing."""

    name = "stored with the image"
    expects = "images with their labels"
