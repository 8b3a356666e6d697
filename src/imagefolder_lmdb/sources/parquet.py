"""Source kind ``parquet``: Parquet files of image bytes and integer labels, read in place.

The Hugging Face hub's form (``imagenet-1k``'s ``data/train-*.parquet``): an ``image`` struct
column ``{bytes, path}``, an integer ``label`` column, and the class names in the schema's
``huggingface`` metadata (``{"info": {"features": {"label": {"_type": "ClassLabel", "names":
[...]}}}}``, as the ``datasets`` library writes it). A plain binary image column works too, and
both column names are config keys (``image_column``, ``label_column``).

Rule extract checks every file's footer and columns first (and, from the footer's statistics, that
a file's rows are not all without image bytes: paths only), then reads only the label column (and
the struct's ``path`` field), one row group at a time, into members.jsonl: a sample's location is
(file, row group, row). The image bytes are read by the encode jobs (shards), again one row group at a time
(sources/parquet_rows.py); nothing per image is ever written. Record order: the files in the order
the source names them (a glob sorted), the rows in file order.
"""

from __future__ import annotations

import json
import logging
import os
import posixpath
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tqdm import tqdm

from imagefolder_lmdb.classes.lists import ClassList
from imagefolder_lmdb.sources.base import Labels, Listing, Request, SampleReader, Source
from imagefolder_lmdb.sources.labelled import label_names, labelled_listing

# The files read back by location (encode_shard, merge): sources/parquet_rows.py.
from imagefolder_lmdb.sources.parquet_rows import (
    ParquetReader,
    ParquetSourceError,
    describe_row,
    first_field,
    image_is_struct,
    is_binary,
    open_parquet,
    row_group_starts,
)
from imagefolder_lmdb.work.files import (
    ManifestHeader,
    Member,
    SourceDescription,
    read_labelled_members,
    write_members,
)
from imagefolder_lmdb.work.source_locations import ParquetLocation, location_as

if TYPE_CHECKING:  # pyarrow is imported where it is used: parsing the Snakefile must not load it
    import pyarrow as pa
    import pyarrow.parquet as pq

log = logging.getLogger("imagefolder_lmdb.sources")

#: The label value Hugging Face's ClassLabel uses for "no label" (imagenet-1k's test split has only these).
NO_LABEL = -1


@dataclass(frozen=True)
class ParquetColumns:
    """The columns of image bytes and of integer labels (config keys image_column and label_column,
    the kind's ``options``)."""

    image: str = "image"
    label: str = "label"

    @classmethod
    def of(cls, options: Mapping[str, Any]) -> ParquetColumns:
        """The columns a request's options name (the schema's defaults where none is given)."""
        return cls(options.get("image_column", cls.image), options.get("label_column", cls.label))


@dataclass(frozen=True)
class ParquetFileInfo:
    """What rule extract learnt from a file's footer."""

    path: str
    rows: int
    row_groups: int
    has_path: bool  # the image column is the {bytes, path} struct and its path is text
    names: list[str] | None  # the ClassLabel names of the label column in the Hugging Face metadata
    null_images: int | None = None  # rows without image bytes, from the footer's statistics (None: none kept)


