"""The interface every kind of source implements: a ``Source`` and its ``SampleReader``.

A ``Source`` makes a split's source readable (rule extract: ``prepare``, which writes source.json
and, for sources read in place, members.jsonl), lists its images in ImageFolder order with their
classes (rule count_check: ``list``), and opens the reader of its samples (rules encode_shard and
merge: ``reader``). It also answers what the rest of the workflow asks of a kind, so that no code
outside sources/ names one: the files rule extract reads (``input_files``), the image count a
command line conversion cuts into shards (``image_estimate``), the config keys of its own
(``options``) and what of them changes its records (``recipe``), what its listing expects
(``expects``), where its shard stamps' bytes come from (``stamp_origins``) and whether its images
stay files in place (``files_in_place``). A ``SampleReader`` reads a listed sample's bytes where its
``Location`` (work/source_locations.py) says they lie, and names that place in error messages. The kinds,
and how a rule finds the one it needs, are in sources/__init__.py.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from imagefolder_lmdb.classes.lists import ClassList, OutsideClasses
from imagefolder_lmdb.sources.inputs_read import InputRead
from imagefolder_lmdb.sources.listing_options import FOLDER_ONLY, ListingOptions, is_image
from imagefolder_lmdb.work.files import ManifestHeader, Sample, SourceDescription
from imagefolder_lmdb.work.shard_stamps import FileOrigins, Origins
from imagefolder_lmdb.work.source_locations import Location

#: An archive's images, estimated from its size before it is listed: ImageNet's mean JPEG.
ARCHIVE_BYTES_PER_IMAGE = 110_000


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
    containers: list[str] = field(default_factory=list)  # the files Location numbers (archives, source files)
    outside: OutsideClasses = field(default_factory=OutsideClasses)  # classes not in the class list
    options: dict[str, Any] = field(default_factory=dict)  # the kind's options its reader reads by
    label_kind: str | None = None  # a label file's: "multi" where each image has a list of labels
    field_types: dict[str, str] | None = None  # a label file's: each per-image field's type
    #: the files besides the images it parsed (label file, devkit, val CSV), as parsed: count_check
    #: checks them against the plan's record (run/read_once.py)
    inputs: list[InputRead] = field(default_factory=list)


@dataclass(frozen=True)
class Request:
    """What rule extract was asked to make readable (a split's config)."""

    source: str  # the folder or archive; for a set of source files, the config's pattern (or its first file)
    layout: str  # a name of sources/layouts.py LAYOUTS (imagefolder, ilsvrc-val, label-file, parquet, ...)
    extract: bool  # unpack archives even where they could be read in place
    wanted: Collection[str] | None = None  # the config's class list: other class tars stay unread
    progress: dict[str, Any] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)  # a set of source files: every file, in record order
    options: Mapping[str, Any] = field(default_factory=dict)  # the split's keys of the kind's own (Source.options)
    root: str = ""  # splits.<name>.root: the folder inside the source to read ("/"-separated; "" = all)
    workers: int = 1  # processes the rule may use (its threads): an archive's class tars are listed by as many


