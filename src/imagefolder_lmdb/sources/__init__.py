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

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from imagefolder_lmdb.sources.base import Request, SampleReader, Source
    from imagefolder_lmdb.work.files import ManifestHeader

    SOURCES: list[type[Source]]

#: Every kind of source, by the name work files record (``Source.kind``), and the module and class
#: that read it; ``claiming_source`` asks those the path decides in this order (the first that claims
#: a source reads it). A kind's module is imported when that kind is asked for: a rule job imports only
#: the kind it reads (each job is a new process, and the kinds' modules cost more than most jobs' work).
KINDS: dict[str, tuple[str, str]] = {
    "webdataset": ("webdataset", "WebDatasetSource"),
    "parquet": ("parquet", "ParquetSource"),
    "index": ("indexed_archive", "IndexedArchiveSource"),
    "folder": ("folder", "FolderSource"),
    "extracted": ("unpacked", "UnpackedSource"),
}


def kind_class(kind: str) -> type[Source]:
    """The class of the known kind ``kind``, its module imported on first use."""
    module, name = KINDS[kind]
    source: type[Source] = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    return source


def every_kind() -> list[type[Source]]:
    """Every kind's class, in ``KINDS``' order (imports each kind's module)."""
    return [kind_class(kind) for kind in KINDS]


def __getattr__(name: str) -> Any:
    # PEP 562: ``SOURCES``, every kind's class, imports every kind's module, so only when asked for.
    if name == "SOURCES":
        return every_kind()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class UnknownSourceKindError(RuntimeError):
    """A work file names a kind of source this version does not know."""


def claiming_source(request: Request) -> Source:
    """The kind of source that reads ``request.source`` (rule extract): the one its layout's bytes
    always are (a set of source files), else the first whose ``claims`` takes the path."""
    kind = kind_of_layout(request.layout)
    if kind is not None:
        return kind()
    return next(source for source in map(kind_class, KINDS) if source.claims(request))()


def source_of_kind(kind: str) -> Source:
    """The kind of source named ``kind``, as extract recorded it (rules count_check, encode_shard, merge)."""
    if kind in KINDS:
        return kind_class(kind)()
    raise UnknownSourceKindError(
        f"the split's work folder names a source of kind {kind!r}, which this version does not read "
        f"(it reads {', '.join(KINDS)}): it was made by another version. Delete "
        "the split's folder under `work` and run the same command again."
    )


def open_sample_reader(header: ManifestHeader) -> SampleReader:
    """The reader of a manifest's samples: its source kind's. A manifest written before kinds were
    recorded came from a folder or an unpacked archive (no containers) or an archive read in place."""
    if header.kind:
        return source_of_kind(header.kind).reader(header)
    return source_of_kind("index" if header.containers else "folder").reader(header)


def kind_of_layout(layout: str) -> type[Source] | None:
    """The kind a layout's bytes always are, whatever the source is (a set of source files); None for
    the layouts whose kind the path decides (a folder, an archive)."""
    from imagefolder_lmdb.sources.layouts import LAYOUTS  # the layouts' labellings: only where a layout is asked

    known = LAYOUTS.get(layout)  # the config's checks name one that is not
    kind = None if known is None else known.bytes.kind
    return None if kind is None else kind_class(kind)


def source_file_suffixes() -> tuple[str, ...]:
    """The file name endings only some kind's source files have (``Source.file_suffixes``)."""
    return tuple(suffix for source in every_kind() for suffix in source.file_suffixes)


def input_files(split: dict[str, Any]) -> list[str]:
    """The files rule extract reads for the checked split config ``split`` (SourceFilesError: one
    of a set of source files is missing)."""
    from imagefolder_lmdb.sources.base import Source

    return (kind_of_layout(split["layout"]) or Source).input_files(split["source"])


def image_estimate(split: dict[str, Any]) -> int | None:
    """The split's images before it is listed (``Source.image_estimate``), as its listing settings
    take them (a predicate that cannot be imported: by extension; the config check says why); None:
    no estimate."""
    from imagefolder_lmdb.sources.base import Source
    from imagefolder_lmdb.sources.layouts import DEFAULT_LAYOUT
    from imagefolder_lmdb.sources.listing_options import DEFAULT_LISTING, ListingOptions, PredicateError

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
    return {key: options.get(key) for source in every_kind() for key in source.reading_options}


def all_kind_options() -> tuple[str, ...]:
    """The split config's keys that some kind takes as its own (``Source.options``), in KINDS' order."""
    return tuple(dict.fromkeys(key for source in every_kind() for key in source.options))


def kind_options(split: dict[str, Any]) -> dict[str, Any]:
    """The split config's keys that are its kind's own (``Source.options``), for ``Request.options``."""
    kind = kind_of_layout(split["layout"])
    return {} if kind is None else {key: split[key] for key in kind.options}


def layout_hint(ignored: list[str]) -> str | None:
    """Which layout the files a listing ignored look like, in words (``Source.recognises``)."""
    return next((hint for source in every_kind() if (hint := source.recognises(ignored))), None)


def files_in_place(kind: str) -> bool:
    """Whether the samples of a source of ``kind`` (a manifest's; "" before kinds were recorded)
    are files that stay under the manifest's root (``Source.files_in_place``)."""
    return kind in KINDS and kind_class(kind).files_in_place
