"""Reading a finished dataset back: every key and value as LMDB holds it, records and meta without
what depends on the run (so that two conversions compare), and record locations (meta/locations)
checked against LMDB's own answer; and datasets of given values written directly, as write_meta
writes them, in milliseconds."""

from __future__ import annotations

import json
import os
import shutil
import zlib
from collections.abc import Sequence
from pathlib import Path

import lmdb
import numpy as np
import torch
from PIL import Image

from imagefolder_lmdb.reader import (
    LOCATION_DTYPE,
    META_KEYS,
    STORAGE_CODES,
    LMDBReader,
    Meta,
    close_all_envs,
    encode_meta,
    record_key,
)
from imagefolder_lmdb.writing.lmdb_writer import LMDBWriter
from imagefolder_lmdb.writing.record_locations import add_locations

#: Why a cold-read test skips where the page cache keeps a file's pages: the one skip the floors
#: test admits in its run (tests/workflow/test_floors.py).
PAGES_STAY_CACHED = "this filesystem keeps its pages cached (tmpfs?) or cannot probe"


def copy_alone(lmdb_file: Path, destination: Path) -> Path:
    """``lmdb_file`` copied alone to ``destination``, in a new folder: a new path and inode, no run
    around it (as onto a node's local disk)."""
    destination.parent.mkdir()
    shutil.copy(lmdb_file, destination)
    return destination


def every_key_and_value(path: Path) -> dict[bytes, bytes]:
    close_all_envs()  # a dataset opened earlier in this process would block a second open
    with lmdb.open(str(path), subdir=False, readonly=True, lock=False) as env, env.begin() as txn:
        return {bytes(key): bytes(value) for key, value in txn.cursor()}


def without_later_additions(document: dict) -> dict:
    """The meta JSON less what later issues added to it, each checked by its own tests: the
    checksums of the meta arrays and of the record locations, the storage code of images too large
    for JPEG (issue 21), the unset ``encode.short_side`` (issue 23)."""
    document.pop("checksums", None)
    document.pop("made_from", None)  # what the dataset was made from (issue 41)
    reasons = document.get("storage_reasons")
    if isinstance(reasons, dict):
        reasons.pop("9", None)  # reencoded:png-too-large-for-jpeg (issue 21)
    if isinstance(document.get("locations"), dict):
        document["locations"].pop("crc32", None)
    if document["settings"]["encode"].get("short_side", "absent") is None:
        del document["settings"]["encode"]["short_side"]
    return document


def records_and_meta(path: Path) -> tuple[dict[bytes, bytes], dict]:
    """Every (key, value) of a dataset, and its meta JSON without the creation time and the words
    that depend on where the source lay and how the config was written (the source's path, the
    folder on disk its paths are under, the folder read inside it, the class list's origin, the
    record of what it was made from)."""
    items = every_key_and_value(path)
    document = json.loads(items.pop(META_KEYS["json"]))
    document.pop("created")
    return items, without_where_from(document)


def without_where_from(document: dict) -> dict:
    """``document`` without the words that depend on where the source lay and how the config was written."""
    document = json.loads(json.dumps(document))  # a copy: the caller's stays whole
    document["source"].pop("path")
    document["source"].pop("root", None)  # ds.root: tests that mean it check it by itself
    document["source"].pop("inside", None)  # the folder inside that path (splits.<name>.root), if one
    document["class_list"].pop("origin")
    document.pop("made_from", None)  # the source's paths and times, as recorded (issue 41)
    return document


def assert_same_dataset(a: Path, b: Path) -> None:
    items_a, meta_a = records_and_meta(a)
    items_b, meta_b = records_and_meta(b)
    assert meta_a == meta_b
    assert items_a.keys() == items_b.keys()
    assert all(items_a[k] == items_b[k] for k in items_a), "a record or meta array differs"


def pil_as_tensor(image: Image.Image) -> torch.Tensor:
    """A PIL image as the (channels, height, width) uint8 tensor decode="tensor" gives."""
    return torch.from_numpy(np.array(image)).permute(2, 0, 1)


# --------------------------------------------------------------------------------------------------
# Record locations.
# --------------------------------------------------------------------------------------------------