#: How a split's labels are found, as its listing reads them: the split's label keys (``devkit``,
#: ``val_labels``, a label file's ``labels``), one mapping from the checked config (its labelling's
#: ``settings``, sources/labelling.py) through rule count_check's param to the listing.
Labels = Mapping[str, Any]


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
    """One kind of source: how it is made readable, how its images are listed and read, and what the
    rest of the workflow asks of it (the module docstring)."""

    kind: ClassVar[str]  # recorded in source.json and the manifest: picks the Source again later
    #: Whether its source is a set of source files (a list, a glob, a brace pattern:
    #: sources/source_files.py), picked by the split's layout (sources/layouts.py) whatever the paths
    #: are; else the kind is picked by what the path is (``claims``).
    file_set: ClassVar[bool] = False
    #: The file name endings that only this kind's source files have (a hint for a source given
    #: without its layout; a WebDataset tar is also an archive, so none for that).
    file_suffixes: ClassVar[tuple[str, ...]] = ()
    #: The split's config keys that are this kind's own (config/schema.yaml), handed to ``prepare`` as
    #: ``Request.options``.
    options: ClassVar[tuple[str, ...]] = ()
    #: Those of ``options`` its later rules read the source by (carried in source.json and the manifest).
    reading_options: ClassVar[tuple[str, ...]] = ()
    #: Whether its samples are files under the manifest's root that stay there after the run
    #: (meta/json then records that root, as ImageFolder's ``samples`` are relative to it).
    files_in_place: ClassVar[bool] = False

    @classmethod
    def claims(cls, request: Request) -> bool:
        """Whether this kind reads ``request.source``, judged by its path (a kind of set of source files
        is picked by the layout instead: sources/__init__.py ``claiming_source``)."""
        return False

    @classmethod
    def input_files(cls, source: str | list[str]) -> list[str]:
        """The files rule extract reads (its input, so that a changed file runs it again): the source
        itself, or each of a set of source files in record order (SourceFilesError: one missing)."""
        if not cls.file_set:
            return [source] if isinstance(source, str) else list(source)
        from imagefolder_lmdb.sources.source_files import source_files

        return source_files(source)

    @classmethod
    def image_estimate(
        cls, source: str | list[str], root: str | None, accepts: Callable[[str], bool] = is_image
    ) -> int | None:
        """The source's images before it is listed, for the shard count of a command line conversion:
        a folder's files that ImageFolder's test ``accepts`` takes (the listing's: what the run
        converts, not the notes beside them), at any depth, ``root`` the folder inside it; an
        archive's size over ``ARCHIVE_BYTES_PER_IMAGE``; None where there is no cheap estimate (a set
        of source files: its kind says so) or no source."""
        if cls.file_set or not isinstance(source, str):
            return None
        if os.path.isfile(source):
            return max(1, os.path.getsize(source) // ARCHIVE_BYTES_PER_IMAGE)
        folder = os.path.join(source, root) if root else source
        return accepted_files(folder, accepts) if os.path.isdir(folder) else None

    @classmethod
    def recipe(cls, split: dict[str, Any]) -> dict[str, Any]:
        """What of the kind's own options changes a split's records, as run/made_from.py records it."""
        return {}

    @classmethod
    def expects(cls) -> str | None:
        """What this kind's listing looks for, in words, for "no images found"; None: what the
        split's labelling looks for in a tree (sources/labelling.py ``Labelling.expects``)."""
        return None

    @classmethod
    def recognises(cls, ignored: list[str]) -> str | None:
        """For "no images found" in a source read with another layout: whether the files it ignored
        look like this kind's, and then which layout to set, in words."""
        return None

    @abstractmethod
    def prepare(self, request: Request, building: str, output: str) -> SourceDescription:
        """Rule extract: make the source readable, writing into ``building`` (renamed to
        ``output`` when whole); the description names final paths."""

    @abstractmethod
    def list(
        self, description: SourceDescription, source_dir: str, labels: Labels, progress: dict, wanted: ClassList | None
    ) -> Listing:
        """Rule count_check: the images in ImageFolder order, within ``wanted`` if given."""

    def list_with_options(
        self,
        description: SourceDescription,
        source_dir: str,
        labels: Labels,
        progress: dict,
        wanted: ClassList | None,
        options: ListingOptions,
    ) -> Listing:
        """``list`` with ImageFolder's listing arguments not at their defaults: refused by every kind but
        a folder's, the one that takes them (config/check.py refuses them for the others before any job)."""
        raise CountMismatchError(f"{description.source}: {FOLDER_ONLY}")

    @abstractmethod
    def reader(self, header: ManifestHeader) -> SampleReader:
        """Rules encode_shard and merge: the reader of the manifest's samples."""

    def stamp_origins(self, description: SourceDescription, changed: dict[str, str]) -> Origins:
        """Rule count_check: where a shard's images come from, as its stamp digests it
        (work/shard_stamps.py): by default the size, time and inode of the source and of every file
        its locations name. ``changed``: the groups run/made_from.py found changed."""
        return FileOrigins([description.source, *description.containers], changed)


def accepted_files(folder: str, accepts: Callable[[str], bool]) -> int:
    """The files under ``folder`` whose path ``accepts`` takes, walked as ImageFolder walks (links
    followed; a folder link that leads back up, once), without a stat of each file."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for where, folders, names in os.walk(folder, followlinks=True):
        info = os.stat(where)
        if (info.st_dev, info.st_ino) in seen:
            folders[:] = []
            continue
        seen.add((info.st_dev, info.st_ino))
        total += sum(1 for name in names if accepts(os.path.join(where, name)))
    return total
