"""The records a change of a split adds (issue 58): the added or replaced images of a folder source,
encoded as the workflow encodes them (writing/reencode.py) into one split file of today's format,
which ``writing/revisions.new_revision`` then takes as a data file of the split's next revision.

A change is small beside its split, so this runs in the ``convert`` process, one image after the
other: no Snakemake start, no manifest, no merge (the cost a change must stay within; BENCHMARKS.md).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from imagefolder_lmdb.reader import Meta, record_key
from imagefolder_lmdb.writing import meta_document
from imagefolder_lmdb.writing.encoded_columns import EncodedColumns
from imagefolder_lmdb.writing.hold_points import hold_point
from imagefolder_lmdb.writing.lmdb_writer import atomic_lmdb
from imagefolder_lmdb.writing.record_locations import store_meta_and_locations
from imagefolder_lmdb.writing.reencode import UNUSABLE_IMAGE, EncodeSettings, encode_image

#: The writer meta/json's ``tool`` names: the workflow's, whose records these are.
TOOL = "imagefolder-lmdb-workflow"


class AddedImageError(ValueError):
    """An added image cannot be stored (unusable under ``on_error: fail``, or unreadable): one line."""


@dataclass
class AddedColumns(EncodedColumns):
    """Per-record meta of the added file, in its order: each record's image path too."""

    paths: list[str] = field(default_factory=list)


def read_image(path: str) -> bytes:
    """An added image's bytes; AddedImageError naming it where the file system cannot read it."""
    try:
        with open(path, "rb") as stream:
            return stream.read()
    except OSError as exc:
        raise AddedImageError(
            f"{path}: cannot be read ({exc.strerror or exc}); fix its permissions or remove it"
        ) from None


def write_added(
    output: str,
    root: str,
    samples: Sequence[tuple[str, int]],
    classes: list[str],
    settings: EncodeSettings,
    source: dict[str, Any],
) -> list[dict[str, Any]]:
    """Encode ``samples`` (path relative to ``root``, class index) into ``output``, which appears only
    once complete; returns the images set aside (``on_error: skip``)."""
    expected = sum(os.path.getsize(os.path.join(root, path)) for path, _ in samples)
    with atomic_lmdb(output, expected_bytes=2 * expected + (1 << 20)) as writer:
        columns = encode_all(writer.append, root, samples, settings)
        store_meta_and_locations(writer, added_meta(columns, classes, settings, source))
    return columns.skipped


def encode_all(append: Any, root: str, samples: Sequence[tuple[str, int]], settings: EncodeSettings) -> AddedColumns:
    """Each sample read, checked and stored as the workflow's encode_shard would."""
    columns = AddedColumns()
    for position, (path, label) in enumerate(samples):
        if position == len(samples) // 2:
            hold_point("change-encode")  # the added file half written
        where = os.path.join(root, path)
        data = read_image(where)
        try:
            encoded = encode_image(data, settings)
        except UNUSABLE_IMAGE as exc:
            if settings.on_error == "fail":
                raise AddedImageError(
                    f"{where}: the image is unusable ({type(exc).__name__}: {exc}); fix or remove it, "
                    "or give --on-error skip to leave such images out"
                ) from None
            columns.skipped.append({"path": path, "reason": f"{type(exc).__name__}: {exc}"})
            continue
        append(record_key(len(columns.labels)), encoded.value)
        columns.add_encoded(label, encoded, len(data))
        columns.paths.append(path)
    return columns


def added_meta(columns: AddedColumns, classes: list[str], settings: EncodeSettings, source: dict[str, Any]) -> Meta:
    """The meta of the added records (writing/meta_document.py's builder)."""
    return meta_document.build_meta(
        tool=TOOL,
        classes=classes,
        storage=columns.storage,
        settings={"encode": settings.recorded()},
        source={**source, "images": len(columns.paths) + len(columns.skipped), "classes": len(classes)},
        source_bytes=columns.source_bytes,
        stored_bytes=columns.stored_bytes,
        skipped=columns.skipped,
        labels=columns.labels,
        sizes=np.array(columns.sizes, dtype=np.uint32).reshape(len(columns.sizes), 2),
        crc32=columns.crc32,
        paths=columns.paths,
    )
