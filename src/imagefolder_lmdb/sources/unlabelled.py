"""A split whose images have no label (a competition's ``test/``): ``labels: unlabelled`` in a config,
``--unlabelled`` on the command line; its layout ``unlabelled`` (sources/layouts.py), this labelling.

Every image under the split's root, at any depth, in the order of their sorted paths (as a label file's
split lists them: folder names are no labels), each with the label -1 (format version 6,
``label_kind: "none"``). The class list is the other splits' (classes/plan.py takes it from a labelled
split), so that a prediction indexes the classes the training split numbers.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

from imagefolder_lmdb.classes.lists import ClassList
from imagefolder_lmdb.sources.base import Labels, Listing
from imagefolder_lmdb.sources.label_keys import UNLABELLED
from imagefolder_lmdb.sources.labelling import Labelling
from imagefolder_lmdb.sources.listing_options import ListingOptions, is_image
from imagefolder_lmdb.sources.tree import relative_files
from imagefolder_lmdb.work.files import Sample
from imagefolder_lmdb.work.source_locations import Location

__all__ = ["NO_LABEL", "NO_LABELS_KIND", "UNLABELLED", "UNLABELLED_LAYOUT", "NoLabels", "unlabelled_listing"]

#: Its layout, which ``labels: unlabelled`` picks (sources/layouts.py ``picked_layout``).
UNLABELLED_LAYOUT = "unlabelled"
#: The manifest's label kind, as format version 6 names it (reader/format_unlabelled.py).
NO_LABELS_KIND = "none"
#: Each image's label in the manifest and the file.
NO_LABEL = -1


class NoLabels(Labelling):
    """No image has a label: every image of the tree is listed, whatever folder it lies in."""

    name = "no labels"
    expects = "images (at any depth; no labels)"

    def picks(self, labels: object) -> bool:
        return labels == UNLABELLED

    def labels_kept(self, labels: object) -> object:
        return None  # no label file: the layout says it all

    def list_tree(
        self, root: str, labels: Labels, progress: dict, wanted: ClassList | None, options: ListingOptions
    ) -> Listing:
        accepts = options.accepts()
        paths = sorted(relative_files(root))
        return unlabelled_listing([(path, None) for path in paths], lambda path: accepts(os.path.join(root, path)))

    def list_members(
        self,
        entries: list[tuple[str, Location]],
        where: str,
        folders: Iterable[str],
        labels: Labels,
        wanted: ClassList | None,
        read: Callable[[str], bytes] | None = None,
    ) -> Listing:
        return unlabelled_listing(sorted(entries, key=lambda entry: entry[0]), is_image)


def unlabelled_listing(entries: list[tuple[str, Location]], accepts: Callable[[str], bool]) -> Listing:
    """The images among ``entries`` (sorted paths and where each lies; None: a file under the root),
    each labelled -1; the other files ignored. No class of its own: the class list is the other splits'."""
    images = [(path, location) for path, location in entries if accepts(path)]
    ignored = [path for path, _ in entries if not accepts(path)]
    samples = [Sample(index, NO_LABEL, path, location) for index, (path, location) in enumerate(images)]
    listing = Listing([], samples, ignored)
    listing.label_kind = NO_LABELS_KIND
    return listing
