"""Crafted metas (issue 57): a real dataset file as write_meta writes it (20 JPEG records of 3 classes,
its full meta, its record locations), written once, then copied with one meta value damaged: every
meta key of docs/FORMAT.md, and meta/json's every documented entry, of the wrong type, size or value,
missing, not UTF-8, not a JSON object, nested too deep, holding huge numbers.

Each ``Shape`` names its damage, what the reader's refusal (and ``info``'s, ``verify``'s) says, and
whether the checksums meta/json records are made to fit the damage (so that the check behind them
is the one that has to find it). ``READ_BY_ALL`` are damage the reader does not read, or survives by
reading through LMDB: ``verify`` names them, the reader and ``info`` read the file right.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lmdb
import numpy as np

from imagefolder_lmdb.reader import META_KEYS, checksum, encode_meta, record_key
from imagefolder_lmdb.reader.format import field_checksum
from imagefolder_lmdb.reader.format_targets import FieldColumn
from imagefolder_lmdb.steps.write_meta import TOOL, meta_room, store_meta
from imagefolder_lmdb.writing.lmdb_writer import LMDBWriter
from imagefolder_lmdb.writing.meta_document import build_meta

from .images import jpeg_bytes

CLASSES = ["ant", "bee", "cat"]
LENGTH = 20
#: Each record's class: 7, 7 and 6 images.
LABELS = [index % len(CLASSES) for index in range(LENGTH)]
ENCODE = {
    "reencode": "auto",
    "quality": 95,
    "max_side": None,
    "short_side": None,
    "check": "decode",
    "on_error": "fail",
}


def write_base(path: Path, targets: bool = False) -> None:
    """The dataset the shapes damage; ``targets``: a version-4 file, several labels per image and a field."""
    values = [jpeg_bytes(index, size=(16, 12)) for index in range(LENGTH)]
    labelled: dict[str, Any] = {"labels": LABELS}
    if targets:
        lists = [[label, (label + 1) % len(CLASSES)] if index % 4 else [] for index, label in enumerate(LABELS)]
        labelled = {
            "label_lists": lists,
            "fields": {"score": FieldColumn("float", [index / 2 for index in range(LENGTH)])},
        }
    meta = build_meta(
        tool=TOOL,
        classes=CLASSES,
        storage=[0] * LENGTH,
        settings={"encode": ENCODE},
        source={
            "path": "/data/train",
            "root": "/data/train",
            "images": LENGTH,
            "classes": len(CLASSES),
            "ignored_files": 0,
        },
        source_bytes=[len(value) for value in values],
        stored_bytes=[len(value) for value in values],
        skipped=[],
        sizes=np.array([(16, 12)] * LENGTH, dtype=np.uint32),
        crc32=[checksum(value) for value in values],
        paths=[f"{CLASSES[label]}/{index:02d}.jpg" for index, label in enumerate(LABELS)],
        class_list={
            "origin": "from this split's source",
            "images_outside": 0,
            "classes_outside": 0,
            "classes_unread": 0,
        },
        **labelled,
    )
    stored = encode_meta(meta)
    del stored[META_KEYS["locations"]]  # add_locations's, after the meta (as write_meta stores it)
    writer = LMDBWriter(str(path), expected_bytes=sum(map(len, values)) + meta_room(stored, LENGTH))
    for index, value in enumerate(values):
        writer.append(record_key(index), value)
    store_meta(writer, str(path), stored)


@dataclass
class Stored:
    """A copy's meta while a shape changes it: meta/json's document (None: its raw bytes are the shape's)
    and every meta key's value (None: the key is deleted)."""

    document: dict[str, Any] | None
    values: dict[bytes, bytes | None]

    def array(self, name: str, dtype: str) -> np.ndarray:
        return np.frombuffer(self.values[META_KEYS[name]] or b"", dtype=dtype).copy()

    def put(self, name: str, value: bytes | None, resum: bool = True) -> None:
        """Store ``value`` under meta/``name``; ``resum``: its checksum in meta/json made to fit it."""
        self.values[META_KEYS[name]] = value
        if resum and value is not None and self.document is not None:
            self.document["checksums"][name] = checksum(value)

    def raw_json(self, value: bytes | None) -> None:
        self.document, self.values[META_KEYS["json"]] = None, value


Change = Callable[[Stored], None]


@dataclass(frozen=True)
class Shape:
    """One damage: ``change`` makes it, ``says`` is in every refusal of it; ``targets``: of the version-4 base."""

    name: str
    change: Change = field(repr=False)
    says: str
    targets: bool = False


def entry(path: str, value: Any, resum_classes: bool = False) -> Change:
    """meta/json's entry at dotted ``path`` set to ``value`` (``...`` deletes it)."""

    def change(stored: Stored) -> None:
        assert stored.document is not None
        *parents, last = path.split(".")
        holder = stored.document
        for name in parents:
            holder = holder[name]
        if value is ...:
            del holder[last]
        else:
            holder[last] = value
        if resum_classes:
            stored.document["checksums"]["classes"] = field_checksum(stored.document["classes"])

    return change


def raw(value: bytes) -> Change:
    return lambda stored: stored.raw_json(value)


def array(name: str, dtype: str, edit: Callable[[np.ndarray], np.ndarray], resum: bool = True) -> Change:
    """meta/``name`` read as ``dtype``, edited, stored back (its checksum made to fit unless ``resum`` is False)."""
    return lambda stored: stored.put(name, edit(stored.array(name, dtype)).tobytes(), resum)


def stored_bytes(name: str, edit: Callable[[bytes], bytes | None], resum: bool = True) -> Change:
    return lambda stored: stored.put(name, edit(stored.values[META_KEYS[name]] or b""), resum)


def setting(index: int, value: int) -> Callable[[np.ndarray], np.ndarray]:
    def edit(values: np.ndarray) -> np.ndarray:
        values[index] = value
        return values

    return edit


NEST_BOMB = b"[" * 200_000 + b"]" * 200_000
DEEP_LIST: Any = []
for _ in range(100):
    DEEP_LIST = [DEEP_LIST]
DAMAGED = "the file is damaged"
VERSION = "version"

#: Damage the reader refuses: so do ``info`` and ``verify``.
REFUSED = [
    # meta/json's bytes
    Shape("json-not-utf8", raw(b'{"format": "imagefolder-lmdb", "x": "\xff\xfe"}'), "meta/json is not UTF-8"),
    Shape("json-cut", raw(b'{"format": "imagefolder-lmdb", "ver'), "meta/json is not valid JSON"),
    Shape("json-empty", raw(b""), "meta/json is not valid JSON"),
    Shape("json-list", raw(b'["imagefolder-lmdb", 1]'), "meta/json is a JSON list"),
    Shape("json-string", raw(b'"imagefolder-lmdb"'), "meta/json is a JSON str"),
    Shape("json-number", raw(b"4"), "meta/json is a JSON int"),
    Shape("json-null", raw(b"null"), "meta/json is a JSON NoneType"),
    Shape("json-nesting-bomb", raw(NEST_BOMB), "meta/json nests deeper than"),
    Shape("json-bomb-in-object", raw(b'{"format": "imagefolder-lmdb", "x": ' + NEST_BOMB + b"}"), "nests deeper"),
    Shape("json-deep-entry", entry("tool", {"name": DEEP_LIST}), "meta/json nests deeper than"),
    Shape(
        "json-huge-int", raw(b'{"format": "imagefolder-lmdb", "version": 1, "length": ' + b"9" * 5000 + b"}"), "JSON"
    ),
    Shape("json-missing", lambda stored: stored.raw_json(None), "holds meta arrays but no meta/json"),
    # format and version
    Shape("format-missing", entry("format", ...), "format is None, expected 'imagefolder-lmdb'"),
    Shape("format-other", entry("format", "folder2lmdb"), "format is 'folder2lmdb'"),
    Shape("format-number", entry("format", 5), "format is 5"),
    Shape("version-true", entry("version", True), "meta/json's version is True, not a format version"),
    Shape("version-false", entry("version", False), "version is False"),
    Shape("version-string", entry("version", "4"), "version is '4'"),
    Shape("version-float", entry("version", 4.0), "version is 4.0"),
    Shape("version-float-1", entry("version", 1.0), "version is 1.0"),
    Shape("version-negative", entry("version", -1), "version is -1"),
    Shape("version-zero", entry("version", 0), "version is 0"),
    Shape("version-null", entry("version", None), "version is None"),
    Shape("version-missing", entry("version", ...), "version is None"),
    Shape("version-list", entry("version", [4]), "version is [4]"),
    Shape("version-999", entry("version", 999), "version 999, but this reader knows"),
    Shape("version-8", entry("version", 8), "version 8, but this reader knows"),  # 7: WebP codes (issue 62)
    Shape("version-5-not-a-pointer", entry("version", 5), "version 5, a split of revisions, but is no pointer's"),
    Shape("version-huge", entry("version", 2**70), f"version {2**70}, but"),
    # length and classes
    Shape("length-missing", entry("length", ...), "no valid record count (length None)"),
    Shape("length-negative", entry("length", -1), "(length -1)"),
    Shape("length-string", entry("length", "20"), "(length '20')"),
    Shape("length-float", entry("length", 20.0), "(length 20.0)"),
    Shape("length-true", entry("length", True), "(length True)"),
    Shape("length-huge", entry("length", 10**30), "no valid record count"),
    Shape("length-infinite", entry("length", float("inf")), "(length inf)"),
    Shape("length-one-short", entry("length", 19), "meta/labels has 20 entries, expected 19"),
    Shape("length-one-over", entry("length", 21), "meta/labels has 20 entries, expected 21"),
    Shape("classes-missing", entry("classes", ...), "no valid list of classes"),
    Shape("classes-string", entry("classes", "ant bee cat"), "no valid list of classes"),
    Shape("classes-numbers", entry("classes", [0, 1, 2]), "no valid list of classes"),
    Shape("classes-renamed", entry("classes", ["ant", "bee", "cow"]), "classes do not match their checksum"),
    Shape("classes-two", entry("classes", ["ant", "bee"], resum_classes=True), "labels outside 0..1 (its 2 classes)"),
    Shape("classes-none", entry("classes", [], resum_classes=True), "labels outside 0..-1 (its 0 classes)"),
    # meta/json's other entries, each of another type
    Shape("class-to-idx-list", entry("class_to_idx", CLASSES), "class_to_idx is ['ant'"),
    Shape("class-to-idx-text", entry("class_to_idx", {"ant": "0"}), "class_to_idx.ant is '0', not a whole number"),
    Shape("class-words-number", entry("class_words", 5), "class_words is 5, not a list"),
    Shape("settings-number", entry("settings", 5), "meta/json's settings is 5, not an object"),
    Shape("encode-list", entry("settings.encode", []), "settings.encode is [], not an object"),
    Shape("encode-nested", entry("settings.encode.quality", [95]), "settings.encode.quality is [95], not a string"),
    Shape("short-side-text", entry("settings.encode.short_side", "224"), "short_side is '224', not a whole number"),
    Shape("short-side-zero", entry("settings.encode.short_side", 0), "short_side is 0"),
    Shape("max-side-true", entry("settings.encode.max_side", True), "max_side is True"),
    Shape("source-text", entry("source", "/data/train"), "meta/json's source is '/data/train', not an object"),
    Shape("source-path-number", entry("source.path", 5), "source.path is 5, not a string"),
    Shape("source-root-list", entry("source.root", ["/data"]), "source.root is ['/data'], not a string or null"),
    Shape("source-images-negative", entry("source.images", -20), "source.images is -20, not a whole number"),
    Shape("source-images-text", entry("source.images", "20"), "source.images is '20'"),
    Shape("class-list-number", entry("class_list", 5), "class_list is 5"),
    Shape("class-list-origin", entry("class_list.origin", None), "class_list.origin is None"),
    Shape("stats-list", entry("stats", []), "meta/json's stats is [], not an object"),
    Shape("stats-bytes-text", entry("stats.source_bytes", "1 MB"), "stats.source_bytes is '1 MB'"),
    Shape("stats-bytes-float", entry("stats.stored_bytes", 1e400), "stats.stored_bytes is inf"),
    Shape("stats-storage-list", entry("stats.storage", [20]), "stats.storage is [20], not an object"),
    Shape("stats-storage-text", entry("stats.storage", {"passthrough": "20"}), "stats.storage.passthrough is '20'"),
    Shape("stats-skipped-number", entry("stats.skipped", 0), "stats.skipped is 0, not a list"),
    Shape("stats-skipped-item", entry("stats.skipped", [5]), "stats.skipped[0] is 5, not an object"),
    Shape("stats-skipped-path", entry("stats.skipped", [{"path": 5}]), "stats.skipped[0].path is 5"),
    Shape("storage-reasons-list", entry("storage_reasons", ["passthrough"]), "storage_reasons is ['passthrough']"),
    Shape("tool-number", entry("tool", 5), "meta/json's tool is 5, not an object"),
    Shape("tool-name-list", entry("tool.name", ["x"]), "tool.name is ['x']"),
    Shape("created-number", entry("created", 20261206), "created is 20261206, not a string"),
    Shape("checksums-number", entry("checksums", 5), "checksums is 5, not an object"),
    Shape("checksums-negative", entry("checksums.labels", -1), "checksums.labels is -1, not a CRC-32"),
    Shape("checksums-huge", entry("checksums.labels", 2**70), f"checksums.labels is {2**70}, not a CRC-32"),
    Shape("checksums-text", entry("checksums.labels", "0"), "checksums.labels is '0'"),
    Shape("locations-list", entry("locations", [3]), "meta/json's locations is [3], not an object"),
    Shape("locations-txnid-text", entry("locations.txnid", "3"), "locations.txnid is '3'"),
    Shape("locations-crc-negative", entry("locations.crc32", -1), "locations.crc32 is -1"),
    Shape("made-from-list", entry("made_from", []), "made_from is [], not an object"),
    # the arrays
    Shape("labels-checksum", array("labels", "<i4", setting(7, 0), resum=False), "meta/labels does not match"),
    Shape("labels-negative", array("labels", "<i4", setting(3, -1)), "labels outside 0..2 (its 3 classes)"),
    Shape("labels-out-of-range", array("labels", "<i4", setting(3, 3)), "labels outside 0..2 (its 3 classes)"),
    Shape("labels-huge", array("labels", "<i4", setting(3, 2**31 - 1)), "labels outside 0..2"),
    Shape(
        "labels-odd-size",
        stored_bytes("labels", lambda value: value + b"\0"),
        "meta/labels holds 81 bytes, not a whole number of 4-byte",
    ),
    Shape("labels-odd-unsummed", stored_bytes("labels", lambda value: value[:-1], resum=False), "does not match"),
    Shape("labels-short", stored_bytes("labels", lambda value: value[:-4]), "meta/labels has 19 entries, expected 20"),
    Shape("labels-empty", stored_bytes("labels", lambda value: b""), "meta/labels has 0 entries, expected 20"),
    Shape("labels-missing", stored_bytes("labels", lambda value: None), "meta key meta/labels is missing"),
    Shape(
        "sizes-odd-size",
        stored_bytes("sizes", lambda value: value[:-4]),
        "meta/sizes holds 39 numbers, not (width, height) pairs",
    ),
    Shape("sizes-bytes-odd", stored_bytes("sizes", lambda value: value + b"\0\0"), "meta/sizes holds 162 bytes"),
    Shape("sizes-short", stored_bytes("sizes", lambda value: value[:-8]), "meta/sizes has 19 entries"),
    Shape("sizes-missing", stored_bytes("sizes", lambda value: None), "meta key meta/sizes is missing"),
    Shape("crc32-odd-size", stored_bytes("crc32", lambda value: value + b"\0"), "meta/crc32 holds 81 bytes"),
    Shape("crc32-over", stored_bytes("crc32", lambda value: value + value[:4]), "meta/crc32 has 21 entries"),
    Shape("crc32-missing", stored_bytes("crc32", lambda value: None), "meta key meta/crc32 is missing"),
    Shape("storage-short", stored_bytes("storage", lambda value: value[:-1]), "meta/storage has 19 entries"),
    Shape("storage-missing", stored_bytes("storage", lambda value: None), "meta key meta/storage is missing"),
    Shape(
        "source-bytes-odd", stored_bytes("source_bytes", lambda value: value[:-3]), "meta/source_bytes holds 157 bytes"
    ),
    Shape("source-bytes-missing", stored_bytes("source_bytes", lambda value: None), "meta/source_bytes is missing"),
    Shape("paths-not-utf8", stored_bytes("paths", lambda value: b"\xff" + value), "meta/paths is not UTF-8 (byte 0)"),
    Shape("paths-short", stored_bytes("paths", lambda value: value.split(b"\0", 1)[1]), "meta/paths has 19 entries"),
    Shape("paths-no-end", stored_bytes("paths", lambda value: value[:-1]), "meta/paths has 19 entries"),
    Shape("paths-checksum", stored_bytes("paths", lambda value: value.upper(), resum=False), "meta/paths does not"),
    Shape("paths-missing", stored_bytes("paths", lambda value: None), "meta key meta/paths is missing"),
    # version 4: label kind, fields, label lists
    Shape("label-kind-number", entry("label_kind", 5), "label_kind is 5, not one of", targets=True),
    Shape("label-kind-other", entry("label_kind", "several"), "label_kind is 'several'", targets=True),
    Shape("label-kind-true", entry("label_kind", True), "label_kind is True", targets=True),
    Shape("fields-number", entry("fields", 5), "meta/json's fields is 5, not a list", targets=True),
    Shape("fields-item", entry("fields", [5]), "fields[0] is 5, not an object", targets=True),
    Shape("fields-name", entry("fields", [{"name": 5, "type": "float"}]), "fields[0].name is 5", targets=True),
    Shape("fields-type", entry("fields", [{"name": "score", "type": "complex"}]), "type 'complex'", targets=True),
    Shape(
        "fields-other-name", entry("fields", [{"name": "x", "type": "float"}]), "meta/json lists ['x']", targets=True
    ),
    Shape("version-3-of-v4", entry("version", 3), "labels outside 0..2", targets=True),
    Shape("label-lists-odd", stored_bytes("label_lists", lambda value: value[:-1]), "no 20 offsets", targets=True),
    Shape("label-lists-short", stored_bytes("label_lists", lambda value: value[:40]), "no 20 offsets", targets=True),
    Shape(
        "label-lists-back",
        array("label_lists", "<u4", setting(5, 0)),
        "offsets do not run from 0 up to",
        targets=True,
    ),
    Shape("label-lists-label", array("label_lists", "<i4", setting(-1, 3)), "labels outside 0..2", targets=True),
    Shape("label-lists-negative", array("label_lists", "<i4", setting(-1, -5)), "the first -5", targets=True),
    Shape("label-lists-missing", stored_bytes("label_lists", lambda v: None), "label_lists is missing", targets=True),
    Shape("labels-of-multi", array("labels", "<i4", setting(0, 1)), "names a class (it holds -1", targets=True),
    Shape("fields-not-json", stored_bytes("fields", lambda value: value[:-1]), "Expecting", targets=True),
    Shape("fields-not-utf8", stored_bytes("fields", lambda value: b"\xff" + value), "can't decode", targets=True),
    Shape("fields-bomb", stored_bytes("fields", lambda value: NEST_BOMB), "meta/fields nests deeper", targets=True),
    Shape("fields-list", stored_bytes("fields", lambda value: b"[1]"), "not a JSON object of one list", targets=True),
    Shape(
        "fields-value-type",
        stored_bytes("fields", lambda value: value.replace(b"[0.0,", b'["0",')),
        "field 'score' is float, but image 0's value is '0'",
        targets=True,
    ),
    Shape(
        "fields-count",
        stored_bytes("fields", lambda value: value.replace(b"[0.0,", b"[")),
        "field 'score' has 19 values",
        targets=True,
    ),
    Shape("fields-missing", stored_bytes("fields", lambda value: None), "meta/fields is missing", targets=True),
]

#: Damage the reader does not read (or reads around): ``verify`` names it; the reader and ``info`` read
#: the file right (20 images, 7, 7 and 6 of the classes).
READ_BY_ALL = [
    Shape("class-to-idx-wrong", entry("class_to_idx", {"ant": 2, "bee": 1, "cat": 0}), "class_to_idx in the meta"),
    Shape("class-words-short", entry("class_words", ["ant"]), "class_words in the meta is not one string per class"),
    Shape("stats-storage-count", entry("stats.storage", {"passthrough": 19}), "the storage counts add up to 19"),
    Shape("source-images-wrong", entry("source.images", 99), "but the source had 99 images"),
    Shape("stats-bytes-wrong", entry("stats.source_bytes", 5), "meta/source_bytes adds up to"),
    Shape("storage-code", array("storage", "u1", setting(4, 77)), "meta/storage holds codes outside"),
    Shape("storage-code-newer", array("storage", "u1", setting(4, 10)), "meta/storage holds codes of format version 7"),
    Shape("stats-missing", entry("stats", ...), "meta/json lacks stats"),
    Shape("created-missing", entry("created", ...), "meta/json lacks created"),
    Shape("locations-odd", stored_bytes("locations", lambda value: value[:-5], resum=False), "meta/locations"),
    Shape(
        "locations-garbage",
        stored_bytes("locations", lambda value: b"\x07" * len(value), resum=False),
        "meta/locations",
    ),
]


def craft(base: Path, folder: Path, shape: Shape) -> Path:
    """A copy of ``base`` in ``folder`` with ``shape``'s damage: its meta rewritten in one transaction,
    meta/json's record locations entry given that transaction's id (so that they still fit the file)."""
    path = folder / f"{shape.name}.lmdb"
    shutil.copyfile(base, path)
    with lmdb.open(str(path), subdir=False, lock=False, map_size=1 << 27) as env, env.begin(write=True) as txn:
        values = {key: txn.get(key) for key in META_KEYS.values()}
        document = json.loads(values[META_KEYS["json"]] or b"{}")
        document["locations"]["txnid"] = txn.id()
        stored = Stored(document, {key: value for key, value in values.items() if value is not None})
        shape.change(stored)
        if stored.document is not None:
            stored.values[META_KEYS["json"]] = json.dumps(stored.document, sort_keys=True, indent=1).encode()
        for key, value in stored.values.items():
            if value is None:
                txn.delete(key)
            else:
                txn.put(key, value)
    return path