class ParquetSource(Source):
    """Parquet files of image bytes and labels (layout parquet), read in place."""

    kind = "parquet"
    file_set = True
    file_suffixes = (".parquet",)
    options = ("image_column", "label_column")
    reading_options = ("image_column",)

    @classmethod
    def recipe(cls, split: dict[str, Any]) -> dict[str, Any]:
        return {"columns": [split["image_column"], split["label_column"]]}

    @classmethod
    def expects(cls) -> str:
        return "rows of image bytes and a label"

    def prepare(self, request: Request, building: str, output: str) -> SourceDescription:
        files = [os.path.abspath(path) for path in request.files]
        columns = ParquetColumns.of(request.options)
        infos = [file_info(path, columns) for path in files]  # every footer before any label
        check_has_image_bytes(infos, columns)
        names = agreed_names(infos, columns.label)
        count = write_members(building, parquet_members(infos, columns, request.progress))
        log.info("listed %d rows of %d Parquet files; nothing extracted", count, len(files))
        return SourceDescription(
            self.kind,
            os.path.abspath(request.source),
            request.layout,
            containers=files,
            members=count,
            label_names=names,
            options={"image_column": columns.image},
        )

    def list(
        self, description: SourceDescription, source_dir: str, labels: Labels, progress: dict, wanted: ClassList | None
    ) -> Listing:
        own = None if labels.get("devkit") else class_folder_names(description.label_names, description.source)
        names = label_names(own, labels.get("devkit"), wanted, description.source)
        listing = labelled_listing(read_labelled_members(source_dir), names, wanted, RowNamer(description.containers))
        listing.root = description.source
        listing.containers = description.containers
        listing.options = description.options
        return listing

    def reader(self, header: ManifestHeader) -> SampleReader:
        return ParquetReader(header.containers, header.options.get("image_column") or ParquetColumns().image)


# --------------------------------------------------------------------------------------------------
# Rule extract: footers, columns, class names, labels.
# --------------------------------------------------------------------------------------------------


def file_info(path: str, columns: ParquetColumns) -> ParquetFileInfo:
    """Check a file's columns and read its class names, from the footer alone."""
    with open_parquet(path) as parquet:
        schema = parquet.schema_arrow
        check_columns(path, schema, columns)
        image = schema.field(columns.image).type
        is_struct = image_is_struct(image)
        return ParquetFileInfo(
            path,
            parquet.metadata.num_rows,
            parquet.metadata.num_row_groups,
            is_struct and image.get_field_index("path") >= 0 and is_text(image.field("path").type),
            class_label_names(path, schema.metadata, columns.label),
            null_count(parquet.metadata, f"{columns.image}.bytes" if is_struct else columns.image),
        )


def null_count(metadata: pq.FileMetaData, column: str) -> int | None:
    """Rows whose ``column`` (a leaf: a struct's field counts its null structs too) is null, summed
    from each row group's statistics; None where a row group has none (pyarrow, ``datasets`` and
    Spark write them)."""
    total = 0
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        chunks = [row_group.column(i) for i in range(row_group.num_columns)]
        chunk = next((c for c in chunks if c.path_in_schema == column), None)
        statistics = chunk.statistics if chunk is not None and chunk.is_stats_set else None
        if statistics is None or statistics.null_count is None:  # None: the row group has no count
            return None
        total += statistics.null_count
    return total


def check_has_image_bytes(infos: list[ParquetFileInfo], columns: ParquetColumns) -> None:
    """Stop, naming each, at files whose every row lacks image bytes: an Image column built from file
    paths and written with a plain ``Dataset.to_parquet`` keeps the paths only. No row of such a file
    can be converted, so skipping bad images would leave nothing (files without statistics are
    left to the encode jobs, which name each row)."""
    empty = [info for info in infos if info.rows and info.null_images == info.rows]
    if not empty:
        return
    lines = "\n".join(f"  {info.path}: {paths_only_words(info, columns)}" for info in empty)
    raise ParquetSourceError(
        f"{len(empty)} of the {len(infos)} Parquet files hold no image bytes in any row, in column "
        f"{columns.image!r}:\n{lines}\nWrite them again with the image bytes embedded: with `datasets`, "
        "`ds = ds.with_format('arrow').map(datasets.table.embed_table_storage, batched=True)` before "
        "`ds.to_parquet(...)` (what `push_to_hub` does), or build the column from each file's bytes."
    )


def paths_only_words(info: ParquetFileInfo, columns: ParquetColumns) -> str:
    """What an all-null file holds instead of bytes: paths (the first one named), or nothing."""
    rows = f"all {info.rows} rows" if info.rows > 1 else "its one row"
    first = first_stored_path(info, columns) if info.has_path else None
    if first is None:
        return f"{rows} null"
    return f"{rows} hold a file path only (the first: {first!r}), not the image's bytes"


