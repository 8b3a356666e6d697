"""The files the rules pass to each other, as types: one writer and one reader for each.

    file (run_paths.py)            type                      written by     read by
    source/source.json             SourceDescription         extract        count_check
    source/members.jsonl           Member rows               extract        count_check
    manifest.jsonl                 ManifestHeader + Sample   count_check    encode_shard, merge, write_meta
    counts.json                    CountsReport              count_check    write_meta (and the user)
    parts/<shard>.json             ShardReport               encode_shard   merge, write_meta

Where an image's bytes are (a file under the root, a byte range of a tar, a zip member) is a
``Location`` (archive_members.py reads them). The renumbering around skipped images is decided
once, by :func:`kept_indices`. Every writer goes through the atomic outputs of outputs.py.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from imagefolder_lmdb.outputs import publish, read_json, temporary_path, write_json_atomic

DESCRIPTION = "source.json"
MEMBERS = "members.jsonl"

# --------------------------------------------------------------------------------------------------
# Where an image's bytes are.
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FileLocation:
    """A file under the manifest's root, at a path other than the sample's own (val images)."""

    file: str


@dataclass(frozen=True, slots=True)
class TarLocation:
    """A byte range of an uncompressed tar (also a member of a class tar inside ILSVRC's train tar)."""

    tar: int  # index into the manifest's containers
    offset: int
    size: int


@dataclass(frozen=True, slots=True)
class ZipLocation:
    """A zip member, read back by zipfile's own name for it."""

    zip: int  # index into the manifest's containers
    member: str
    size: int


@dataclass(frozen=True)
class ParquetLocation:
    """A row of a Parquet file: the image column's value in one row group (layout parquet)."""

    parquet: int  # index into the manifest's containers
    row_group: int
    row: int  # within the row group


#: None: the file at ``root/path`` of the sample itself (an ImageFolder tree).
Location = FileLocation | TarLocation | ZipLocation | ParquetLocation | None
LOCATION_TYPES = (FileLocation, TarLocation, ZipLocation, ParquetLocation)


def location_from_json(value: dict[str, Any] | None) -> Location:
    """The location a manifest or member row stores as a JSON object (told apart by its first key)."""
    if value is None:
        return None
    kind = next(cls for cls in LOCATION_TYPES if fields(cls)[0].name in value)
    return kind(**value)


def location_to_json(location: Location) -> dict[str, Any] | None:
    return None if location is None else asdict(location)


def location_size(location: Location) -> int | None:
    """The size an archive index recorded, or None where only the file system knows it."""
    return location.size if isinstance(location, TarLocation | ZipLocation) else None


# --------------------------------------------------------------------------------------------------
# extract -> count_check: the source description and the member index.
# --------------------------------------------------------------------------------------------------


@dataclass
class SourceDescription:
    """What extract made of a split's source. ``kind``: ``folder`` (used in place), ``index`` (an
    archive read in place through members.jsonl), ``extracted`` (unpacked into the work folder)."""

    kind: str
    source: str  # the user's source, absolute
    layout: str
    root: str | None = None  # folder and extracted: the image tree's root
    inside: str = ""  # splits.<name>.root: the folder of the source the split was read from
    labels: str | None = None  # val_labels given as a member of the archive: extract's copy of it
    containers: list[str] = field(default_factory=list)  # index: the archives, as Location numbers them
    members: int = 0  # index and extracted: members listed or unpacked
    strip: str = ""  # index: the wrapper folders removed from member paths
    folders: list[str] = field(default_factory=list)  # index: top folders (classes even without files)
    set_aside: list[str] = field(default_factory=list)  # members not part of the tree, with why
    unread_classes: list[str] = field(default_factory=list)  # class tars outside the class list
    label_names: list[str] | None = None  # parquet: the class names its files' metadata gives
    image_column: str | None = None  # parquet: the column the image bytes are in


def write_source_description(folder: str, description: SourceDescription) -> None:
    write_json_atomic(os.path.join(folder, DESCRIPTION), asdict(description))


def read_source_description(folder: str) -> SourceDescription:
    return SourceDescription(**read_json(os.path.join(folder, DESCRIPTION)))


@dataclass(frozen=True, slots=True)  # slots: an index holds ~1.4M of these (Kaggle's zip)
class Member:
    """A file inside an archive: its path there and where its bytes are; or a folder (no location).
    Shards of samples (webdataset, parquet) also carry each sample's integer label."""

    path: str  # "/"-separated, as stored (for a tar of tars: "<inner tar name without .tar>/member")
    location: TarLocation | ZipLocation | ParquetLocation | None  # None: a folder
    label: int | None = None  # webdataset, parquet: the label the shard stores

    @property
    def is_folder(self) -> bool:
        return self.location is None


def write_members(folder: str, members: Iterable[Member], strip: str = "") -> int:
    """members.jsonl: one ``[path without strip, location(, label)]`` row per file member; returns
    the count."""
    count = 0
    with open(os.path.join(folder, MEMBERS), "w", encoding="utf-8") as stream:
        for member in members:
            row: list[Any] = [member.path[len(strip) :], location_to_json(member.location)]
            if member.label is not None:
                row.append(member.label)
            stream.write(json.dumps(row, ensure_ascii=False))
            stream.write("\n")
            count += 1
    return count


def read_members(folder: str) -> list[tuple[str, Location]]:
    """The (path, location) of every member row."""
    return [(member.path, member.location) for member in read_labelled_members(folder)]


def read_labelled_members(folder: str) -> list[Member]:
    """Every member row, with its label where the source stores one (webdataset, parquet)."""
    return list(iter_labelled_members(folder))


def iter_labelled_members(folder: str) -> Iterator[Member]:
    """The member rows one by one: a listing that takes each once never holds them all (1.28M)."""
    with open(os.path.join(folder, MEMBERS), encoding="utf-8") as stream:
        for row in map(json.loads, stream):
            yield Member(row[0], location_from_json(row[1]), *row[2:])


# --------------------------------------------------------------------------------------------------
# count_check -> encode_shard, merge, write_meta: the manifest and the counts report.
# --------------------------------------------------------------------------------------------------


@dataclass
class ManifestHeader:
    root: str  # folder the relative paths (or file locations) are under
    classes: list[str]
    count: int
    containers: list[str] = field(default_factory=list)  # archives that tar/zip/parquet locations name
    kind: str = ""  # the kind of source (src/imagefolder_lmdb/sources/) whose reader reads the samples
    image_column: str | None = None  # parquet: the column the image bytes are in


@dataclass
class Sample:
    index: int
    label: int
    path: str  # the ImageFolder relative path "class/file.ext", "/"-separated
    location: Location = None  # where the bytes are when not at root/path


def write_manifest(path: str, header: ManifestHeader, samples: Iterable[Sample]) -> None:
    """First line: the header object; then ``[index, label, path(, location)]`` per image (JSON,
    so any character a file name can hold survives)."""
    temporary = temporary_path(path)
    with open(temporary, "w", encoding="utf-8") as stream:
        json.dump(header.__dict__, stream, ensure_ascii=False)
        stream.write("\n")
        for sample in samples:
            row: list[Any] = [sample.index, sample.label, sample.path]
            if sample.location is not None:
                row.append(location_to_json(sample.location))
            stream.write(json.dumps(row, ensure_ascii=False))
            stream.write("\n")
    publish(temporary, path)


def read_manifest_header(path: str) -> ManifestHeader:
    with open(path, encoding="utf-8") as stream:
        return ManifestHeader(**json.loads(stream.readline()))


def read_manifest(path: str, start: int = 0, stop: int | None = None) -> Iterator[Sample]:
    """Samples ``start <= index < stop``, parsing only those lines (shards read a slice)."""
    with open(path, encoding="utf-8") as stream:
        stream.readline()
        for line_number, line in enumerate(stream):
            if line_number < start:
                continue
            if stop is not None and line_number >= stop:
                break
            index, label, sample_path, *location = json.loads(line)
            yield Sample(index, label, sample_path, location_from_json(location[0] if location else None))


@dataclass
class CountsReport:
    """counts.json: what count_check found in a split's source, and what it left out and why."""

    source: str
    kind: str
    layout: str
    images: int
    classes: int
    per_class: dict[str, int]
    empty_classes: list[str]
    class_list: dict[str, Any]  # origin (in words) and size of the class list the split uses
    outside_class_list: dict[str, Any]  # images and classes set aside for lying outside it
    ignored_files: int
    ignored_examples: list[str]
    expected_images: int | None
    expected_classes: int | None
    inside: str = ""  # splits.<name>.root: the folder inside the source the split was read from


def write_counts(path: str, counts: CountsReport) -> None:
    write_json_atomic(path, asdict(counts))


def read_counts(path: str) -> CountsReport:
    return CountsReport(**read_json(path))


# --------------------------------------------------------------------------------------------------
# encode_shard -> merge, write_meta: the shard report.
# --------------------------------------------------------------------------------------------------


@dataclass
class ShardReport:
    """What one shard stored: per-record columns (in index order), skipped images and why."""

    shard: int
    shards: int
    start: int
    stop: int
    index: list[int] = field(default_factory=list)
    width: list[int] = field(default_factory=list)
    height: list[int] = field(default_factory=list)
    crc32: list[int] = field(default_factory=list)
    storage: list[int] = field(default_factory=list)
    source_bytes: list[int] = field(default_factory=list)
    stored_bytes: list[int] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)

    def add(self, index: int, width: int, height: int, crc32: int, storage: int, source: int, stored: int) -> None:
        self.index.append(index)
        self.width.append(width)
        self.height.append(height)
        self.crc32.append(crc32)
        self.storage.append(storage)
        self.source_bytes.append(source)
        self.stored_bytes.append(stored)


def write_shard_report(path: str, report: ShardReport) -> None:
    write_json_atomic(path, asdict(report))


def read_shard_report(path: str) -> ShardReport:
    return ShardReport(**read_json(path))


def column(reports: Iterable[ShardReport], name: str) -> list[Any]:
    """One per-record column of every shard, in index order."""
    return [value for report in reports for value in getattr(report, name)]


def kept_indices(reports: list[ShardReport]) -> list[int]:
    """The manifest index of each stored record, by final record index: images are renumbered
    0..n-1 around the skipped ones, in manifest order. merge and write_meta both use this."""
    return column(reports, "index")
