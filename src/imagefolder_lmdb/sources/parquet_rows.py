"""The Parquet source's files read back (rules encode_shard and merge: image bytes by location), and
what rule extract shares with it: opening a file with an error naming it, the image column's kinds,
row groups' first rows. sources/parquet.py is the source kind (extract, count_check); this module
is its ``ParquetReader``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from imagefolder_lmdb.sources.base import SampleReader
from imagefolder_lmdb.work.source_locations import Location, ParquetLocation, location_as

if TYPE_CHECKING:  # pyarrow is imported where it is used: parsing the Snakefile must not load it
    import pyarrow as pa
    import pyarrow.parquet as pq

#: The reader keeps this many bytes of decoded row groups (at least the one in use), shared by its threads.
CACHED_ROW_GROUP_BYTES = 256 << 20


class ParquetSourceError(ValueError):
    """A Parquet file is damaged, lacks the configured columns, or disagrees with the others."""


class ParquetReadError(RuntimeError):
    """A row group cannot be read back when an encode job reads it (not an image problem: no skipping)."""


def open_parquet(path: str) -> pq.ParquetFile:
    """The file, or an error naming it (a download cut short has no footer)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path)
    except (OSError, pa.ArrowException) as exc:
        raise ParquetSourceError(
            f"{path}: cut short or not a Parquet file ({exc}); download it again (or remove it from the source)."
        ) from exc


def first_field(values: pa.Array) -> pa.Array:
    """The first field of a struct column's values (``image.bytes`` or ``image.path``: ``columns.image``)."""
    return cast("pa.StructArray", values).flatten()[0]


def is_binary(kind: pa.DataType) -> bool:
    import pyarrow as pa

    return pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or pa.types.is_binary_view(kind)


def image_is_struct(kind: pa.DataType) -> bool:
    """Hugging Face's Image feature stored: ``struct<bytes: binary, path: string>``."""
    import pyarrow as pa

    return pa.types.is_struct(kind) and kind.get_field_index("bytes") >= 0 and is_binary(kind.field("bytes").type)


def row_group_starts(metadata: pq.FileMetaData) -> list[int]:
    """The file's row number of each row group's first row."""
    starts, row = [], 0
    for group in range(metadata.num_row_groups):
        starts.append(row)
        row += metadata.row_group(group).num_rows
    return starts


def describe_row(file: str, starts: list[int], location: ParquetLocation, path: str) -> str:
    row = starts[location.row_group] + location.row
    return f"{file}, row {row} (counted from 0; row group {location.row_group}), sample {path}"


@dataclass
class OpenedFile:
    """A file's footer, parsed once per reader."""

    metadata: pq.FileMetaData
    column: str  # what read_row_group reads: the image column, or its struct's bytes field
    starts: list[int]
    row_sizes: dict[int, int] = field(default_factory=dict)  # row group -> image bytes per row


@dataclass
class RowGroup:
    """One row group's image values, loaded by the first thread that needs them."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    values: pa.Array | None = None


class ParquetReader(SampleReader):
    """Reads image bytes by ParquetLocation, one row group's image column at a time. Thread-safe:
    threads that need the same row group wait for the one that loads it, and recently used row
    groups stay cached (up to CACHED_ROW_GROUP_BYTES)."""

    remedy = "Write the Parquet files named again without the rows named (or with them fixed)"

    def __init__(self, containers: list[str], image_column: str, cache_bytes: int = CACHED_ROW_GROUP_BYTES) -> None:
        self.containers = containers
        self.image_column = image_column
        self.cache_bytes = cache_bytes
        self._files: dict[int, OpenedFile] = {}
        self._groups: OrderedDict[tuple[int, int], RowGroup] = OrderedDict()
        self._lock = threading.Lock()

    def read(self, path: str, location: Location) -> bytes:
        row = location_as(ParquetLocation, path, location)
        value = self._row_group(row.parquet, row.row_group)[row.row].as_py()
        if value is None:
            raise ValueError("no image bytes in this row (null; a Hugging Face image stored by path only?)")
        return value

    def describe(self, path: str, location: Location) -> str:
        row = location_as(ParquetLocation, path, location)
        return describe_row(self.containers[row.parquet], self._file(row.parquet).starts, row, path)

    def source_size(self, path: str, location: Location) -> int:
        """The image column's size in this row's row group, per row (from the footer: a guess)."""
        row = location_as(ParquetLocation, path, location)
        opened = self._file(row.parquet)
        if row.row_group not in opened.row_sizes:
            group = opened.metadata.row_group(row.row_group)
            chunks = [group.column(i) for i in range(group.num_columns)]
            size = sum(c.total_uncompressed_size for c in chunks if c.path_in_schema == opened.column)
            opened.row_sizes[row.row_group] = size // max(1, group.num_rows)
        return opened.row_sizes[row.row_group]

    def _file(self, number: int) -> OpenedFile:
        with self._lock:
            if number not in self._files:
                try:
                    self._files[number] = opened_file(self.containers[number], self.image_column)
                except ParquetSourceError as exc:  # gone or damaged since extract: not a bad image to skip
                    raise ParquetReadError(f"{exc} Then run the same command again.") from exc
            return self._files[number]

    def _row_group(self, number: int, group: int) -> pa.Array:
        key = (number, group)
        with self._lock:
            entry = self._groups.setdefault(key, RowGroup())
            self._groups.move_to_end(key)
        with entry.lock:
            if entry.values is None:
                entry.values = self._load(number, group)
        self._evict(keep=key)
        return entry.values

    def _load(self, number: int, group: int) -> pa.Array:
        import pyarrow as pa
        import pyarrow.parquet as pq

        path, opened = self.containers[number], self._file(number)
        try:
            with pq.ParquetFile(path, metadata=opened.metadata) as parquet:  # the table owns its buffers
                table = parquet.read_row_group(group, columns=[opened.column])
        except (OSError, pa.ArrowException) as exc:
            raise ParquetReadError(
                f"{path}: row group {group} cannot be read ({exc}): the file is damaged, or changed since rule "
                "extract listed it. Download it again and run the same command again."
            ) from exc
        values = table.column(0).combine_chunks()
        return first_field(values) if opened.column != self.image_column else values

    def _evict(self, keep: tuple[int, int]) -> None:
        """Drop the least recently used row groups beyond the byte budget (a thread still reading
        one keeps its own reference)."""
        with self._lock:
            loaded = [(key, g.values.nbytes) for key, g in self._groups.items() if g.values is not None]
            total = sum(size for _, size in loaded)
            for key, size in loaded:
                if total <= self.cache_bytes:
                    break
                if key != keep:
                    del self._groups[key]
                    total -= size

    def close(self) -> None:
        with self._lock:
            self._groups.clear()
            self._files.clear()


def opened_file(path: str, image_column: str) -> OpenedFile:
    with open_parquet(path) as parquet:
        is_struct = image_is_struct(parquet.schema_arrow.field(image_column).type)
        metadata = parquet.metadata
    column = f"{image_column}.bytes" if is_struct else image_column
    return OpenedFile(metadata, column, row_group_starts(metadata))