def first_stored_path(info: ParquetFileInfo, columns: ParquetColumns) -> str | None:
    with open_parquet(info.path) as parquet:
        paths = parquet.read_row_group(0, columns=[f"{columns.image}.path"]).column(columns.image)
    values = first_field(paths.combine_chunks()).to_pylist() if len(paths) else []
    return next((value for value in values if value), None)


def check_columns(path: str, schema: pa.Schema, columns: ParquetColumns) -> None:
    """The configured columns exist and have usable types; the error says what the file holds."""
    import pyarrow as pa

    missing = [name for name in (columns.image, columns.label) if schema.get_field_index(name) < 0]
    if missing:
        raise ParquetSourceError(
            f"{path}: no column {', '.join(map(repr, missing))}; its columns are {', '.join(schema.names)}. "
            "Set splits.<name>.image_column and label_column in the config to the columns of the image "
            "bytes and of the integer labels."
        )
    image, label = schema.field(columns.image).type, schema.field(columns.label).type
    if not (is_binary(image) or image_is_struct(image)):
        raise ParquetSourceError(
            f"{path}: column {columns.image!r} is {image}, not image bytes (binary, or a struct with a "
            "binary 'bytes' field). Set splits.<name>.image_column to the column of the image bytes."
        )
    if not pa.types.is_integer(label):
        raise ParquetSourceError(
            f"{path}: column {columns.label!r} is {label}, not integer labels. Set splits.<name>.label_column "
            "to the column of the integer labels."
        )


def is_text(kind: pa.DataType) -> bool:
    import pyarrow as pa

    return pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind)


def class_label_names(path: str, metadata: dict[bytes, bytes] | None, label_column: str) -> list[str] | None:
    """The names of the label column's ClassLabel in the ``huggingface`` schema metadata, if any."""
    raw = (metadata or {}).get(b"huggingface")
    if raw is None:
        return None
    try:
        features = json.loads(raw).get("info", {}).get("features", {})
    except (ValueError, AttributeError) as exc:
        raise ParquetSourceError(
            f"{path}: its Hugging Face metadata is not valid JSON ({exc}); download it again."
        ) from exc
    feature = features.get(label_column) if isinstance(features, dict) else None
    if not isinstance(feature, dict) or feature.get("_type") != "ClassLabel" or not feature.get("names"):
        return None
    return [str(name) for name in feature["names"]]


def agreed_names(infos: list[ParquetFileInfo], label_column: str) -> list[str] | None:
    """The class names every file stores; an error naming two files that disagree."""
    first = infos[0]
    for info in infos[1:]:
        if info.names != first.names:
            raise ParquetSourceError(
                f"{info.path}: the class names of column {label_column!r} ({names_in_words(info.names)}) differ "
                f"from those of {first.path} ({names_in_words(first.names)}): files of different datasets? "
                "Give the files of one dataset."
            )
    return first.names


def names_in_words(names: list[str] | None) -> str:
    if names is None:
        return "none stored"
    return f"{len(names)} names: {', '.join(names[:3])}{', ...' if len(names) > 3 else ''}"


def parquet_members(
    infos: list[ParquetFileInfo], columns: ParquetColumns, progress: dict[str, Any]
) -> Iterator[Member]:
    """Every row of every file as a member (path, location, label), in record order."""
    with tqdm(total=sum(info.rows for info in infos), desc="labels", unit="img", **progress) as bar:
        for number, info in enumerate(infos):
            log.info("reading the labels of %s (%d rows)", info.path, info.rows)
            with open_parquet(info.path) as parquet:
                first_row = 0
                for group in range(info.row_groups):
                    labels, paths = group_labels(parquet, info, group, columns)
                    for row, (label, stored_path) in enumerate(zip(labels, paths, strict=True)):
                        check_labelled(info.path, first_row + row, label)
                        path = member_path(info.path, first_row + row, stored_path)
                        yield Member(path, ParquetLocation(number, group, row), label)
                    first_row += len(labels)
                    bar.update(len(labels))


