"""The kinds of source the workflow reads, behind one interface.

A ``Source`` knows how to make a split's source readable (rule extract: ``prepare``, which writes
source.json and, for archives read in place, members.jsonl), how to list its images in
ImageFolder order with their classes (rule count_check: ``list``), and how to read each listed
image's bytes and say where it lives in error messages (rules encode_shard and merge:
``reader``). Today's kinds all read by ``Location`` (src/imagefolder_lmdb/work_files.py) through
``archive_members.MemberReader``; a kind whose images live elsewhere returns a reader of its own.

    kind        module                 what
    folder      sources/folder.py      a folder used in place (an ImageFolder tree, or flat ILSVRC val)
    index       sources/indexed_archive.py a .tar, .zip, tar of class tars or folder of class tars, read in place
    extracted   sources/unpacked.py    a .tar.gz/.tgz, or any archive with extract: true, unpacked
    parquet     sources/parquet.py     Parquet files of image bytes and integer labels, read in place
    webdataset  sources/webdataset.py  tar shards of key.jpg + key.cls samples, read in place

What ImageFolder would see in a tree of paths (classes, order, wrappers, macOS files) is
sources/tree.py; ILSVRC2012 val labelling is sources/ilsvrc_val.py. To add a source: write a
``Source`` subclass in a module of its own and add it to ``SOURCES`` (first match wins).
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, ClassVar

from imagefolder_lmdb.archive_members import MemberReader
from imagefolder_lmdb.class_list import ClassList, OutsideClasses
from imagefolder_lmdb.work_files import ManifestHeader, Sample, SourceDescription


class CountMismatchError(RuntimeError):
    """The source does not hold what the config says it should."""


@dataclass
class Listing:
    """Classes and samples in ImageFolder order, and the files ImageFolder would not take."""

    classes: list[str]
    samples: list[Sample]
    ignored: list[str] = field(default_factory=list)
    root: str = ""
    containers: list[str] = field(default_factory=list)
    outside: OutsideClasses = field(default_factory=OutsideClasses)  # classes not in the class list
    image_column: str | None = None  # parquet: the column the reader takes image bytes from


@dataclass(frozen=True)
class Columns:
    """Layout parquet: the columns of image bytes and of integer labels (config keys image_column
    and label_column)."""

    image: str = "image"
    label: str = "label"


@dataclass(frozen=True)
class Request:
    """What rule extract was asked to make readable (a split's config)."""

    source: str  # the folder or archive; for shards, the config's pattern (or its first file)
    layout: str  # imagefolder | ilsvrc-train | ilsvrc-val | webdataset | parquet
    extract: bool  # unpack archives even where they could be read in place
    wanted: Collection[str] | None = None  # the config's class list: other class tars stay unread
    progress: dict[str, Any] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)  # webdataset, parquet: every shard, in record order
    columns: Columns = Columns()
    root: str = ""  # splits.<name>.root: the folder inside the source to read ("/"-separated; "" = all)

    def folder(self) -> str:
        """A folder source's folder to read, ``source/root``; stops, naming the folders there are,
        if ``root`` is not one."""
        from imagefolder_lmdb.sources.tree import RootFilter, folder_inside  # sources.tree imports this module

        folder = folder_inside(self.source, self.root)
        if not os.path.isdir(folder):
            raise RootFilter(self.root).missing_in_folder(self.source)
        return folder


@dataclass(frozen=True)
class Labels:
    """Where ILSVRC2012 val labels come from (one of them, for layout ilsvrc-val)."""

    devkit: str | None = None
    csv: str | None = None


class Source(ABC):
    """One kind of source: how it is made readable, and how its images are listed."""

    kind: ClassVar[str]  # recorded in source.json, picks the Source again in count_check

    @classmethod
    @abstractmethod
    def claims(cls, request: Request) -> bool:
        """Whether this kind reads ``request.source``."""

    @abstractmethod
    def prepare(self, request: Request, building: str, output: str) -> SourceDescription:
        """Rule extract: make the source readable, writing into ``building`` (renamed to
        ``output`` when whole); the description names final paths."""

    @abstractmethod
    def list(
        self, description: SourceDescription, source_dir: str, labels: Labels, progress: dict, wanted: ClassList | None
    ) -> Listing:
        """Rule count_check: the images in ImageFolder order, within ``wanted`` if given."""

    def reader(self, header: ManifestHeader) -> MemberReader:
        """Rules encode_shard and merge: reads a listed sample's bytes (``read``), names where it
        lives (``describe``); thread-safe, closed after use."""
        return MemberReader(header.root, header.containers)


def claiming_source(request: Request) -> Source:
    """The kind of source that reads ``request.source`` (rule extract)."""
    return next(kind for kind in SOURCES if kind.claims(request))()


def source_of_kind(kind: str) -> Source:
    """The kind of source named ``kind``, as extract recorded it in source.json (rule count_check)."""
    return next(source for source in SOURCES if source.kind == kind)()


def open_sample_reader(header: ManifestHeader) -> MemberReader:
    """The reader of a manifest's samples: its source kind's (manifests before kinds were recorded
    are read by location, as every kind read them then)."""
    kinds = [kind for kind in SOURCES if kind.kind == header.kind]
    return kinds[0]().reader(header) if kinds else MemberReader(header.root, header.containers)


def _registry() -> list[type[Source]]:
    from imagefolder_lmdb.sources.folder import FolderSource
    from imagefolder_lmdb.sources.indexed_archive import IndexedArchiveSource
    from imagefolder_lmdb.sources.parquet import ParquetSource
    from imagefolder_lmdb.sources.unpacked import UnpackedSource
    from imagefolder_lmdb.sources.webdataset import WebDatasetSource

    # shard layouts first: they claim by layout, the generic kinds by what the path is
    return [ParquetSource, WebDatasetSource, IndexedArchiveSource, FolderSource, UnpackedSource]


#: Every kind of source, in the order ``claiming_source`` asks them (the first that claims a source reads it).
SOURCES: list[type[Source]] = _registry()
