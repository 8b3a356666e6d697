"""Source kind ``folder``: a folder used where it is, nothing extracted.

An ImageFolder tree is listed by torchvision itself; for layout ilsvrc-val, the flat (or partly
sorted) validation images are labelled by file name.
"""

from __future__ import annotations

import logging
import os

from imagefolder_lmdb.class_list import ClassList
from imagefolder_lmdb.sources import Labels, Listing, Request, Source
from imagefolder_lmdb.sources.ilsvrc_val import label_val, val_files
from imagefolder_lmdb.sources.tree import check_folder_not_splits, scan_folder
from imagefolder_lmdb.work_files import SourceDescription

log = logging.getLogger("imagefolder_lmdb.sources")


class FolderSource(Source):
    """A folder: an ImageFolder tree, or ILSVRC2012 val images (layout ilsvrc-val)."""

    kind = "folder"

    @classmethod
    def claims(cls, request: Request) -> bool:
        return os.path.isdir(request.source)

    def prepare(self, request: Request, building: str, output: str) -> SourceDescription:
        folder = request.folder()
        log.info("source %s is a folder: used in place, nothing to extract", folder)
        check_folder_not_splits(request.source, request.root)
        root = os.path.abspath(folder)
        return SourceDescription(self.kind, root, request.layout, root=root, inside=request.root)

    def list(
        self, description: SourceDescription, source_dir: str, labels: Labels, progress: dict, wanted: ClassList | None
    ) -> Listing:
        return list_tree(description, labels, progress, wanted)


def list_tree(description: SourceDescription, labels: Labels, progress: dict, wanted: ClassList | None) -> Listing:
    """The images of a tree on disk (a folder, or an archive unpacked into the work folder)."""
    root = description.root
    assert root is not None, "a folder or unpacked source has a root"
    if description.layout == "ilsvrc-val":
        listing = label_val(val_files(root), labels.devkit, labels.csv, wanted)
    else:
        listing = scan_folder(root, progress, wanted)
    listing.root = root
    return listing
