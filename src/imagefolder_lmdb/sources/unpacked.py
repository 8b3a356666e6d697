"""Source kind ``extracted``: an archive unpacked into the work folder.

A ``.tar.gz``/``.tgz``, or any archive with ``extract: true``, is unpacked safely (``tarfile``'s
``filter="data"`` behind our own member checks) into ``tree/`` of the folder extract builds, which
is renamed into place when whole. The image tree's root is where ImageFolder would be pointed
after unpacking: wrapper folders are stripped as for archives read in place.
"""

from __future__ import annotations

import logging
import os

from imagefolder_lmdb.classes.lists import ClassList
from imagefolder_lmdb.sources.archive_members import (
    extract_nested_tars,
    extract_tar,
    extract_zip,
    is_zip,
    relative_name,
)
from imagefolder_lmdb.sources.base import CountMismatchError, Labels, Listing, Request, SampleReader, Source
from imagefolder_lmdb.sources.folder import FileReader, list_tree
from imagefolder_lmdb.sources.layouts import layout_named
from imagefolder_lmdb.sources.tree import (
    RootFilter,
    check_not_split_folders,
    files_beside,
    is_image,
    relative_files,
    report_set_aside,
    unpacked_tree_root,
)
from imagefolder_lmdb.work.files import ManifestHeader, SourceDescription

log = logging.getLogger("imagefolder_lmdb.sources")

TREE = "tree"


class UnpackedSource(Source):
    """Any other archive: unpacked, then listed as a folder."""

    kind = "extracted"

    @classmethod
    def claims(cls, request: Request) -> bool:
        return os.path.isfile(request.source)

    def prepare(self, request: Request, building: str, output: str) -> SourceDescription:
        return unpack_archive(request.source, request.layout, building, output, RootFilter(request.root))

    def list(
        self, description: SourceDescription, source_dir: str, labels: Labels, progress: dict, wanted: ClassList | None
    ) -> Listing:
        try:
            return list_tree(description, labels, progress, wanted)
        except CountMismatchError as exc:  # name the user's archive, not only our unpacked copy
            raise CountMismatchError(f"{description.source}, unpacked into {exc}") from exc

    def reader(self, header: ManifestHeader) -> SampleReader:
        return FileReader(header.root)


def is_class_tar(name: str) -> bool:
    return name.endswith(".tar")


def unpack_archive(
    source: str, layout: str, building: str, output: str, select: RootFilter | None = None
) -> SourceDescription:
    """Unpack ``source`` into ``building/tree`` (only ``select``'s root, if one is configured);
    paths in the description are the final ones."""
    select = select or RootFilter("")
    log.info("extracting %s%s", source, f" (only {select.root}/)" if select.root else "")
    tree = os.path.join(building, TREE)
    keep = lambda name: select.see(relative_name(name)) is not None  # noqa: E731
    members, left_out = (extract_zip if is_zip(source) else extract_tar)(source, tree, keep=keep)
    select.check_found(source)
    inside = os.path.join(tree, *select.parts)  # the configured folder, as unpacked
    labelling = layout_named(layout).labelling
    if labelling.class_tars:
        extract_nested_tars(unpacked_tree_root(inside, is_class_tar))
    images = [path for path in relative_files(inside) if is_image(path.rsplit("/", 1)[-1])]
    check_not_split_folders(source, select.root, images)
    root = unpacked_tree_root(inside) if labelling.strips_wrapper else inside
    final_root = os.path.join(output, os.path.relpath(root, building))
    log.info("extracted %d members; the image tree will be at %s", members, final_root)
    set_aside = [f"{name} (macOS metadata, not part of the tree)" for name in left_out]
    set_aside += files_beside(inside, root)
    report_set_aside(set_aside)
    return SourceDescription(
        "extracted",
        os.path.abspath(source),
        layout,
        root=os.path.abspath(final_root),
        members=members,
        set_aside=set_aside,
        inside=select.root,
    )
