"""Source kind ``folder``: a folder used where it is, nothing extracted.

An ImageFolder tree is listed by the project's own scan, with torchvision's rules (sources/tree.py);
for layout ilsvrc-val, the flat (or partly
sorted) validation images are labelled by file name. Its samples are files, read by ``FileReader``
(as are those of an archive unpacked into the work folder).
"""

from __future__ import annotations

import logging
import os

from imagefolder_lmdb.classes.lists import ClassList
from imagefolder_lmdb.sources.base import Labels, Listing, Request, SampleReader, Source
from imagefolder_lmdb.sources.layouts import layout_named
from imagefolder_lmdb.sources.listing_options import DEFAULT_LISTING, ListingOptions
from imagefolder_lmdb.sources.tree import check_folder_not_splits, folder_to_read
from imagefolder_lmdb.work.files import ManifestHeader, SourceDescription
from imagefolder_lmdb.work.shard_stamps import FolderOrigins, Origins
from imagefolder_lmdb.work.source_locations import FileLocation, Location, location_as

log = logging.getLogger("imagefolder_lmdb.sources")


class FolderSource(Source):
    """A folder: an ImageFolder tree, or ILSVRC2012 val images (layout ilsvrc-val)."""

    kind = "folder"
    files_in_place = True

    @classmethod
    def claims(cls, request: Request) -> bool:
        return os.path.isdir(request.source)

    def prepare(self, request: Request, building: str, output: str) -> SourceDescription:
        folder = folder_to_read(request)
        log.info("source %s is a folder: used in place, nothing to extract", folder)
        check_folder_not_splits(request.source, request.root)
        root = os.path.abspath(folder)
        return SourceDescription(self.kind, root, request.layout, root=root, inside=request.root)

    def list(
        self, description: SourceDescription, source_dir: str, labels: Labels, progress: dict, wanted: ClassList | None
    ) -> Listing:
        return list_tree(description, labels, progress, wanted)

    def list_with_options(
        self,
        description: SourceDescription,
        source_dir: str,
        labels: Labels,
        progress: dict,
        wanted: ClassList | None,
        options: ListingOptions,
    ) -> Listing:
        return list_tree(description, labels, progress, wanted, options)

    def reader(self, header: ManifestHeader) -> SampleReader:
        return FileReader(header.root)

    def stamp_origins(self, description: SourceDescription, changed: dict[str, str]) -> Origins:
        """The listing of each class folder a shard's images lie in, and each image's change time: a
        changed folder encodes its own shards again, not every one."""
        return FolderOrigins(description.tree_root(), changed)


def list_tree(
    description: SourceDescription,
    labels: Labels,
    progress: dict,
    wanted: ClassList | None,
    options: ListingOptions = DEFAULT_LISTING,
) -> Listing:
    """The images of a tree on disk (a folder, or an archive unpacked into the work folder); ImageFolder's
    listing arguments (``options``) for a folder of layout imagefolder (config/check.py refuses the rest)."""
    root = description.tree_root()
    listing = layout_named(description.layout).labelling.list_tree(root, labels, progress, wanted, options)
    listing.root = root
    return listing


class FileReader(SampleReader):
    """Reads samples that are files under the manifest's root: the sample's own path, or (a val
    image labelled by its name) the file its location names."""

    def __init__(self, root: str) -> None:
        self.root = root

    def file(self, path: str, location: Location) -> str:
        if location is None:
            return os.path.join(self.root, path)
        return os.path.join(self.root, location_as(FileLocation, path, location).file)

    def read(self, path: str, location: Location) -> bytes:
        with open(self.file(path, location), "rb") as stream:
            return stream.read()

    def describe(self, path: str, location: Location) -> str:
        return self.file(path, location)

    def source_size(self, path: str, location: Location) -> int:
        try:
            return os.path.getsize(self.file(path, location))
        except OSError:
            return 0
