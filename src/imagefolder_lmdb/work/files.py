"""The files the rules pass to each other, as types: one writer and one reader for each.

    file (work/paths.py)           type                      written by     read by
    source/source.json             SourceDescription         extract        count_check
    source/members.jsonl           Member rows               extract        count_check
    manifest.jsonl                 ManifestHeader + Sample   count_check    encode_shard, merge, write_meta
    counts.json                    CountsReport              count_check    write_meta (and the user)
    shards/<shard>.json            ShardStamp (shard_stamps) count_check    encode_shard (and Snakemake)
    parts/<shard>.json             ShardReport               encode_shard   merge, write_meta

Where an image's bytes are (a file under the root, a byte range of a tar, a zip member, a Parquet
row) is a ``Location`` (work/source_locations.py; the sources' readers read them). The renumbering
around skipped images is decided once, by :func:`kept_indices`. Every writer writes through
writing/atomic.py, so a file is at its final path only when whole.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar

from imagefolder_lmdb.work.source_locations import (
    Location,
    location_from_json,
    location_to_json,
)
from imagefolder_lmdb.writing.atomic import atomic_file, write_json_atomic

DESCRIPTION = "source.json"
MEMBERS = "members.jsonl"


class DamagedWorkFileError(ValueError):
    """A work file that is not the JSON the workflow wrote (cut short, or edited by hand)."""


def read_json(path: str) -> Any:
    """A work file's JSON; DamagedWorkFileError naming the file and the way out where it is not JSON."""
    with open(path, encoding="utf-8", errors="surrogateescape") as stream:
        try:
            return json.load(stream)
        except ValueError as exc:
            raise DamagedWorkFileError(
                f"{path}: not the JSON this workflow wrote ({exc}; cut short, or edited by hand?). Delete it, "
                "or the split's folder under `work`, and run the same command again: what it held is made anew."
            ) from None


# --------------------------------------------------------------------------------------------------
# extract -> count_check: the source description and the member index.
# --------------------------------------------------------------------------------------------------


@dataclass
class SourceDescription:
    """What extract made of a split's source. ``kind``: the kind of source that made it (one of
    src/imagefolder_lmdb/sources/, each a module of its own), which reads it again in the later rules.
    The fields after ``inside`` are those of the kinds that need them, as each comment says."""

    kind: str
    source: str  # the user's source, absolute
    layout: str
    root: str | None = None  # a tree of files (a folder, an unpacked archive): the image tree's root
    inside: str = ""  # splits.<name>.root: the folder of the source the split was read from
    #: the labelling's files extract copied out of the source (sources/labellings.py copy_labels_member),
    #: one mapping here, keys of their own in the file (``options_spread``)
    labelling: dict[str, Any] = field(default_factory=dict)
    containers: list[str] = field(default_factory=list)  # the files Location numbers: archives, source files
    members: int = 0  # members listed (read in place) or unpacked
    strip: str = ""  # index: the wrapper folders removed from member paths
    folders: list[str] = field(default_factory=list)  # index: top folders (classes even without files)
    set_aside: list[str] = field(default_factory=list)  # members not part of the tree, with why
    unread_classes: list[str] = field(default_factory=list)  # class tars outside the class list
    label_names: list[str] | None = None  # parquet: the class names its files' metadata gives
    #: the kind's options its later rules read by (sources.work_file_options: every kind's, None where
    #: not its own), one mapping here, keys of their own in the file (``options_spread``)
    options: dict[str, Any] = field(default_factory=dict)

    #: The mappings besides ``options`` spread into the file, each with the keys it gathers back.
    SPREAD: ClassVar[dict[str, tuple[str, ...]]] = {"labelling": ("labels",)}

    def tree_root(self) -> str:
        """The image tree's root of a folder or an unpacked archive (a work file without one is damaged)."""
        if self.root is None:
            raise ValueError(
                f"{DESCRIPTION} of {self.source} (kind {self.kind}) names no image tree: the file is damaged. "
                "Delete the split's folder under `work` and run the same command again."
            )
        return self.root


def write_source_description(folder: str, description: SourceDescription) -> None:
    write_json_atomic(os.path.join(folder, DESCRIPTION), options_spread(asdict(description), SourceDescription.SPREAD))


def read_source_description(folder: str) -> SourceDescription:
    return SourceDescription(**options_gathered(SourceDescription, read_json(os.path.join(folder, DESCRIPTION))))


def options_spread(document: dict[str, Any], spread_too: Iterable[str] = ()) -> dict[str, Any]:
    """A work file's fields with the kind's ``options`` (and the mappings named in ``spread_too``) as
    keys of their own, where each stands: the bytes earlier versions wrote when each was a field
    (Snakemake skips a job only while its small inputs keep their checksum, so a work folder they left
    runs nothing again)."""
    mappings = {"options", *spread_too}
    spread: dict[str, Any] = {}
    for key, value in document.items():
        if key in mappings:
            spread.update(value)
        else:
            spread[key] = value
    return spread


def options_gathered(kind: type, document: dict[str, Any]) -> dict[str, Any]:
    """``options_spread`` undone: the keys of each mapping ``kind.SPREAD`` names go back into it, and
    the keys that ``kind``'s fields do not name are the kind's options."""
    names = {spec.name for spec in fields(kind)}
    spread: dict[str, tuple[str, ...]] = getattr(kind, "SPREAD", {})
    owned = {key for keys in spread.values() for key in keys}
    gathered = {field: {key: document[key] for key in keys if key in document} for field, keys in spread.items()}
    options = {key: value for key, value in document.items() if key not in names and key not in owned}
    return {**{key: value for key, value in document.items() if key in names}, **gathered, "options": options}


