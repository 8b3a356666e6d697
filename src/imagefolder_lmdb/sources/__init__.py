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
    webdataset  sources/webdataset.py       tar shards of key.jpg + key.cls samples, read in   WebDatasetReader
                                            place

What ImageFolder would see in a tree of paths (classes, order, wrappers, macOS files) is
sources/tree.py; ILSVRC2012 val labelling is sources/ilsvrc_val.py; naming integer labels is
sources/labelled.py. To add a source: write a ``Source`` subclass (and its reader, unless one of
these reads its locations) in a module of its own and add it to ``SOURCES`` (first match wins).
"""

from __future__ import annotations

from imagefolder_lmdb.sources.base import Request, SampleReader, Source
from imagefolder_lmdb.sources.folder import FolderSource
from imagefolder_lmdb.sources.indexed_archive import IndexedArchiveSource
from imagefolder_lmdb.sources.parquet import ParquetSource
from imagefolder_lmdb.sources.unpacked import UnpackedSource
from imagefolder_lmdb.sources.webdataset import WebDatasetSource
from imagefolder_lmdb.work.files import ManifestHeader

#: Every kind of source, in the order ``claiming_source`` asks them (the first that claims a source
#: reads it): the shard layouts first, since they claim by layout, the others by what the path is.
SOURCES: list[type[Source]] = [ParquetSource, WebDatasetSource, IndexedArchiveSource, FolderSource, UnpackedSource]


class UnknownSourceKindError(RuntimeError):
    """A work file names a kind of source this version does not know."""


def claiming_source(request: Request) -> Source:
    """The kind of source that reads ``request.source`` (rule extract)."""
    return next(kind for kind in SOURCES if kind.claims(request))()


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