def stored_records(path: Path) -> tuple[dict[int, bytes], np.ndarray | None, dict]:
    """Every record as LMDB returns it, the raw locations array and the JSON document."""
    close_all_envs()  # py-lmdb opens a path once per process; datasets reopen theirs when next read
    with lmdb.open(str(path), subdir=False, readonly=True, lock=False) as env, env.begin() as txn:
        document = json.loads(txn.get(META_KEYS["json"]))
        raw = txn.get(META_KEYS["locations"])
        records = {i: bytes(txn.get(record_key(i))) for i in range(document["length"])}
    locations = None if raw is None else np.frombuffer(raw, dtype=LOCATION_DTYPE)
    return records, locations, document


def assert_offsets_give_lmdb_bytes(path: Path) -> int:
    """Every located record's bytes at its offset equal LMDB's; returns how many are located."""
    records, locations, document = stored_records(path)
    assert locations is not None and len(locations) == len(records)
    located = 0
    with open(path, "rb") as stream:
        for index, value in records.items():
            offset, length = int(locations[index]["offset"]), int(locations[index]["length"])
            if offset:
                assert os.pread(stream.fileno(), length, offset) == value, index
                located += 1
    assert document["locations"]["located"] == located
    return located


def assert_reader_reads_every_record(path: Path, by_offset: bool) -> LMDBReader:
    records, _, _ = stored_records(path)
    ds = LMDBReader(path, decode="bytes")
    assert ds.reads_by_offset is by_offset
    assert [ds.get_bytes(i) for i in range(len(ds))] == list(records.values())
    assert [data for data, _ in ds.__getitems__(list(range(len(ds))))] == list(records.values())
    return ds


# --------------------------------------------------------------------------------------------------
# Datasets written directly.
# --------------------------------------------------------------------------------------------------


def random_values(sizes: Sequence[int], seed: int = 0) -> list[bytes]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, size, dtype=np.uint8).tobytes() for size in sizes]


def meta_for(values: Sequence[bytes], storage: Sequence[int] | None = None) -> Meta:
    n = len(values)
    return Meta(
        document={"format": "imagefolder-lmdb", "version": 1, "length": n, "classes": ["a", "b"]},
        labels=np.arange(n) % 2,
        sizes=np.ones((n, 2)),
        crc32=np.array([zlib.crc32(v) for v in values], dtype=np.uint32),
        storage=np.full(n, STORAGE_CODES["stored-as-is"]) if storage is None else np.asarray(storage),
        source_bytes=np.array([len(v) for v in values]),
        paths=[f"{'ab'[i % 2]}/{i}.bin" for i in range(n)],
    )


def write_dataset(
    path: Path, values: Sequence[bytes], storage: Sequence[int] | None = None, locate: bool = True
) -> None:
    """A dataset as write_meta writes it; ``locate=False``: as the previous version wrote it."""
    writer = LMDBWriter(str(path), expected_bytes=sum(map(len, values)) + (1 << 20))
    for index, value in enumerate(values):
        writer.append(record_key(index), value)
    meta_values = encode_meta(meta_for(values, storage))
    del meta_values[META_KEYS["locations"]]
    writer.put_many(meta_values)
    if locate:
        add_locations(writer.env, str(path))
    writer.close()


def assert_same_samples(a: Path, b: Path, *, same_source_path: bool = True) -> None:
    """Two splits (a single file, or a pointer over data files) read the same, sample for sample: classes,
    samples, targets, fields, each record's bytes and the meta document (its checksums, record
    locations and creation time aside: a pointer's revision has none of the first two; with
    ``same_source_path=False``, also where the source lay: two copies of one tree)."""
    close_all_envs()
    first, second = LMDBReader(str(a), decode="bytes"), LMDBReader(str(b), decode="bytes")
    assert first.classes == second.classes and first.class_to_idx == second.class_to_idx
    assert first.samples == second.samples
    assert list(first.targets) == list(second.targets)
    assert first.field_types == second.field_types
    assert [first.fields(i) for i in range(len(first))] == [second.fields(i) for i in range(len(second))]
    assert all(first.get_bytes(i) == second.get_bytes(i) for i in range(len(first))), "a record differs"
    volatile = ("checksums", "locations", "created")

    def kept(document: dict) -> dict:
        document = document if same_source_path else without_where_from(document)
        return {key: value for key, value in document.items() if key not in volatile}

    assert kept(first.meta_document) == kept(second.meta_document)
    close_all_envs()