@dataclass(frozen=True, slots=True)  # slots: an index holds ~1.4M of these (Kaggle's zip)
class Member:
    """A file inside an archive: its path there and where its bytes are; or a folder (no location).
    A sample of source files that store labels (webdataset, parquet) also carries its integer label."""

    path: str  # "/"-separated, as stored (for a tar of tars: "<inner tar name without .tar>/member")
    location: Location  # None: a folder (never a FileLocation: those are files of a folder source)
    label: int | None = None  # webdataset, parquet: the label the source file stores

    @property
    def is_folder(self) -> bool:
        return self.location is None


#: One encoder for every member and manifest row: ``json.dumps`` with an argument makes a new one per
#: call (1.28M rows each for ImageNet); the same text.
ROW_JSON = json.JSONEncoder(ensure_ascii=False)


def write_members(folder: str, members: Iterable[Member], strip: str = "") -> int:
    """members.jsonl: one ``[path without strip, location(, label)]`` row per file member; returns
    the count."""
    count = 0
    with atomic_file(os.path.join(folder, MEMBERS), encoding="utf-8", errors="surrogateescape") as stream:
        for member in members:
            row: list[Any] = [member.path[len(strip) :], location_to_json(member.location)]
            if member.label is not None:
                row.append(member.label)
            stream.write(ROW_JSON.encode(row))
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
    with open(os.path.join(folder, MEMBERS), encoding="utf-8", errors="surrogateescape") as stream:
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
    options: dict[str, Any] = field(default_factory=dict)  # as SourceDescription.options: its reader's
    #: A label file's: "multi" where each image has a list of class indices (Sample.annotations)
    label_kind: str | None = None
    #: A label file's: each per-image field's type (reader/format_targets.py FIELD_TYPES), in order
    field_types: dict[str, str] | None = None

    def as_data(self) -> dict[str, Any]:
        """The header line's object: the options spread, the label file's entries only where used,
        so that a manifest without them keeps the bytes earlier versions wrote (Snakemake judges it
        by checksum)."""
        data = options_spread(asdict(self))
        for key in ("label_kind", "field_types"):
            if data[key] is None:
                del data[key]
        return data

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> ManifestHeader:
        """The header of a manifest's first line (``as_data``'s object)."""
        return cls(**options_gathered(cls, data))


#: What a label file says of an image beyond its one class index (a label file's labelling, sources/labelling.py):
#: ``labels``, its list of class indices (a multi-label split), and ``fields``, name: value.
Annotations = dict[str, Any]


@dataclass
class Sample:
    index: int
    label: int  # its class index; a multi-label split's: -1 (its list is in annotations)
    path: str  # the ImageFolder relative path "class/file.ext", "/"-separated
    location: Location = None  # where the bytes are when not at root/path
    annotations: Annotations | None = None  # a label file's label list and fields


def write_manifest(path: str, header: ManifestHeader, samples: Iterable[Sample]) -> None:
    """First line: the header object; then ``[index, label, path(, location(, annotations))]`` per
    image (JSON, so any character a file name can hold survives)."""
    with atomic_file(path, encoding="utf-8", errors="surrogateescape") as stream:
        json.dump(header.as_data(), stream, ensure_ascii=False)
        stream.write("\n")
        for sample in samples:
            row: list[Any] = [sample.index, sample.label, sample.path]
            if sample.location is not None or sample.annotations is not None:
                row.append(location_to_json(sample.location))
            if sample.annotations is not None:
                row.append(sample.annotations)
            stream.write(ROW_JSON.encode(row))
            stream.write("\n")


def read_manifest_header(path: str) -> ManifestHeader:
    with open(path, encoding="utf-8", errors="surrogateescape") as stream:
        return ManifestHeader.from_data(json.loads(stream.readline()))


def shard_name(number: int) -> str:
    """Shard ``number``'s name in file names and in the ``{shard}`` wildcard."""
    return f"{number:05d}"


def shard_range(count: int, shards: int, shard: int) -> tuple[int, int]:
    """The contiguous slice of the manifest's ``count`` images that shard ``shard`` of ``shards`` encodes."""
    return count * shard // shards, count * (shard + 1) // shards


def read_manifest(path: str, start: int = 0, stop: int | None = None) -> Iterator[Sample]:
    """Samples ``start <= index < stop``, parsing only those lines (shards read a slice)."""
    with open(path, encoding="utf-8", errors="surrogateescape") as stream:
        stream.readline()
        for line_number, line in enumerate(stream):
            if line_number < start:
                continue
            if stop is not None and line_number >= stop:
                break
            index, label, sample_path, *rest = json.loads(line)
            location = location_from_json(rest[0]) if rest else None
            yield Sample(index, label, sample_path, location, rest[1] if len(rest) > 1 else None)


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
    # its fields as they are: asdict would deep-copy every column element by element, for nothing
    write_json_atomic(path, {name.name: getattr(report, name.name) for name in fields(report)})


def read_shard_report(path: str) -> ShardReport:
    return ShardReport(**read_json(path))


def column(reports: Iterable[ShardReport], name: str) -> list[Any]:
    """One per-record column of every shard, in index order."""
    return [value for report in reports for value in getattr(report, name)]


def kept_indices(reports: list[ShardReport]) -> list[int]:
    """The manifest index of each stored record, by final record index: images are renumbered
    0..n-1 around the skipped ones, in manifest order. merge and write_meta both use this."""
    return column(reports, "index")
