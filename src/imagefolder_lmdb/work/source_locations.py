"""Where a listed image's bytes lie in its source: one type per way of reading them.

    location          the bytes are                                     read by (sources/)
    None              the file ``root/path`` of the sample itself        folder.py FileReader
    FileLocation      a file under the root at another path (val images) folder.py FileReader
    TarLocation       a byte range of an uncompressed tar               indexed_archive.py TarReader
    ZipLocation       a zip member                                      indexed_archive.py ZipReader
    ParquetLocation   one row of a Parquet file's image column          parquet.py ParquetReader

The member index and the manifest store them as JSON objects (work/files.py). A reader takes the
location it reads with ``location_as``, which names the sample when a work file holds another.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, TypeVar


@dataclass(frozen=True, slots=True)
class FileLocation:
    """A file under the manifest's root, at a path other than the sample's own (val images)."""

    file: str


@dataclass(frozen=True, slots=True)
class TarLocation:
    """A byte range of an uncompressed tar (also a member of a class tar inside ILSVRC's train tar)."""

    tar: int  # index into the manifest's containers
    offset: int
    size: int  # the member's size, as ``tar -x`` writes it
    #: A sparse member (``tar --sparse``, GNU or pax): its data runs as (offset in the member, length);
    #: the runs are stored one after another from ``offset``, the rest of the member is zeros.
    sparse: tuple[tuple[int, int], ...] | None = None

    def stored_size(self) -> int:
        """The bytes the archive holds for the member from ``offset``."""
        return self.size if self.sparse is None else sum(length for _, length in self.sparse)


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
    if len(value) == 3 and "tar" in value:  # the common row (ImageNet's 1.28M): no search
        return TarLocation(value["tar"], value["offset"], value["size"])
    kind = next(cls for cls in LOCATION_TYPES if fields(cls)[0].name in value)
    if value.get("sparse") is not None:
        value = {**value, "sparse": tuple((int(at), int(length)) for at, length in value["sparse"])}
    return kind(**value)


def location_to_json(location: Location) -> dict[str, Any] | None:
    """The JSON object of ``location``; a tar member that is not sparse is written as it always was."""
    if location is None:
        return None
    if type(location) is TarLocation and location.sparse is None:  # 1.28M of them for ImageNet: no asdict's deep copy
        return {"tar": location.tar, "offset": location.offset, "size": location.size}
    value = asdict(location)
    if value.get("sparse", ()) is None:
        del value["sparse"]
    return value


L = TypeVar("L")


class LocationKindError(RuntimeError):
    """A work file locates a sample in a way the source's reader does not read (not an image problem:
    no skipping)."""


def location_as(kind: type[L], path: str, location: Location) -> L:
    """``location`` as the ``kind`` of location a reader reads. Another kind means the split's work
    folder holds files of two different sources (one copied over the other, or a damaged file)."""
    if not isinstance(location, kind):
        raise LocationKindError(
            f"{path}: the split's work folder locates this sample as {location!r}, where its source is read by "
            f"{kind.__name__}: its files come from two different sources. Delete the split's folder under "
            "`work` and run the same command again."
        )
    return location
