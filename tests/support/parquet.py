"""Parquet files as the Hugging Face hub holds them (``imagenet-1k``'s ``data/*.parquet``): an
``image`` struct column ``{bytes, path}``, an int64 ``label`` column and the ``huggingface`` schema
metadata of a ``ClassLabel`` feature, written by pyarrow in several row groups; also the plain
form (a binary column, other names, no metadata). And a plain reading of such files, row by row,
to compare a conversion with."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .images import photo_like

#: The Arrow type the ``datasets`` library gives its Image feature.
HF_IMAGE = pa.struct([("bytes", pa.binary()), ("path", pa.string())])


@dataclass(frozen=True)
class Row:
    image: bytes | None
    path: str | None  # the struct's path field (Hugging Face keeps the file name)
    label: int | None


def hf_metadata(names: list[str], image_column: str = "image", label_column: str = "label") -> str:
    """The ``huggingface`` schema metadata ``datasets`` writes: ``Features.to_dict()`` under info."""
    features = {
        image_column: {"decode": True, "id": None, "_type": "Image"},
        label_column: {"names": names, "id": None, "_type": "ClassLabel"},
    }
    return json.dumps({"info": {"features": features}})


def write_hf_parquet(path: Path, rows: list[Row], names: list[str] | None, row_group_size: int) -> Path:
    """A file in the hub's form; ``names`` None leaves out the metadata."""
    images = pa.array(
        [None if r.image is None and r.path is None else {"bytes": r.image, "path": r.path} for r in rows]
    )
    table = pa.table({"image": images.cast(HF_IMAGE), "label": pa.array([r.label for r in rows], pa.int64())})
    if names is not None:
        table = table.replace_schema_metadata({"huggingface": hf_metadata(names)})
    pq.write_table(table, path, row_group_size=row_group_size)
    return path


def write_plain_parquet(path: Path, rows: list[Row], image_column: str, label_column: str, row_group_size: int) -> Path:
    """A binary image column and an int32 label column under other names, no metadata."""
    table = pa.table(
        {
            "id": pa.array(range(len(rows)), pa.int32()),
            image_column: pa.array([r.image for r in rows], pa.binary()),
            label_column: pa.array([r.label for r in rows], pa.int32()),
        }
    )
    pq.write_table(table, path, row_group_size=row_group_size)
    return path


def plain_reading(files: list[Path], image_column: str = "image", label_column: str = "label") -> list[Row]:
    """Every row of the files, in order, as pyarrow reads them (the struct's bytes and path, or
    the binary column's bytes)."""
    rows = []
    for file in files:
        for row in pq.read_table(file, columns=[image_column, label_column]).to_pylist():
            image = row[image_column]
            if isinstance(image, dict):
                rows.append(Row(image["bytes"], image["path"], row[label_column]))
            else:
                rows.append(Row(image, None, row[label_column]))
    return rows


def stored_names(file: Path, label_column: str = "label") -> list[str]:
    """The ClassLabel names in a file's Hugging Face metadata, in stored order."""
    metadata = json.loads(pq.read_schema(file).metadata[b"huggingface"])
    return metadata["info"]["features"][label_column]["names"]


def smooth_image_bytes(seed: int, image_format: str, mode: str = "RGB", size: tuple[int, int] = (96, 72)) -> bytes:
    """A photo-like image (smooth, so a re-encoded copy can be compared by pixels) as ``image_format``
    in ``mode``: a PNG, or a CMYK JPEG as ImageNet train holds 22 of."""
    image = photo_like(np.random.default_rng(seed), size[0], size[1], grain=2.0).convert(mode)
    buffer = io.BytesIO()
    image.save(buffer, format=image_format, quality=90)
    return buffer.getvalue()


def cut_short(path: Path, keep: float = 0.6) -> Path:
    """The file as a download stopped part way leaves it."""
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])
    return path
