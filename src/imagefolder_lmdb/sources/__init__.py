"""The kinds of source the workflow reads, and how each rule finds the one it needs.

Every kind implements the interface of sources/base.py: a ``Source`` (``prepare`` for rule extract,
``list`` for rule count_check) and the ``SampleReader`` its ``reader`` opens for rules encode_shard
and merge.

    kind        module                      what                                               reader
    folder      sources/folder.py           a folder used in place (an ImageFolder tree, or    FileReader
                                            flat ILSVRC val)
    index       sources/indexed_archive.py  a .tar, .zip, tar of class tars or folder of       TarReader, ZipReader
                                            class tars, read in place
    extracted   sources/unpacked.py         a .tar.gz/.tgz, or any archive with extract: true, FileReader
                                            unpacked
    parquet     sources/parquet.py          Parquet files of image bytes and integer labels,   ParquetReader
                                            read in place
    webdataset  sources/webdataset.py       tar files (WebDataset's shards) of key.jpg +       WebDatasetReader
                                            key.cls samples, read in place

What ImageFolder would see in a tree of paths (classes, order, wrappers, macOS files) is
sources/tree.py; ILSVRC2012 val labelling is sources/ilsvrc_val.py; naming integer labels is
sources/labelled.py. A split's layout names a pair, where its bytes are (one of these kinds, or
whichever the path is) and how its images get their labels (sources/labelling.py), in one table:
sources/layouts.py. The rest of the workflow asks the kinds through the functions below, never by
a kind's name (and the split's labelling through sources/labellings.py); docs/architecture.md says
how to add where bytes are and how labels are found.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from imagefolder_lmdb.sources.base import Request, SampleReader, Source
from imagefolder_lmdb.sources.folder import FolderSource
from imagefolder_lmdb.sources.indexed_archive import IndexedArchiveSource
from imagefolder_lmdb.sources.layouts import DEFAULT_LAYOUT, LAYOUTS
from imagefolder_lmdb.sources.listing_options import DEFAULT_LISTING, ListingOptions, PredicateError
from imagefolder_lmdb.sources.parquet import ParquetSource
from imagefolder_lmdb.sources.unpacked import UnpackedSource
from imagefolder_lmdb.sources.webdataset import WebDatasetSource
from imagefolder_lmdb.work.files import ManifestHeader

#: Every kind of source; ``claiming_source`` asks those the path decides in this order (the first
#: that claims a source reads it).
SOURCES: list[type[Source]] = [WebDatasetSource, ParquetSource, IndexedArchiveSource, FolderSource, UnpackedSource]


class UnknownSourceKindError(RuntimeError):
    """A work file names a kind of source this version does not know."""


def claiming_source(request: Request) -> Source:
    """The kind of source that reads ``request.source`` (rule extract): the one its layout's bytes
    always are (a set of source files), else the first whose ``claims`` takes the path."""
    kind = kind_of_layout(request.layout)
    return kind() if kind is not None else next(kind for kind in SOURCES if kind.claims(request))()


def source_of_kind(kind: str) -> Source:
    """The kind of source named ``kind``, as extract recorded it (rules count_check, encode_shard, merge)."""
    for source in SOURCES:
        if source.kind == kind:
            return source()
    raise UnknownSourceKindError(
        f"the split's work folder names a source of kind {kind!r}, which this version does not read "
        f"(it reads {', '.join(source.kind for source in SOURCES)}): it was made by another version. Delete "
        "the split's folder under `work` and run the same command again."
    )


def open_sample_reader(header: ManifestHeader) -> SampleReader:
    """The reader of a manifest's samples: its source kind's. A manifest written before kinds were
    recorded came from a folder or an unpacked archive (no containers) or an archive read in place."""
    if header.kind:
        return source_of_kind(header.kind).reader(header)
    return (IndexedArchiveSource() if header.containers else FolderSource()).reader(header)


def kind_of_layout(layout: str) -> type[Source] | None:
    """The kind a layout's bytes always are, whatever the source is (a set of source files); None for
    the layouts whose kind the path decides (a folder, an archive)."""
    known = LAYOUTS.get(layout)  # the config's checks name one that is not
    kind = None if known is None else known.bytes.kind
    return None if kind is None else next(source for source in SOURCES if source.kind == kind)


def source_file_suffixes() -> tuple[str, ...]:
    """The file name endings only some kind's source files have (``Source.file_suffixes``)."""
    return tuple(suffix for source in SOURCES for suffix in source.file_suffixes)


def input_files(split: dict[str, Any]) -> list[str]:
    """The files rule extract reads for the checked split config ``split`` (SourceFilesError: one
    of a set of source files is missing)."""
    return (kind_of_layout(split["layout"]) or Source).input_files(split["source"])


def image_estimate(split: dict[str, Any]) -> int | None:
    """The split's images before it is listed (``Source.image_estimate``), as its listing settings
    take them (a predicate that cannot be imported: by extension; the config check says why); None:
    no estimate."""
    kind = kind_of_layout(split.get("layout", DEFAULT_LAYOUT)) or Source
    try:
        accepts = ListingOptions.from_split(split).accepts()
    except PredicateError:
        accepts = DEFAULT_LISTING.accepts()
    return kind.image_estimate(split["source"], split.get("root"), accepts)


def kind_recipe(split: dict[str, Any]) -> dict[str, Any]:
    """What the split's own kind options are, as run/made_from.py records them (``Source.recipe``)."""
    kind = kind_of_layout(split["layout"])
    return {} if kind is None else kind.recipe(split)


def work_file_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """A kind's reading options as source.json and the manifest carry them: every kind's
    (``Source.reading_options``), None where not given, as earlier versions wrote them when each was
    a field of every file (their bytes, and so their checksums, stay the same)."""
    return {key: options.get(key) for source in SOURCES for key in source.reading_options}


def all_kind_options() -> tuple[str, ...]:
    """The split config's keys that some kind takes as its own (``Source.options``), in SOURCES' order."""
    return tuple(dict.fromkeys(key for source in SOURCES for key in source.options))


def kind_options(split: dict[str, Any]) -> dict[str, Any]:
    """The split config's keys that are its kind's own (``Source.options``), for ``Request.options``."""
    kind = kind_of_layout(split["layout"])
    return {} if kind is None else {key: split[key] for key in kind.options}


def layout_hint(ignored: list[str]) -> str | None:
    """Which layout the files a listing ignored look like, in words (``Source.recognises``)."""
    return next((hint for source in SOURCES if (hint := source.recognises(ignored))), None)


def files_in_place(kind: str) -> bool:
    """Whether the samples of a source of ``kind`` (a manifest's; "" before kinds were recorded)
    are files that stay under the manifest's root (``Source.files_in_place``)."""
    return any(source.kind == kind and source.files_in_place for source in SOURCES)