def group_labels(
    parquet: pq.ParquetFile, info: ParquetFileInfo, group: int, columns: ParquetColumns
) -> tuple[list[int | None], list[str | None]]:
    """One row group's labels and stored image paths, read without the image bytes."""
    import pyarrow as pa

    wanted = [columns.label] + ([f"{columns.image}.path"] if info.has_path else [])
    try:
        table = parquet.read_row_group(group, columns=wanted)
    except (OSError, pa.ArrowException) as exc:
        raise ParquetSourceError(f"{info.path}: row group {group} cannot be read ({exc}); download it again.") from exc
    labels = table.column(columns.label).to_pylist()
    if not info.has_path:
        return labels, [None] * len(labels)
    paths = first_field(table.column(columns.image).combine_chunks()).to_pylist()
    return labels, paths


def check_labelled(path: str, row: int, label: int | None) -> None:
    if label is None or label == NO_LABEL:
        what = "null" if label is None else f"{NO_LABEL}, the Hugging Face mark for none"
        raise ParquetSourceError(
            f"{path}, row {row} (counted from 0): a sample without a label ({what}). Only labelled samples "
            "convert: give the row its label and write the file again, or leave the file out of the source "
            "(imagenet-1k's test split has no labels)."
        )


def member_path(file: str, row: int, stored: str | None) -> str:
    """The sample's file name: the struct's path (its last part), else ``<file stem>-<row>``. A NUL byte
    is refused here, when the source is indexed: no file name holds one, and meta/paths ends each name with it."""
    if stored and "\0" in stored:
        raise ParquetSourceError(
            f"{file}, row {row} (counted from 0): its image path {stored!r} holds a NUL byte, which no file name "
            "can hold. Fix that row's path (or write the rows without the path field), then run the same command."
        )
    name = posixpath.basename(stored.replace("\\", "/")) if stored else ""
    if name and name not in (".", ".."):
        return name
    return f"{os.path.basename(file).removesuffix('.parquet')}-{row}"


# --------------------------------------------------------------------------------------------------
# Rule count_check: class names as folders, samples named in messages.
# --------------------------------------------------------------------------------------------------


def class_folder_names(names: list[str] | None, source: str) -> list[str] | None:
    """The stored names as ImageFolder class names: a name given to several labels (imagenet-1k
    calls two classes "crane") gets its label added to each, ``crane (134)``, since a class is a
    folder; a name no folder can have is an error."""
    if names is None:
        return None
    for label, name in enumerate(names):
        if not name or "/" in name or "\\" in name or name in (".", ".."):
            raise ParquetSourceError(
                f"{source}: class name {name!r} (label {label}) of the files' Hugging Face metadata cannot be a "
                "folder name. Set devkit: (ImageNet's WNIDs) for this split instead."
            )
    twice = {name for name, count in Counter(names).items() if count > 1}
    if twice:
        log.warning("class names given to several labels, told apart by label: %s", ", ".join(sorted(twice)))
    return [f"{name} ({label})" if name in twice else name for label, name in enumerate(names)]


@dataclass
class RowNamer:
    """``where(member)`` for messages: the file and the row number in it (from the footer, read
    only when a message needs it)."""

    containers: list[str]
    starts: dict[int, list[int]] = field(default_factory=dict)

    def __call__(self, member: Member) -> str:
        location = location_as(ParquetLocation, member.path, member.location)
        return describe_row(self.containers[location.parquet], self.row_starts(location.parquet), location, member.path)

    def row_starts(self, number: int) -> list[int]:
        if number not in self.starts:
            with open_parquet(self.containers[number]) as parquet:
                self.starts[number] = row_group_starts(parquet.metadata)
        return self.starts[number]
