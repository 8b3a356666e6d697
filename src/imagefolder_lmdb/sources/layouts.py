"""A layout is a name for a pair: where a split's bytes are × how each image gets its label. The
one table of them is ``LAYOUTS``; the config's ``layout`` key names one (config/schema.yaml's enum
holds these names: a unit test keeps the two equal), and everything that depends on a layout asks
its pair, never the name.

Where the bytes are: a folder or an archive, whose kind of source the path decides (sources/
__init__.py: a folder, an archive read in place or unpacked), or a set of source files of one kind
(WebDataset's tar shards, Parquet files: a list, a glob or a brace pattern, sources/source_files.py),
which the layout picks whatever the paths are. How labels are found: sources/labelling.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from imagefolder_lmdb.sources.labelling import (
    ClassFolders,
    ClassTars,
    IlsvrcValLabels,
    Labelling,
    StoredLabels,
    TableLabels,
)
from imagefolder_lmdb.sources.unlabelled import UNLABELLED_LAYOUT, NoLabels


@dataclass(frozen=True)
class Bytes:
    """Where a split's bytes are."""

    words: str  # for the docs and messages
    #: The kind of source (``Source.kind``) these files always are; None: the path decides (a folder,
    #: an archive), and the source is one path.
    kind: str | None = None

    @property
    def file_set(self) -> bool:
        """Whether the source is a set of source files (a list, a glob, a brace pattern)."""
        return self.kind is not None


FOLDER_OR_ARCHIVE = Bytes("a folder or an archive (.tar, .tar.gz, .zip)")
WEBDATASET_SHARDS = Bytes("WebDataset's tar shards", kind="webdataset")
PARQUET_FILES = Bytes("Parquet files", kind="parquet")


@dataclass(frozen=True)
class Layout:
    """A layout: its name, where its bytes are and how each image gets its label."""

    name: str
    bytes: Bytes
    labelling: Labelling
    #: Whether ImageFolder's listing arguments (extensions, allow_empty, is_valid_file) apply.
    listing_options: bool = False


LAYOUTS: dict[str, Layout] = {
    layout.name: layout
    for layout in (
        Layout("imagefolder", FOLDER_OR_ARCHIVE, ClassFolders(), listing_options=True),
        Layout("ilsvrc-train", FOLDER_OR_ARCHIVE, ClassTars()),
        Layout("ilsvrc-val", FOLDER_OR_ARCHIVE, IlsvrcValLabels()),
        Layout("label-file", FOLDER_OR_ARCHIVE, TableLabels()),
        Layout(UNLABELLED_LAYOUT, FOLDER_OR_ARCHIVE, NoLabels(), listing_options=True),
        Layout("webdataset", WEBDATASET_SHARDS, StoredLabels()),
        Layout("parquet", PARQUET_FILES, StoredLabels()),
    )
}
#: The layout of a split that names none.
DEFAULT_LAYOUT = "imagefolder"


def layout_named(name: str) -> Layout:
    """The layout of that name (the config's checks refused any other)."""
    return LAYOUTS[name]


def picked_layout(layout: str, labels: object) -> tuple[str, object]:
    """The layout and ``labels`` of a split that gives ``labels`` where its layout is the default (or
    is already the one they picked: the check runs again): the first layout of ``LAYOUTS`` whose
    labelling that value picks (a label file's, unlabelled's), and the value that labelling keeps.
    Any other split keeps both."""
    given = LAYOUTS.get(layout) if isinstance(layout, str) else None  # the schema names a layout it lacks
    if labels is None or (layout != DEFAULT_LAYOUT and (given is None or not given.labelling.picks(labels))):
        return layout, labels
    picked = next((found for found in LAYOUTS.values() if found.labelling.picks(labels)), None)
    return (layout, labels) if picked is None else (picked.name, picked.labelling.labels_kept(labels))


def file_set_layouts() -> tuple[str, ...]:
    """The layouts whose source is a set of source files."""
    return tuple(name for name, layout in LAYOUTS.items() if layout.bytes.file_set)
