"""The records a change of a split adds (issue 58): the added or replaced images of a folder source,
encoded as the workflow encodes them (writing/reencode.py) into one split file of today's format,
which ``writing/revisions.new_revision`` then takes as a data file of the split's next revision.

A change is small beside its split, so this runs in the ``convert`` process: no Snakemake start, no
manifest, no merge (the cost a change must stay within; BENCHMARKS.md §21). From PARALLEL_FROM images
on, the images are checked and encoded by ``--cores`` threads (Pillow decodes and encodes without the
GIL: 2 threads encode 240 of the benchmark's JPEGs in 0.26 s against 0.51 s in one, where a process
pool takes ~0.3 s a process to start); the records are written in the listing's order either way, so
the added file holds the same bytes whatever the number of threads.
"""

from __future__ import annotations

import contextlib
import os
from collections import deque
from collections.abc import Generator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from imagefolder_lmdb.reader import Meta, record_key
from imagefolder_lmdb.writing import meta_document
from imagefolder_lmdb.writing.encoded_columns import EncodedColumns
from imagefolder_lmdb.writing.hold_points import hold_point
from imagefolder_lmdb.writing.lmdb_writer import atomic_lmdb
from imagefolder_lmdb.writing.record_locations import store_meta_and_locations
from imagefolder_lmdb.writing.reencode import UNUSABLE_IMAGE, Encoded, EncodeSettings, encode_image

#: The writer meta/json's ``tool`` names: the workflow's, whose records these are.
TOOL = "imagefolder-lmdb-workflow"
#: The fewest added images encoded by threads: below it, starting them costs about what they save
#: (measured with 2 threads: 16 JPEGs about even, 64 1.5x faster).
PARALLEL_FROM = 32
#: Images each thread may have encoded ahead of the writer: bounds the memory a large change holds.
AHEAD_PER_WORKER = 8


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
    workers: int = 1,
) -> list[dict[str, Any]]:
    """Encode ``samples`` (path relative to ``root``, class index) into ``output``, which appears only
    once complete, with up to ``workers`` threads; returns the images set aside (``on_error: skip``)."""
    expected = sum(os.path.getsize(os.path.join(root, path)) for path, _ in samples)
    with atomic_lmdb(output, expected_bytes=2 * expected + (1 << 20)) as writer:
        columns = encode_all(writer.append, root, samples, settings, workers)
        store_meta_and_locations(writer, added_meta(columns, classes, settings, source))
    return columns.skipped


@dataclass
class EncodedImage:
    """One added image read and checked: its stored form, or the reason it is unusable."""

    source_bytes: int
    encoded: Encoded | None
    unusable: Exception | None = None


def encode_one(where: str, settings: EncodeSettings) -> EncodedImage:
    """Read and encode one image as encode_shard would (AddedImageError where it cannot be read)."""
    data = read_image(where)
    try:
        return EncodedImage(len(data), encode_image(data, settings))
    except UNUSABLE_IMAGE as exc:
        return EncodedImage(len(data), None, exc)


def outcomes(wheres: Sequence[str], settings: EncodeSettings, workers: int) -> Generator[EncodedImage, None, None]:
    """Each image's outcome in the order of ``wheres``: in this thread for a small change, else by
    ``workers`` threads, at most AHEAD_PER_WORKER each ahead of the caller."""
    if workers < 2 or len(wheres) < PARALLEL_FROM:
        yield from (encode_one(where, settings) for where in wheres)
        return
    pool = ThreadPoolExecutor(workers, thread_name_prefix="change-encode")
    try:
        pending: deque[Future[EncodedImage]] = deque()
        for where in wheres:
            pending.append(pool.submit(encode_one, where, settings))
            if len(pending) >= workers * AHEAD_PER_WORKER:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:  # an error or Ctrl-C: the images not started are dropped, the running ones end
        pool.shutdown(wait=True, cancel_futures=True)


def encode_all(
    append: Any, root: str, samples: Sequence[tuple[str, int]], settings: EncodeSettings, workers: int = 1
) -> AddedColumns:
    """Each sample read, checked and stored as the workflow's encode_shard would, in the order of ``samples``."""
    columns = AddedColumns()
    wheres = [os.path.join(root, path) for path, _ in samples]
    with contextlib.closing(outcomes(wheres, settings, workers)) as results:  # an error ends its threads
        for position, ((path, label), outcome) in enumerate(zip(samples, results, strict=True)):
            if position == len(samples) // 2:
                hold_point("change-encode")  # the added file half written
            if outcome.encoded is None:
                columns.skipped.append(unusable(wheres[position], path, outcome.unusable, settings))
            else:
                append(record_key(len(columns.labels)), outcome.encoded.value)
                columns.add_encoded(label, outcome.encoded, outcome.source_bytes)
                columns.paths.append(path)
    return columns


def unusable(where: str, path: str, exc: Exception | None, settings: EncodeSettings) -> dict[str, Any]:
    """The entry of an image set aside (``on_error: skip``); AddedImageError naming it under ``fail``."""
    if settings.on_error == "fail":
        raise AddedImageError(
            f"{where}: the image is unusable ({type(exc).__name__}: {exc}); fix or remove it, "
            "or give --on-error skip to leave such images out"
        )
    return {"path": path, "reason": f"{type(exc).__name__}: {exc}"}


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
