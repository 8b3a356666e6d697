"""A converted dataset given several labels per image and fields, until the converter reads label files:
its meta rebuilt by the one builder (writing/meta_document.py ``build_meta``) from the meta the
workflow wrote, then stored by write_meta's own path (``encode_meta``, ``store_meta``: the meta, then
the record locations), so that a label file later only has to hand the same columns to write_meta."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from imagefolder_lmdb.reader import META_KEYS, Meta, decode_meta, encode_meta
from imagefolder_lmdb.reader.format_targets import FieldColumn
from imagefolder_lmdb.steps.write_meta import TOOL, meta_room, store_meta
from imagefolder_lmdb.writing import meta_document
from imagefolder_lmdb.writing.lmdb_open import open_lmdb_readonly
from imagefolder_lmdb.writing.lmdb_writer import LMDBWriter

#: meta/json's entries the builder makes itself, or that the format's encoder and write_meta's store add.
BUILT_ENTRIES = frozenset(
    {"format", "version", "length", "classes", "class_to_idx", "settings", "source", "stats", "storage_reasons"}
    | {"tool", "created", "checksums", "locations", "label_kind", "fields"}
)


def stored_meta(path: Path) -> Meta:
    """The meta the file at ``path`` holds, as the reader decodes it."""
    env = open_lmdb_readonly(str(path))
    try:
        with env.begin() as txn:
            return decode_meta(txn, str(path))
    finally:
        env.close()


def rebuilt_meta(
    meta: Meta,
    label_lists: Sequence[Sequence[int]] | None = None,
    fields: Mapping[str, FieldColumn] | None = None,
) -> Meta:
    """``meta``'s records rebuilt by the builder write_meta calls, with these label lists (else its
    labels) and fields; its other entries (class_list, class_words, made_from) handed on as they were."""
    document = meta.document
    extra = {key: value for key, value in document.items() if key not in BUILT_ENTRIES}
    return meta_document.build_meta(
        tool=TOOL,
        classes=meta.classes,
        storage=meta.storage.tolist(),
        settings=document["settings"],
        source=document["source"],
        source_bytes=meta.source_bytes.tolist(),
        stored_bytes=[document["stats"]["stored_bytes"]],  # the builder records only their sum
        skipped=document["stats"]["skipped"],
        sizes=meta.sizes,
        crc32=meta.crc32.tolist(),
        paths=meta.paths,
        labels=meta.labels.tolist() if label_lists is None else None,
        label_lists=label_lists,
        fields=fields,
        **extra,
    )


def store(path: Path, meta: Meta) -> None:
    """``meta`` stored into the dataset at ``path`` as write_meta stores it (then its record locations)."""
    values = meta_document_values(meta)
    room = meta_room(values, meta.length)
    writer = LMDBWriter(str(path), expected_bytes=os.path.getsize(path) + room, adds_bytes=room)
    store_meta(writer, str(path), values)


def meta_document_values(meta: Meta) -> dict[bytes, bytes]:
    """The meta keys write_meta puts, without the placeholder record locations (add_locations's)."""
    values = encode_meta(meta)
    del values[META_KEYS["locations"]]
    return values


def relabelled_copy(
    dataset: Path,
    into: Path,
    label_lists: Sequence[Sequence[int]] | None = None,
    fields: Mapping[str, FieldColumn] | None = None,
) -> Path:
    """A copy of ``dataset`` in ``into`` whose meta holds these label lists and fields."""
    into.mkdir(parents=True, exist_ok=True)
    copy = into / dataset.name
    shutil.copyfile(dataset, copy)
    store(copy, rebuilt_meta(stored_meta(copy), label_lists, fields))
    return copy
