"""The interface every kind of source implements: a ``Source`` and its ``SampleReader``.

A ``Source`` makes a split's source readable (rule extract: ``prepare``, which writes source.json
and, for sources read in place, members.jsonl), lists its images in ImageFolder order with their
classes (rule count_check: ``list``), and opens the reader of its samples (rules encode_shard and
merge: ``reader``). A ``SampleReader`` reads a listed sample's bytes where its ``Location``
(work/locations.py) says they lie, and names that place in error messages. The kinds, and how a
rule finds the one it needs, are in sources/__init__.py.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, ClassVar

from imagefolder_lmdb.classes.lists import ClassList, OutsideClasses
from imagefolder_lmdb.work.files import ManifestHeader, Sample, SourceDescription
from imagefolder_lmdb.work.locations import Location


class CountMismatchError(RuntimeError):
    """The source does not hold what the config says it should."""


class DamagedSampleError(ValueError):
    """The source holds a sample's bytes damaged (a zip member's bad CRC-32 or corrupt deflate data):
    a bad image of that source, left out under ``encode.on_error: skip``; the message names it."""


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
class ParquetColumns:
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
    columns: ParquetColumns = ParquetColumns()
    root: str = ""  # splits.<name>.root: the folder inside the source to read ("/"-separated; "" = all)


@dataclass(frozen=True)
class Labels:
    """Where ILSVRC2012 val labels come from (one of them, for layout ilsvrc-val)."""

    devkit: str | None = None
    csv: str | None = None


class SampleReader(ABC):
    """Reads the bytes of a manifest's samples (rules encode_shard and merge) and names where each
    lies. A sample is given by its manifest path and its location. Safe to share between threads
    (merge reads ahead with a few); closed after use."""

    #: What to do about the bad images this reader read, in words, for the shard's error.
    remedy: ClassVar[str] = "Fix or remove the files named"

    @abstractmethod
    def read(self, path: str, location: Location) -> bytes:
        """The sample's bytes as the source holds them."""

    @abstractmethod
    def describe(self, path: str, location: Location) -> str:
        """Where the sample lies, for error messages: its file, archive member or row."""

    @abstractmethod
    def source_size(self, path: str, location: Location) -> int:
        """The sample's size in the source, in bytes (an estimate where only one is at hand; 0 where
        it cannot be found, which reading it reports)."""

    def close(self) -> None:  # noqa: B027 - most readers hold nothing open
        """Release what reading opened."""


class Source(ABC):
    """One kind of source: how it is made readable, how its images are listed and read."""

    kind: ClassVar[str]  # recorded in source.json and the manifest: picks the Source again later

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

    @abstractmethod
    def reader(self, header: ManifestHeader) -> SampleReader:
        """Rules encode_shard and merge: the reader of the manifest's samples."""
