# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the imagefolder-lmdb authors
#
# Permission is hereby granted, free of charge, to any person obtaining a copy
# of this software and associated documentation files (the "Software"), to deal
# in the Software without restriction, including without limitation the rights
# to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
# copies of the Software, and to permit persons to whom the Software is
# furnished to do so, subject to the following conditions:
#
# The above copyright notice and this permission notice shall be included in all
# copies or substantial portions of the Software.
#
# THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
# IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
# FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
# AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
# LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
# OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
# SOFTWARE.
"""Read an ``imagefolder-lmdb`` v1 file as a drop-in for ``torchvision.datasets.ImageFolder``.

This one file is the whole reader and the single owner of the on-disk format (docs/FORMAT.md): the
writer scripts of the workflow import their key and meta encoders from here, so writer and reader
cannot drift apart. It depends on lmdb, numpy, Pillow and torch only (decode="tensor" also on
torchcodec); copy it next to your training code and ``from dataset import LMDBDataset`` (the
licence notice above travels with it), or install the repository with pip and ``from
imagefolder_lmdb import LMDBDataset``: the package ships this very file (pyproject.toml).

The format involves no pickle: meta is JSON plus little-endian numeric arrays, so opening a dataset
never runs code from the file. Only the clearly marked legacy section below unpickles, for LMDBs made
by the widely copied folder2lmdb recipe, and only when asked to with ``allow_pickle=True``.

What lives where, in file order:

1. The format: record keys, meta keys and arrays, storage codes, ``Meta`` and its encoders and
   decoder (``encode_meta``, ``decode_meta``), ``FormatError``.
2. Opening a file: ``check_lmdb_file`` (the file holds every page its LMDB header names, checked
   with plain reads before LMDB maps it), ``PageGuard`` (the pages on the way to each key checked
   before LMDB follows them), ``open_env_readonly`` (read-only, lock-free settings), reader slots
   of ``lock=True`` files (``ReadersFullError``, ``_begin_read``).
3. The per-process table: one environment and one descriptor per file and process
   (``shared_env``, ``shared_fd``), closed before every fork (``close_all_envs``).
4. Decoding stored bytes: ``pil_decode``, ``tensor_decode``, ``encoded_tensor_decode`` (TorchCodec,
   or Pillow where TorchCodec would apply an EXIF orientation: ``_may_be_turned``).
5. Record sources, the interface: what a dataset asks of the place its records come from
   (``_Records``: ``read`` a batch, ``get_bytes``), and ``_open_records``, which reads what a file
   says about itself and chooses its source once, when the dataset opens.
6. v1 records through LMDB (``_LmdbRecords``): one read transaction per batch.
7. v1 records by offset (``_LocatedRecords``): one ``os.pread`` per record at the offsets of
   meta/locations, page-cache probes and fadvise hints for cold batches, the checks made when a
   file opens (``locations_problem``: transaction, checksum, layout, spot checks against
   meta/crc32); records not located go to the LMDB source. Memory for batches:
   ``keep_freed_memory_for_reuse``.
8. LEGACY folder2lmdb pickles (``_LegacyRecords``): the restricted unpickler, ``legacy_keys``,
   ``legacy_record``. Reached only with ``allow_pickle=True`` (and by scripts/convert_legacy.py).
9. The dataset: ``_Index`` (ImageFolder's attributes, what the meta knows without decoding,
   which record source was chosen), ``LMDBReader`` on it (reads, which go to its record source;
   transforms; pickling) and ``LMDBDataset``, the same on torch's ``Dataset``.
"""

from __future__ import annotations

import bisect
import ctypes
import functools
import io
import itertools
import json
import operator
import os
import pickle
import re
import struct
import threading
import time
import warnings
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias, TypeVar

import lmdb
import numpy as np
from PIL import Image

if TYPE_CHECKING:
    import torch

# torch is imported only where it is used: the workflow's writer scripts import this module for the
# format alone, once per shard, and importing torch would cost each of them ~2 s. LMDBDataset, a
# torch Dataset, is therefore built on first access (see __getattr__ at the end of this file).

__all__ = [
    "DECODE_CHOICES",
    "FORMAT_ID",
    "FORMAT_VERSION",
    "LOCATION_DTYPE",
    "META_KEYS",
    "NOT_JPEG_CODES",
    "READABLE_VERSIONS",
    "STORAGE_CODES",
    "STORAGE_REASONS",
    "FormatError",
    "LMDBDataset",
    "LocationsWarning",
    "Meta",
    "PageGuard",
    "ReadersFullError",
    "TruncatedFileError",
    "check_lmdb_file",
    "checksum",
    "close_all_envs",
    "decode_meta",
    "encode_document",
    "encode_meta",
    "encoded_tensor_decode",
    "format_version_of",
    "is_legacy_pickle_lmdb",
    "keep_freed_memory_for_reuse",
    "legacy_keys",
    "legacy_record",
    "open_env_readonly",
    "pil_decode",
    "record_key",
    "shared_env",
    "shared_fd",
    "size_setting",
    "source_root",
    "tensor_decode",
]

# --------------------------------------------------------------------------------------------------
# 1. The format: keys, meta layout, storage codes. docs/FORMAT.md is the prose version of this block.
# --------------------------------------------------------------------------------------------------

FORMAT_ID = "imagefolder-lmdb"
#: The newest version this reader knows. Version 2 is version 1 with one more storage code (9, a
#: PNG value); a writer writes the oldest version that holds its records (format_version_of), so a
#: file without such records stays readable by every version-1 reader, and one with them is refused
#: by those readers (they accept version 1 only) instead of being decoded as JPEG.
FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)

#: Record keys are the global index as ASCII decimal, zero-padded to this width. Every key starts
#: with a digit, every meta key with "meta/" (sorted after all digits), so the two cannot collide
#: and all records form one contiguous, ordered run at the start of the B-tree.
KEY_WIDTH = 8
MAX_RECORDS = 10**KEY_WIDTH

META_KEYS = {
    "json": b"meta/json",  # UTF-8 JSON document, see Meta
    "labels": b"meta/labels",  # int32 little-endian, one per record
    "sizes": b"meta/sizes",  # uint32 little-endian (width, height) pairs of the stored image
    "crc32": b"meta/crc32",  # uint32 little-endian CRC-32 (zlib) of each stored value
    "storage": b"meta/storage",  # uint8, how each record was stored (STORAGE_REASONS)
    "source_bytes": b"meta/source_bytes",  # uint64 little-endian size of each source file
    "paths": b"meta/paths",  # UTF-8 relative paths, each followed by one NUL byte
    "locations": b"meta/locations",  # LOCATION_DTYPE per record; optional (older files lack it)
}

#: Where each record's value lies in the file: byte offset and length, so that a reader can fetch
#: it with one pread instead of LMDB's page-by-page faults. Offset 0 means "not located, read
#: through LMDB". Valid only for the file whose LMDB transaction id meta/json records under
#: "locations" (a compacting copy rewrites every page); see LMDBReader and scripts/add_locations.py.
LOCATION_DTYPE = np.dtype([("offset", "<u8"), ("length", "<u4")])

#: How a record's bytes came to be. Code 0 is the only one whose value equals the source file.
STORAGE_REASONS: dict[int, str] = {
    0: "passthrough",  # a valid RGB JPEG, stored byte for byte
    1: "reencoded:not-jpeg",  # PNG (also when named .JPEG), GIF, BMP, WebP, TIFF, ...
    2: "reencoded:cmyk",  # CMYK / YCCK JPEG
    3: "reencoded:grayscale",  # single-channel JPEG
    4: "reencoded:mpo",  # multi-picture JPEG from cameras: only the first frame is kept
    5: "reencoded:other-mode",  # any other pixel mode of a JPEG
    6: "reencoded:resized",  # shrunk: larger than encode.short_side or encode.max_side
    7: "reencoded:always",  # encode.reencode = always
    8: "stored-as-is",  # encode.reencode = never and the file is not a plain RGB JPEG
    9: "reencoded:png-too-large-for-jpeg",  # a side above 65,500 (libjpeg's limit): a lossless RGB PNG
}
STORAGE_CODES = {reason: code for code, reason in STORAGE_REASONS.items()}
#: The format version that introduced each storage code newer than version 1.
_CODE_VERSIONS = {9: 2}
#: Codes whose value is no JPEG (any format Pillow reads): decoded with Pillow, never with
#: TorchCodec's decode_jpeg; every other code's value is a valid RGB JPEG.
NOT_JPEG_CODES = frozenset({STORAGE_CODES["stored-as-is"], STORAGE_CODES["reencoded:png-too-large-for-jpeg"]})


def format_version_of(storage: Iterable[int]) -> int:
    """The version a file with records of these storage codes is written as: the oldest that has them."""
    return max((_CODE_VERSIONS.get(int(code), 1) for code in set(storage)), default=1)


#: The meta arrays whose CRC-32 meta/json records under "checksums" (meta/locations has its own,
#: under "locations": the reader can do without it, so its damage only slows reads down).
CHECKSUMMED_ARRAYS = ("labels", "sizes", "crc32", "storage", "source_bytes", "paths")

#: The meta/json fields whose CRC-32 it records under "checksums" too: a byte flipped inside a
#: class name leaves the JSON valid, and would rename a class without a word.
CHECKSUMMED_FIELDS = ("classes", "class_words")

_ARRAY_DTYPES = {
    "labels": np.dtype("<i4"),
    "sizes": np.dtype("<u4"),
    "crc32": np.dtype("<u4"),
    "storage": np.dtype("u1"),
    "source_bytes": np.dtype("<u8"),
}


class FormatError(Exception):
    """The file is not a complete imagefolder-lmdb v1 dataset; the message says what to do."""


def record_key(index: int) -> bytes:
    """Key of record ``index``: fixed-width decimal, so byte order equals numeric order."""
    if not 0 <= index < MAX_RECORDS:
        raise IndexError(f"record index {index} outside 0..{MAX_RECORDS - 1}")
    return b"%08d" % index


def checksum(value: bytes | memoryview) -> int:
    """The checksum meta/crc32 records for a stored value: its CRC-32 (zlib's, unsigned)."""
    return zlib.crc32(value)


def field_checksum(value: Any) -> int:
    """The checksum meta/json records for one of its :data:`CHECKSUMMED_FIELDS`: the CRC-32 of the
    field's value as compact JSON (``json.dumps`` with its defaults)."""
    return checksum(json.dumps(value).encode("utf-8"))


@dataclass
class Meta:
    """Everything a dataset knows about itself besides the image bytes."""

    document: dict[str, Any]  # the JSON document: format, classes, settings, stats, ...
    labels: np.ndarray  # int32[n]
    sizes: np.ndarray  # uint32[n, 2] (width, height)
    crc32: np.ndarray  # uint32[n]
    storage: np.ndarray  # uint8[n]
    source_bytes: np.ndarray  # uint64[n]
    paths: list[str]  # n relative paths, "class/file.ext"
    locations: np.ndarray | None = None  # LOCATION_DTYPE[n], None where the file has none

    @property
    def length(self) -> int:
        return int(self.document["length"])

    @property
    def classes(self) -> list[str]:
        return list(self.document["classes"])


def encode_meta(meta: Meta) -> dict[bytes, bytes]:
    """The meta keys and values to store. Checks that every array has one entry per record."""
    n = meta.length
    arrays = {
        "labels": meta.labels,
        "sizes": meta.sizes,
        "crc32": meta.crc32,
        "storage": meta.storage,
        "source_bytes": meta.source_bytes,
    }
    values: dict[bytes, bytes] = {}
    for name, array in arrays.items():
        array = np.ascontiguousarray(array, dtype=_ARRAY_DTYPES[name])
        if array.shape[0] != n:
            raise ValueError(f"meta array {name!r} has {array.shape[0]} entries, expected {n}")
        values[META_KEYS[name]] = array.tobytes()
    if len(meta.paths) != n:
        raise ValueError(f"meta paths has {len(meta.paths)} entries, expected {n}")
    if any("\0" in p for p in meta.paths):
        raise ValueError("a relative path contains a NUL byte")
    values[META_KEYS["paths"]] = "".join(p + "\0" for p in meta.paths).encode("utf-8")
    # Without known locations the array says "none located": every file written from here on has
    # the key, and scripts/add_locations.py fills it in.
    locations = np.zeros(n, LOCATION_DTYPE) if meta.locations is None else meta.locations
    locations = np.ascontiguousarray(locations, dtype=LOCATION_DTYPE)
    if locations.shape != (n,):
        raise ValueError(f"meta array 'locations' has shape {locations.shape}, expected ({n},)")
    values[META_KEYS["locations"]] = locations.tobytes()
    # meta/json names each array's CRC-32, so a reader can tell a damaged label from a real one.
    checksums = {name: checksum(values[META_KEYS[name]]) for name in CHECKSUMMED_ARRAYS}
    checksums |= {name: field_checksum(meta.document[name]) for name in CHECKSUMMED_FIELDS if name in meta.document}
    values[META_KEYS["json"]] = encode_document({**meta.document, "checksums": checksums})
    return values


def encode_document(document: dict[str, Any]) -> bytes:
    """The stored form of the meta JSON document (sorted keys, so equal documents are equal bytes)."""
    return json.dumps(document, sort_keys=True, indent=1).encode("utf-8")


def _array_bytes(txn: _ReadTxn, name: str, checksums: dict[str, Any]) -> bytes:
    """A meta array's stored bytes, checked against its CRC-32 in meta/json (older files: none)."""
    raw = txn.get(META_KEYS[name])
    if raw is None:
        raise FormatError(f"meta key {META_KEYS[name].decode()} is missing")
    raw = bytes(raw)
    if name in checksums and checksums[name] != checksum(raw):
        raise FormatError(f"meta/{name} does not match its checksum")
    return raw


def _array(txn: _ReadTxn, name: str, checksums: dict[str, Any]) -> np.ndarray:
    return np.frombuffer(_array_bytes(txn, name, checksums), dtype=_ARRAY_DTYPES[name])


def _locations(txn: _ReadTxn) -> np.ndarray | None:
    raw = txn.get(META_KEYS["locations"])
    if raw is None:
        return None  # written before record locations existed: read through LMDB
    whole = len(raw) - len(raw) % LOCATION_DTYPE.itemsize  # a damaged size is caught by locations_problem
    return np.frombuffer(bytes(raw[:whole]), dtype=LOCATION_DTYPE)


def decode_meta(txn: _ReadTxn, where: str) -> Meta:
    """Read and check the meta of an open environment; ``where`` names the file in errors."""
    raw = txn.get(META_KEYS["json"])
    if raw is None:
        raise FormatError(_missing_meta_message(txn, where))
    document = _decode_document(raw, where)
    sums = document.get("checksums")
    sums = sums if isinstance(sums, dict) else {}  # files written before meta checksums: none
    _check_fields(document, sums, where)
    try:
        meta = Meta(
            document=document,
            labels=_array(txn, "labels", sums),
            sizes=_array(txn, "sizes", sums).reshape(-1, 2),
            crc32=_array(txn, "crc32", sums),
            storage=_array(txn, "storage", sums),
            source_bytes=_array(txn, "source_bytes", sums),
            paths=_array_bytes(txn, "paths", sums).decode("utf-8").split("\0")[:-1],
            locations=_locations(txn),
        )
    except (FormatError, ValueError) as exc:  # ValueError: an array of a broken size, paths not UTF-8
        raise FormatError(f"{where}: {exc}: the file is damaged. {_RECOPY}") from exc
    _check_meta(meta, where)
    return meta


def _check_fields(document: dict[str, Any], checksums: dict[str, Any], where: str) -> None:
    """meta/json's class names against their checksums (files written before them: none)."""
    for name in CHECKSUMMED_FIELDS:
        if name in checksums and checksums[name] != field_checksum(document.get(name)):
            raise FormatError(
                f"{where}: meta/json's {name} do not match their checksum: the file is damaged. {_RECOPY}"
            )


def _decode_document(raw: bytes | memoryview, where: str) -> dict[str, Any]:
    """The meta JSON document, checked for what every reader relies on."""
    try:
        document = json.loads(bytes(raw))
    except ValueError as exc:
        raise FormatError(f"{where}: meta/json is not valid JSON ({exc}); the file is damaged") from exc
    if not isinstance(document, dict) or document.get("format") != FORMAT_ID:
        found = document.get("format") if isinstance(document, dict) else document
        raise FormatError(f"{where}: format is {found!r}, expected {FORMAT_ID!r}")
    version = document.get("version")
    if version not in READABLE_VERSIONS:
        raise FormatError(
            f"{where}: {FORMAT_ID} version {version!r}, but this reader knows "
            f"{' and '.join(f'version {known}' for known in READABLE_VERSIONS)} only; use the scripts/dataset.py "
            "of the workflow that wrote it"
        )
    length, classes = document.get("length"), document.get("classes")
    if type(length) is not int or not 0 <= length <= MAX_RECORDS:
        raise FormatError(f"{where}: meta/json has no valid record count (length {length!r}); the file is damaged")
    if not isinstance(classes, list) or not all(isinstance(name, str) for name in classes):
        raise FormatError(f"{where}: meta/json has no valid list of classes; the file is damaged")
    return document


def _check_meta(meta: Meta, where: str) -> None:
    """Every array has one entry per record, and every label names a class (meta/locations, which
    the reader can do without, is checked by locations_problem)."""
    n = meta.length
    for name in ("labels", "sizes", "crc32", "storage", "source_bytes", "paths"):
        if len(getattr(meta, name)) != n:
            raise FormatError(f"{where}: meta {name} has {len(getattr(meta, name))} entries, expected {n}")
    if n and not 0 <= int(meta.labels.min()) <= int(meta.labels.max()) < len(meta.classes):
        raise FormatError(
            f"{where}: meta/labels holds labels outside 0..{len(meta.classes) - 1} (its {len(meta.classes)} "
            f"classes): the file is damaged. {_RECOPY}"
        )


def _missing_meta_message(txn: _ReadTxn, where: str) -> str:
    if is_legacy_pickle_lmdb(txn):
        return (
            f"{where} is a legacy LMDB of pickled (image, label) records (the folder2lmdb layout: keys "
            f"'0', '1', ..., '__len__', '__keys__'), not {FORMAT_ID}. Unpickling runs code stored in the "
            "file, so it is not read by default. Convert it once with "
            "`python scripts/convert_legacy.py IN.lmdb OUT.lmdb [--classes classes.txt]` (installed with pip: "
            "`imagefolder-lmdb convert-legacy IN.lmdb OUT.lmdb`), or, for a file "
            "you trust, read it as it is with LMDBDataset(path, allow_pickle=True) (a restricted "
            "unpickler that only builds bytes, numbers and lists)."
        )
    if any(txn.get(key) is not None for name, key in META_KEYS.items() if name != "json"):
        # write_meta stores every meta key in one transaction: some without meta/json is damage
        return f"{where} holds meta arrays but no meta/json: the file is damaged. {_RECOPY}"
    if txn.get(record_key(0)) is not None:
        return (
            f"{where} has image records but no {FORMAT_ID} meta: the conversion did not finish. "
            "Run the same snakemake command again to complete it."
        )
    return f"{where} is an LMDB, but not an {FORMAT_ID} dataset (no meta/json key)."


# --------------------------------------------------------------------------------------------------
# 2. Opening a file: read-only settings, and the reader slots of lock=True files.
# --------------------------------------------------------------------------------------------------


class ReadersFullError(RuntimeError):
    """Every reader slot of a ``lock=True`` environment is taken; the message says how to size it."""


class TruncatedFileError(FormatError):
    """The file holds fewer bytes than its LMDB header says it must: an incomplete copy."""


# LMDB maps the file and never compares its size with the meta page: the first touch of a page
# past the end raises SIGBUS. So the size is checked with plain reads before LMDB opens it.
# LMDB 0.9's meta page (mdb.c, 64-bit little-endian): page header (pgno u64, pad u16, flags u16,
# lower/upper u16), then magic u32, version u32, address u64, mapsize u64, two MDB_db records of
# 48 bytes (pad u32, flags u16, depth u16, four u64 counts, root u64; the free list's pad is the
# page size), last_pg u64, txnid u64.
_LMDB_META = struct.Struct("<Q2xH4xIIQQI44x4xHH32xQQQ")
#: An LMDB page header's size: a value on overflow pages starts this far into its first page.
_PAGE_HEADER = 16
_LMDB_MAGIC = 0xBEEFC0DE
_LMDB_DATA_VERSION = 1
_P_META = 0x08
_P_BRANCH, _P_LEAF = 0x01, 0x02
_F_BIGDATA, _F_DUPDATA = 0x01, 0x04  # a leaf node whose value lies on overflow pages; duplicates
_P_INVALID = 2**64 - 1  # the root of an empty database
_MAX_PAGE_SIZE = 1 << 16


_INCOMPLETE = "The copy is incomplete (an interrupted scp or rsync, a full disk or quota)."
#: The remedy for a damaged or incomplete file: a new copy, from a source checked first.
_RECOPY = (
    "Copy it again from the original, and check the original first with `python scripts/verify.py "
    "ORIGINAL --full` (installed with pip: `imagefolder-lmdb verify ORIGINAL --full`)."
)


@dataclass(frozen=True)
class LmdbHeader:
    """What an LMDB file's current meta page says about its size (see read_lmdb_header)."""

    page_size: int
    last_page: int  # mm_last_pg: the highest page number in use
    txnid: int
    root: int = _P_INVALID  # the main database's root page
    depth: int = 0  # the main database's B-tree depth

    @property
    def required_bytes(self) -> int:
        """The least size of a whole file: LMDB may touch any page up to ``last_page``."""
        return (self.last_page + 1) * self.page_size


def _meta_page(fd: int, offset: int, number: int, where: str) -> LmdbHeader | None:
    """Meta page ``number`` at ``offset``, as mdb_env_read_header checks it; None if cut off."""
    raw = os.pread(fd, _LMDB_META.size, offset)
    magic_at = slice(_PAGE_HEADER, _PAGE_HEADER + 4)
    if number == 0 and len(raw) >= magic_at.stop and raw[magic_at] != _LMDB_MAGIC.to_bytes(4, "little"):
        raise FormatError(
            f"{where} is not an LMDB file (no LMDB meta page at its start). Point LMDBDataset at a "
            "results/<split>.lmdb written by the workflow."
        )
    if len(raw) < _LMDB_META.size:
        return None
    _, flags, magic, version, _, _, page_size, _, depth, root, last_page, txnid = _LMDB_META.unpack(raw)
    if magic != _LMDB_MAGIC or not flags & _P_META:
        raise FormatError(f"{where}: LMDB meta page {number} is damaged. {_RECOPY}")
    if version != _LMDB_DATA_VERSION:
        raise FormatError(
            f"{where}: LMDB data format version {version}; this LMDB library ({'.'.join(map(str, lmdb.version()))}) "
            f"reads version {_LMDB_DATA_VERSION}"
        )
    if not 512 <= page_size <= _MAX_PAGE_SIZE or page_size & (page_size - 1) or last_page < 1:
        raise FormatError(f"{where}: LMDB meta page {number} is damaged (page size {page_size}). {_RECOPY}")
    return LmdbHeader(page_size, last_page, txnid, root, depth)


def read_lmdb_header(fd: int, where: str) -> LmdbHeader:
    """The current meta page of the LMDB file open as ``fd``, read as LMDB reads it: both meta
    pages must be valid, and the one with the larger txnid (page 0 on a tie) is current. Raises
    FormatError naming ``where`` for anything LMDB would refuse or crash on."""
    size = os.fstat(fd).st_size
    first = _meta_page(fd, 0, 0, where)
    second = None if first is None else _meta_page(fd, first.page_size, 1, where)
    if first is None or second is None:
        at_least = "" if first is None else f" (its first meta page says {first.required_bytes:,} bytes)"
        raise TruncatedFileError(
            f"{where} is shorter than it should be: it holds {size:,} bytes, not even LMDB's two meta "
            f"pages{at_least}. {_INCOMPLETE} {_RECOPY}"
        )
    return second if second.txnid > first.txnid else first


def _data_file(path: str) -> str:
    """The file that holds an environment's pages (a directory environment keeps them in data.mdb)."""
    return os.path.join(path, "data.mdb") if os.path.isdir(path) else path


def check_lmdb_file(path: str | os.PathLike[str]) -> LmdbHeader:
    """Check, with plain reads and before any memory map, that the LMDB file at ``path`` holds every
    page its header says it uses; raises TruncatedFileError (or FormatError) saying what to do.
    Reader, verify, add_locations and convert_legacy call it before they open a file."""
    where = os.fspath(path)
    fd = os.open(_data_file(where), os.O_RDONLY)
    try:
        header = read_lmdb_header(fd, where)
        size = os.fstat(fd).st_size
    finally:
        os.close(fd)
    missing = header.required_bytes - size
    if missing > 0:
        raise TruncatedFileError(
            f"{where} is shorter than it should be: its LMDB header says its pages run to "
            f"{header.required_bytes:,} bytes, but the file holds {size:,}: the last {missing:,} "
            f"byte{'s are' if missing > 1 else ' is'} missing. {_INCOMPLETE} {_RECOPY}"
        )
    return header


# LMDB trusts its pages: a damaged node offset, key size or value size sends it past the end of the
# file (SIGBUS). So before the reader asks LMDB for a key, every page on the way to it is checked
# with plain reads (once per page and process): the node offsets and keys lie inside the page,
# child pages and values inside the file, keys in order (so LMDB's binary search takes the path
# checked here). The file must not change meanwhile: lock=True readers, whose writer may change it,
# are not checked this way.


@dataclass(frozen=True)
class _CheckedPage:
    branch: bool
    keys: list[bytes]  # each node's key, ascending (a branch page's first key is never compared)
    children: list[int]  # a branch page's child pages, one per key


class PageGuard:
    """Checks the pages of one LMDB file on the way to a key before LMDB follows them."""

    def __init__(self, fd: int, header: LmdbHeader, where: str) -> None:
        self.fd, self.header, self.where = fd, header, where
        self.checked: dict[int, _CheckedPage] = {}

    def check_key(self, key: bytes) -> None:
        """Raise FormatError unless LMDB can look ``key`` up without leaving checked pages."""
        pgno = self.header.root
        if pgno == _P_INVALID:
            return  # an empty database: LMDB reads no page
        for _ in range(self.header.depth):
            page = self.checked.get(pgno) or self._check_page(pgno)
            if not page.branch:
                return
            # LMDB's binary search over ascending keys: the last child whose key is <= ``key``
            pgno = page.children[bisect.bisect_right(page.keys, key, 1, len(page.keys)) - 1]
        raise self._damaged(pgno, f"the tree is deeper than the {self.header.depth} levels its meta page says")

    def _damaged(self, pgno: int, what: str) -> FormatError:
        return FormatError(f"{self.where}: its LMDB page {pgno} is damaged ({what}). {_RECOPY}")

    def _check_page(self, pgno: int) -> _CheckedPage:
        size = self.header.page_size
        if not 2 <= pgno <= self.header.last_page:
            raise self._damaged(pgno, "a page number outside the file")
        raw = os.pread(self.fd, size, pgno * size)
        stored, flags, lower, upper = struct.unpack_from("<Q2xHHH", raw) if len(raw) == size else (-1, 0, 0, 0)
        if stored != pgno or flags not in (_P_BRANCH, _P_LEAF):  # on disk exactly one of the two
            raise self._damaged(pgno, "not the branch or leaf page it should be")
        if not _PAGE_HEADER <= lower <= upper <= size or lower % 2:
            raise self._damaged(pgno, "a damaged header")
        ptrs = struct.unpack_from(f"<{(lower - _PAGE_HEADER) // 2}H", raw, _PAGE_HEADER)
        page = _CheckedPage(flags == _P_BRANCH, [], [])
        if page.branch and len(ptrs) < 2:  # LMDB asserts this never happens (an abort, not an error)
            raise self._damaged(pgno, "a branch page with fewer than two keys")
        for ptr in ptrs:
            self._check_node(pgno, raw, ptr, upper, page)
        if any(a >= b for a, b in itertools.pairwise(page.keys[1 if page.branch else 0 :])):
            raise self._damaged(pgno, "its keys are out of order")
        self.checked[pgno] = page
        return page

    def _check_node(self, pgno: int, raw: bytes, ptr: int, upper: int, page: _CheckedPage) -> None:
        """One node of a page: inside it, and what it points to inside the file."""
        size = self.header.page_size
        if ptr % 2 or not upper <= ptr <= size - _NODE_HEADER:
            raise self._damaged(pgno, "a node offset outside the page")
        lo, hi, flags, key_size = struct.unpack_from("<HHHH", raw, ptr)
        data_at = ptr + _NODE_HEADER + key_size
        page.keys.append(raw[ptr + _NODE_HEADER : data_at])
        if page.branch:
            page.children.append(lo | hi << 16 | flags << 32)
            if not 2 <= page.children[-1] <= self.header.last_page or data_at > size:
                raise self._damaged(pgno, "a child page outside the file")
            return
        length = lo | hi << 16
        if flags & _F_DUPDATA:  # never in these files' main database (not duplicate-sorted)
            raise self._damaged(pgno, f"node flags {flags:#x}: duplicate data")
        if not flags & _F_BIGDATA:  # inline data, also a named database's record (F_SUBDATA)
            if data_at + length > size:
                raise self._damaged(pgno, "a value past the end of its page")
            return
        first = struct.unpack_from("<Q", raw, data_at)[0] if data_at + 8 <= size else 0
        if first < 2 or first * size + _PAGE_HEADER + length > self.header.required_bytes:
            raise self._damaged(pgno, "a value's overflow pages outside the file")


_NODE_HEADER = 8


class _GuardedTxn:
    """A read transaction whose ``get`` first has a PageGuard check the way to the key; anything
    else (``stat``, ``id``, the context manager) is the transaction's own."""

    def __init__(self, txn: lmdb.Transaction, guard: PageGuard) -> None:
        self.txn, self.guard = txn, guard

    def get(self, key: bytes, default: Any = None) -> Any:
        self.guard.check_key(key)
        return self.txn.get(key, default)

    def __enter__(self) -> _GuardedTxn:
        self.txn.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.txn.__exit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.txn, name)


#: A read transaction as the reading functions take it: LMDB's own, or one whose gets are guarded.
_ReadTxn: TypeAlias = "lmdb.Transaction | _GuardedTxn"


def _lock_file(path: str) -> str:
    return os.path.join(path, "lock.mdb") if os.path.isdir(path) else path + "-lock"


def _readers_in_this_job() -> tuple[int, int]:
    """(DataLoader workers of this process's loader, ranks on this machine), as far as known here."""
    import torch.distributed
    from torch.utils.data import get_worker_info

    info = get_worker_info()
    workers = info.num_workers if info is not None else 0
    ranks = int(os.environ.get("LOCAL_WORLD_SIZE", "0"))
    if not ranks and torch.distributed.is_available() and torch.distributed.is_initialized():
        ranks = torch.distributed.get_world_size()
    return workers, ranks or int(os.environ.get("WORLD_SIZE", "1"))


def readers_full_message(path: str, slots: int | None) -> str:
    """Why a lock=True reader found no free slot, and what to change; ``slots``: the table size."""
    workers, ranks = _readers_in_this_job()
    needed = (workers + 1) * ranks
    return (
        f"{path}: all {slots or 'the'} LMDB reader slots are taken. With lock=True every process that reads "
        f"the file on this machine holds a slot while it reads: each DataLoader worker of each rank, "
        f"plus each rank's main process; here {workers} workers x {ranks} ranks, so at least "
        f"(workers + 1) x ranks = {needed} (more if several loaders read it at once). Pass "
        f"LMDBDataset(..., lock=True, max_readers=N) with a larger N in every process: the table in "
        f"{_lock_file(path)} is sized by the first process that opens the file while no other has it "
        "open, and later ones share it whatever they ask. Or keep the default lock=False: the file is "
        "never written, and without a lock LMDB keeps no reader table and has no reader limit."
    )


#: LMDB's own default reader table size, used with ``lock=True`` when no ``max_readers`` is given.
DEFAULT_MAX_READERS = 126


def open_env_readonly(path: str, max_readers: int | None = None, lock: bool = False) -> lmdb.Environment:
    """Open a dataset for reading with the settings that suit random access by many processes.

    ``lock=False`` (the default): the file never changes after it is written, so readers need no
    lock table (no ``-lock`` file is created, read-only filesystems work) and LMDB then keeps no
    reader table at all, so ``max_readers`` is meaningless and ignored. ``lock=True`` uses the
    ``-lock`` file beside the data and its table of ``max_readers`` slots.
    ``readahead=False``: random reads must not pull in neighbouring pages; ``meminit=False``:
    nothing is written.
    """
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such file")
    check_lmdb_file(path)  # before LMDB maps it: a short file would raise SIGBUS on first touch
    subdir = os.path.isdir(path)  # legacy datasets are often directories holding data.mdb
    try:
        return lmdb.open(
            path,
            subdir=subdir,
            readonly=True,
            lock=lock,
            readahead=False,
            meminit=False,
            max_readers=max_readers or DEFAULT_MAX_READERS,
            max_dbs=0,
        )
    except lmdb.InvalidError as exc:
        raise FormatError(
            f"{path} is not an LMDB file ({exc}). Point LMDBDataset at a results/<split>.lmdb written by the workflow."
        ) from exc
    except lmdb.ReadersFullError as exc:  # opening reads the main database, which needs a slot too
        raise ReadersFullError(readers_full_message(path, None)) from exc
    except lmdb.Error as exc:
        raise FormatError(f"{path} cannot be opened as an LMDB file: {exc}") from exc


def _begin_read(env: lmdb.Environment, path: str) -> lmdb.Transaction:
    """A read transaction of ``env`` whose values are buffers into LMDB's memory, valid until it ends.

    With lock=True a slot of the reader table is taken; when none is free, the slots of processes
    that died (killed workers) are reclaimed once before giving up with a clear error.
    """
    try:
        return env.begin(buffers=True)
    except lmdb.ReadersFullError:
        env.reader_check()
        try:
            return env.begin(buffers=True)
        except lmdb.ReadersFullError as exc:
            raise ReadersFullError(readers_full_message(path, env.max_readers())) from exc


# --------------------------------------------------------------------------------------------------
# 3. The per-process table: one environment and one descriptor per file and process.
# --------------------------------------------------------------------------------------------------
# py-lmdb refuses to open one path twice in a process, and a forked child inherits the parent's
# "already open" state. So environments live in one per-process table shared by every dataset
# instance, and the table is emptied right before any fork: the parent reopens lazily afterwards
# and the child opens its own. Under spawn/forkserver the child starts with an empty table anyway.
# The plain file descriptors that the fast path preads from live beside them and follow the same
# rules, so a child never shares a descriptor it did not open.


@dataclass(frozen=True)
class _EnvOptions:
    lock: bool
    max_readers: int | None


_ENVS: dict[str, tuple[lmdb.Environment, _EnvOptions]] = {}
_ENVS_LOCK = threading.Lock()
#: file key -> (read-only descriptor, (st_dev, st_ino) of the file it reads)
_FDS: dict[str, tuple[int, tuple[int, int]]] = {}
#: file key -> the PageGuard of the file's pages (with a descriptor of its own)
_GUARDS: dict[str, PageGuard] = {}


@functools.lru_cache(maxsize=64)
def _env_key(path: str) -> str:
    """One key per file however it is named; cached, since every read looks its environment up."""
    return os.path.realpath(path)


def shared_env(path: str, lock: bool = False, max_readers: int | None = None) -> lmdb.Environment:
    """This process's environment of ``path``, opened on first use.

    Every user of one file in one process shares it, so all must ask for the same ``lock`` and
    ``max_readers`` (LMDB fixes them when the file is opened)."""
    key = _env_key(path)
    wanted = _EnvOptions(lock, max_readers)
    with _ENVS_LOCK:
        entry = _ENVS.get(key)
        if entry is None:
            entry = _ENVS[key] = (open_env_readonly(path, max_readers=max_readers, lock=lock), wanted)
        env, options = entry
    if options != wanted:
        raise ValueError(
            f"{path} is already open in this process with lock={options.lock}, max_readers={options.max_readers}; "
            f"LMDB opens a file once per process, so every reader of it here must use the same settings "
            f"(asked for lock={lock}, max_readers={max_readers}). Call close_all_envs() first to switch."
        )
    return env


_T = TypeVar("_T")


def _made_once(table: dict[str, _T], path: str, make: Callable[[], _T]) -> _T:
    """``table``'s entry for the file at ``path``, made by ``make`` on first use (under the lock;
    later lookups, every read's, take none)."""
    key = _env_key(path)
    entry = table.get(key)
    if entry is None:
        with _ENVS_LOCK:
            entry = table.get(key)
            if entry is None:
                entry = table[key] = make()
    return entry


def shared_fd(path: str) -> tuple[int, tuple[int, int]]:
    """This process's read-only descriptor of ``path``, opened on first use, and the identity
    ``(st_dev, st_ino)`` of the file it reads (record locations are only valid for that file)."""

    def open_fd() -> tuple[int, tuple[int, int]]:
        fd = os.open(path, os.O_RDONLY)
        info = os.fstat(fd)
        return fd, (info.st_dev, info.st_ino)

    return _made_once(_FDS, path, open_fd)


def shared_guard(path: str) -> PageGuard:
    """This process's PageGuard of the file at ``path``, made on first use."""

    def make_guard() -> PageGuard:
        fd = os.open(_data_file(path), os.O_RDONLY)
        return PageGuard(fd, read_lmdb_header(fd, path), path)

    return _made_once(_GUARDS, path, make_guard)


def guarded(txn: lmdb.Transaction, path: str, lock: bool) -> _ReadTxn:
    """``txn`` with its ``get`` guarded (_GuardedTxn), unless ``lock``: a writer may change such a
    file while it is read, and pages checked once could change under the guard."""
    return txn if lock else _GuardedTxn(txn, shared_guard(path))


def close_all_envs() -> None:
    """Close every dataset file this process has open; datasets reopen them when next read.
    Runs by itself before each fork; call it after replacing a file that was open."""
    with _ENVS_LOCK:
        for env, _ in _ENVS.values():
            env.close()
        _ENVS.clear()
        for fd, _ in _FDS.values():
            os.close(fd)
        _FDS.clear()
        for guard in _GUARDS.values():
            os.close(guard.fd)
        _GUARDS.clear()


def _forget_envs_in_child() -> None:
    # The child's copies were closed before the fork; start from clean tables and a fresh lock.
    global _ENVS_LOCK
    _ENVS.clear()
    _FDS.clear()
    _GUARDS.clear()
    _ENVS_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=close_all_envs, after_in_child=_forget_envs_in_child)

# --------------------------------------------------------------------------------------------------
# 4. Decoding the stored bytes.
# --------------------------------------------------------------------------------------------------

Decode = Literal["pil", "tensor", "bytes"]
DECODE_CHOICES: tuple[str, ...] = ("pil", "tensor", "bytes")
#: The TorchCodec release decode="tensor" is tested with (image decoders from 0.16 on); the
#: install hint of the error raised without it.
TORCHCODEC_PIN = "torchcodec==0.17.0"


def pil_decode(data: bytes | memoryview) -> Image.Image:
    """Decode stored bytes exactly as torchvision's ``pil_loader`` decodes a file."""
    image = Image.open(io.BytesIO(data))  # BytesIO copies a memoryview once; Pillow reads that copy
    image.load()
    if image.mode == "RGB":
        # What convert("RGB") returns for an RGB image (a copy: Image.copy is _new(im.copy())),
        # without copying the decoded pixels that nothing else holds.
        return image._new(image.im)
    return image.convert("RGB")


def pil_to_chw(image: Image.Image) -> torch.Tensor:
    """An RGB PIL image as a contiguous uint8 ``(3, H, W)`` tensor, the layout decode_jpeg returns."""
    import torch

    return torch.from_numpy(np.array(image.convert("RGB"), dtype=np.uint8)).permute(2, 0, 1).contiguous()


@functools.cache
def _torchcodec_jpeg() -> Callable[..., torch.Tensor]:
    """TorchCodec's JPEG decoder, imported on first use (it needs no FFmpeg for images)."""
    try:
        from torchcodec.decoders import decode_jpeg
    except ImportError as exc:
        raise ImportError(
            f'decode="tensor" decodes JPEGs with TorchCodec, which is not installed here: `pip install '
            f'{TORCHCODEC_PIN}` (or a release compatible with your torch), or use decode="pil"'
        ) from exc
    return decode_jpeg


def tensor_decode(data: bytes | memoryview, jpeg: bool = True) -> torch.Tensor:
    """Decode stored bytes to a uint8 ``(3, H, W)`` RGB tensor, ready for transforms v2.

    ``jpeg=True``: TorchCodec's ``decode_jpeg`` reads ``data`` in place (no copy of the encoded
    bytes, so ``data`` may be an LMDB buffer while its transaction is alive). ``jpeg=False`` (values
    stored as-is: PNG, BMP, CMYK JPEG, ...) decodes with Pillow, as ImageFolder would.
    """
    if not jpeg:
        return pil_to_chw(pil_decode(data))
    import torch

    with warnings.catch_warnings():
        # LMDB's mapped memory is read-only, which torch warns about once; the decoder only reads it.
        warnings.filterwarnings("ignore", message="The given buffer is not writable", category=UserWarning)
        encoded = torch.frombuffer(data, dtype=torch.uint8)
    return encoded_tensor_decode(encoded, jpeg=True)


def encoded_tensor_decode(encoded: torch.Tensor, jpeg: bool = True) -> torch.Tensor:
    """``tensor_decode`` of stored bytes already held in a uint8 tensor (the fast path reads into one).

    TorchCodec always turns an image as its EXIF orientation says, which ImageFolder's Pillow
    loader never does: a JPEG that may carry an orientation other than "as stored" is decoded with
    Pillow instead, so that every decode choice gives ImageFolder's pixels."""
    if not jpeg or _may_be_turned(memoryview(encoded.numpy())):
        return pil_to_chw(pil_decode(memoryview(encoded.numpy())))
    return _torchcodec_jpeg()(encoded, mode="RGB")


def _decode(data: bytes | memoryview, decode: str, jpeg: bool) -> Any:
    """``data`` (possibly an LMDB buffer, valid only inside its transaction) as a value that owns
    its memory: the one and only copy or decode of the stored bytes."""
    if decode == "pil":
        return pil_decode(data)
    if decode == "tensor":
        return tensor_decode(data, jpeg=jpeg)
    return bytes(data)


# -- the EXIF orientation TorchCodec would apply ---------------------------------------------------
# TorchCodec (its DecodeJpeg.cpp and Exif.h) reads the orientation from the first APP1 segment that
# libjpeg saw by the time decoding starts: those before the first scan, and for progressive or
# multi-scan files those between scans too. _may_be_turned mirrors that reading and errs towards
# Pillow: anything it cannot follow counts as "may be turned".

_APP1, _SOS, _SOI = 0xE1, 0xDA, 0xD8
#: Markers without a length field (TEM, RST0-RST7).
_BARE_MARKERS = frozenset({0x01, *range(0xD0, 0xD8)})
#: Start-of-frame markers of single-scan-capable sequential JPEGs (baseline, extended Huffman).
_SEQUENTIAL_SOF = frozenset({0xC0, 0xC1})
_ANY_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}  # DHT, JPG and DAC are not frames
_MARKER = struct.Struct(">BBH")  # 0xFF, the marker, the segment's length (itself included)


def _may_be_turned(data: memoryview) -> bool:
    """Whether TorchCodec might turn this JPEG for its EXIF orientation (see above)."""
    header = _jpeg_header(data)
    if header is None:
        return True
    app1, single_scan, scan_start = header
    if app1 is not None:
        return _exif_orientation(app1) not in (-1, 1)
    # APP1 segments after the first scan are read only when libjpeg buffers every scan first
    return not single_scan and data[scan_start:].tobytes().find(b"\xff\xe1") >= 0


def _jpeg_header(data: memoryview) -> tuple[memoryview | None, bool, int] | None:
    """(the first APP1 segment's payload or None, whether the first scan is the only one, where the
    scan starts), from the markers up to the first start of scan; None where the bytes are not
    laid out as that walk expects."""
    if len(data) < 4 or data[0] != 0xFF or data[1] != _SOI:
        return None
    app1, frame, components, position = None, None, 0, 2
    while position + 4 <= len(data):
        fill, marker, length = _MARKER.unpack_from(data, position)
        if fill != 0xFF:
            return None
        if marker == 0xFF or marker in _BARE_MARKERS:  # a fill byte, or a marker without a length
            position += 1 if marker == 0xFF else 2
            continue
        end = position + 2 + length
        if length < 2 or end > len(data):
            return None
        if marker == _APP1 and app1 is None:
            app1 = data[position + 4 : end]
        elif marker in _ANY_SOF and length >= 8:
            frame, components = marker, data[position + 9]
        elif marker == _SOS:
            single = frame in _SEQUENTIAL_SOF and length >= 3 and data[position + 4] == components
            return app1, single, end
        position = end
    return None


def _exif_orientation(segment: memoryview) -> int:
    """The orientation TorchCodec reads from an APP1 payload, -1 for none (fetch_exif_orientation)."""
    if len(segment) <= 6:
        return -1
    exif = segment[6:]  # after "Exif\0\0", which TorchCodec does not check
    size = len(exif)
    intel = size >= 1 and (size == 1 or exif[0] == exif[1]) and exif[0] == ord("I")

    def number(offset: int, width: int) -> int:  # out of range: the C code's INCORRECT_TAG
        if offset + width - 1 >= size:
            return 0xFFFF
        raw = bytes(exif[offset : offset + width])
        return int.from_bytes(raw, "little" if intel else "big")

    if number(2, 2) != 0x2A:
        return -1
    offset = number(4, 4)
    entries = number(offset, 2)
    offset = (offset + 2) & 0xFFFFFFFF  # uint32_t arithmetic, as in the C code
    for _ in range(entries):
        tag = number(offset, 2)
        if tag == 0xFFFF:
            break
        if tag == 0x0112:
            return number((offset + 8) & 0xFFFFFFFF, 2)
        offset = (offset + 12) & 0xFFFFFFFF
    return -1


# --------------------------------------------------------------------------------------------------
# 5. Record sources, the interface: chosen once when a dataset opens, then asked for batches.
# --------------------------------------------------------------------------------------------------
# A dataset's records come from one of three sources, each a small object of its own part below:
# v1 records through LMDB (_LmdbRecords), v1 records by offset (_LocatedRecords, which hands the
# records it cannot locate to an _LmdbRecords), and legacy pickles (_LegacyRecords). The dataset
# never branches on which one it has. Sources hold no process-specific state (environments and
# descriptors are in the per-process table), so they pickle with the dataset.

#: Opens a read transaction of the dataset's file. The dataset passes its own (LMDBReader._transaction):
#: it owns the file's lock settings and reader slots; a source opens at most one per batch.
_Begin = Callable[[], _ReadTxn]


class _Records(Protocol):
    """Where a dataset's records come from."""

    @property
    def legacy(self) -> bool:
        """A folder2lmdb pickle file: no image sizes, checksums or storage codes."""
        ...

    @property
    def by_offset(self) -> bool:
        """Records are read with one os.pread each at their recorded offsets (reads_by_offset)."""
        ...

    def read(self, positions: list[int], decode: str, begin: _Begin, targets: list[int]) -> list[tuple[Any, int]]:
        """Decoded images (see DECODE_CHOICES) and labels of ``positions`` (valid indices), in order.
        ``targets``: the dataset's labels, which v1 records use (legacy records carry their own)."""
        ...

    def get_bytes(self, index: int, begin: _Begin) -> bytes:
        """The stored bytes of record ``index`` (a valid index)."""
        ...


@dataclass
class _Opened:
    """What opening a file found: its record source and ImageFolder's index of the records."""

    records: _Records
    document: dict[str, Any]  # the meta JSON document (legacy: a stand-in naming the layout)
    classes: list[str]
    names: list[str]  # each record's name in ``samples``: its relative path (legacy: its key)
    targets: list[int]
    meta: Meta | None  # None for a legacy file, which has no meta arrays


def _open_records(path: str, env: lmdb.Environment, lock: bool, allow_pickle: bool) -> _Opened:
    """Read what the file at ``path`` says about itself, and choose once where its records come from."""
    with guarded(env.begin(), path, lock) as txn:
        if allow_pickle and txn.get(META_KEYS["json"]) is None and is_legacy_pickle_lmdb(txn):
            return _open_legacy(txn, path)
        meta = decode_meta(txn, path)
        records = _v1_records(path, env, meta, lock)
    return _Opened(records, meta.document, meta.classes, meta.paths, meta.labels.tolist(), meta)


# --------------------------------------------------------------------------------------------------
# 6. v1 records through LMDB.
# --------------------------------------------------------------------------------------------------


class _LmdbRecords:
    """v1 records read through LMDB's memory map, key ``record_key(i)``, one transaction per batch.

    The source of files without record locations, of files they do not fit, of ``lock=True``
    readers, and of the records that _LocatedRecords cannot locate."""

    legacy = False
    by_offset = False

    def __init__(self, path: str, storage: np.ndarray) -> None:
        self.path = path
        self.storage = storage  # storage code of each record (STORAGE_REASONS)

    def jpeg(self, index: int) -> bool:
        """Whether record ``index`` may go to decode_jpeg: every value but a stored-as-is or PNG one
        (NOT_JPEG_CODES), which Pillow decodes."""
        return self.storage.item(index) not in NOT_JPEG_CODES

    def read(self, positions: list[int], decode: str, begin: _Begin, targets: list[int]) -> list[tuple[Any, int]]:
        """Decoded images and labels of ``positions``, all from one LMDB transaction.

        Decoding happens while the transaction is alive, straight from LMDB's buffers, so each
        stored value is copied or decoded exactly once and no buffer outlives its transaction.
        The transaction (and a lock=True reader slot) ends when this function returns.
        """
        with begin() as txn:
            batch = []
            for index in positions:
                data = self._value(txn, index)
                batch.append((_decode(data, decode, self.jpeg(index)), targets[index]))
                del data  # drop the buffer before the transaction ends
        return batch

    def get_bytes(self, index: int, begin: _Begin) -> bytes:
        with begin() as txn:
            return bytes(self._value(txn, index))

    def _value(self, txn: _ReadTxn, index: int) -> memoryview:
        data = txn.get(record_key(index))
        if data is None:
            raise FormatError(f"{self.path}: record {index} is missing; the file is damaged")
        return data


# --------------------------------------------------------------------------------------------------
# 7. v1 records by offset: one pread per record, at the file offset recorded in meta/locations.
# --------------------------------------------------------------------------------------------------
# py-lmdb touches every 4 KB page of a value before returning it, and on a cold cache each touch
# is a synchronous read of its own. With the offsets the writer recorded, a record is one read,
# and a batch's ranges are all requested from the kernel before the first is read, so the disk
# (or the network filesystem) sees one deep queue. The offsets are trusted only after checking,
# when the file is opened, that they were taken for this very file (_v1_records).

_CAN_PREAD = hasattr(os, "pread")
_CAN_ADVISE = hasattr(os, "posix_fadvise")
_CAN_PREADV = hasattr(os, "preadv")
_CAN_PROBE = _CAN_PREADV and hasattr(os, "RWF_NOWAIT")
#: How many located records are compared byte for byte with LMDB's view when a file is opened.
SPOT_CHECKS = 8


class LocationsWarning(UserWarning):
    """A file's recorded record locations do not fit it, so it is read through LMDB instead."""


def _read_into(fd: int, buffer: memoryview, offset: int, done: int = 0) -> None:
    """Fill ``buffer`` from file offset ``offset`` on, however many reads that takes."""
    while done < len(buffer):
        if _CAN_PREADV:
            got = os.preadv(fd, [buffer[done:]], offset + done)
        else:  # pragma: no cover - platforms without preadv: one copy more
            chunk = os.pread(fd, len(buffer) - done, offset + done)
            buffer[done : done + len(chunk)], got = chunk, len(chunk)
        if got == 0:
            raise FormatError("a record ends past the end of the file: the file is truncated")
        done += got


def _pread(fd: int, length: int, offset: int) -> bytes:
    """``length`` bytes at ``offset``: one read, except at the end of the file or past the
    kernel's cap on a single read (2 GiB on Linux)."""
    data = os.pread(fd, length, offset)
    if len(data) == length:
        return data
    buffer = bytearray(length)
    buffer[: len(data)] = data
    _read_into(fd, memoryview(buffer), offset, done=len(data))
    return bytes(buffer)


def _pread_tensor(fd: int, length: int, offset: int) -> torch.Tensor:
    """The bytes at ``offset`` read straight into a new uint8 tensor's own memory: no extra copy."""
    import torch

    encoded = torch.empty(length, dtype=torch.uint8)
    _read_into(fd, memoryview(encoded.numpy()), offset)
    return encoded


def _fetch(fd: int, offset: int, length: int, decode: str) -> bytes | torch.Tensor:
    """A located record's bytes: into a tensor's own memory for decode="tensor", else bytes."""
    return _pread_tensor(fd, length, offset) if decode == "tensor" else _pread(fd, length, offset)


#: A read slower than this, plus the time to copy its bytes into fresh memory, may have waited for
#: the disk; a one-byte probe of the next record then decides. Generous, so that cached reads rarely
#: pay for a probe: a batch that is cold from its first record on is caught before any read anyway.
_SLOW_READ_SECONDS = 50e-6
_COPY_BYTES_PER_SECOND = 2e9
_PROBE = bytearray(1)  # the probe's byte is thrown away, so threads may share it


def _slow(seconds: float, length: int) -> bool:
    return seconds > _SLOW_READ_SECONDS + length / _COPY_BYTES_PER_SECOND


def _cached(fd: int, offset: int) -> bool:
    """Whether the byte at ``offset`` is in the page cache: a read that may not wait (Linux)."""
    try:
        os.preadv(fd, [_PROBE], offset, os.RWF_NOWAIT)
    except OSError:  # BlockingIOError: not cached; any other: no such probe here, assume cold
        return False
    return True


def _hint_rest(fd: int, offsets: list[int], lengths: list[int], start: int = 0) -> bool:
    """If the first located record of ``offsets[start:]`` is not cached, the batch is cold: ask for
    all of those at once (posix_fadvise WILLNEED). Returns whether nothing is left to hint."""
    upcoming = next((offset for offset in offsets[start:] if offset), None)
    if upcoming is None:
        return True
    if _CAN_PROBE and _cached(fd, upcoming):
        return False  # cached after all (a slow read on a busy machine): asking would only cost time
    for offset, length in zip(offsets[start:], lengths[start:], strict=True):
        if offset:
            os.posix_fadvise(fd, offset, length, os.POSIX_FADV_WILLNEED)
    return True


def spot_check_indices(offsets: np.ndarray, count: int = SPOT_CHECKS) -> list[int]:
    """Located records spread evenly over the file, first and last included: deterministic, so
    every process checks the same ones."""
    located = np.flatnonzero(offsets)
    if not located.size:
        return []
    picks = np.unique(np.linspace(0, located.size - 1, count).round().astype(np.int64))
    return located[picks].tolist()


def locations_problem(fd: int, env: lmdb.Environment, meta: Meta) -> str | None:
    """Why ``meta.locations`` cannot be used to read the file open as ``env`` and as ``fd``, or None
    if they can.

    They must have been taken at the file's current LMDB transaction (a compacting copy restarts
    at 1 and renumbers pages; a plain copy keeps both), match their checksum (files written before
    it existed have none: see docs/FORMAT.md), have the shape of LMDB values (locations_layout_problem)
    and hold, for a spread of records, bytes with the record's CRC-32 (_spot_check_problem).
    """
    assert meta.locations is not None
    recorded = meta.document.get("locations")
    txnid = env.info()["last_txnid"]
    taken = recorded.get("txnid") if isinstance(recorded, dict) else None
    if taken != txnid:
        return (
            f"its record locations were taken at LMDB transaction {taken}, but the file is at "
            f"transaction {txnid}: it was rewritten since, for instance by a compacting copy (mdb_copy -c)"
        )
    if len(meta.locations) != meta.length:
        return f"meta/locations has {len(meta.locations)} entries for its {meta.length} records: it is damaged"
    if "crc32" in recorded and recorded["crc32"] != locations_checksum(meta.locations):
        return "its record locations (meta/locations) do not match their checksum: they are damaged"
    pages_end = (env.info()["last_pgno"] + 1) * env.stat()["psize"]
    problem = locations_layout_problem(meta.locations, env.stat()["psize"], min(pages_end, os.fstat(fd).st_size))
    if problem is not None:
        return problem
    return _spot_check_problem(fd, meta)


def _spot_check_problem(fd: int, meta: Meta) -> str | None:
    """Whether a spread of located records holds, at its recorded location, bytes with the record's
    CRC-32 (meta/crc32): another record's bytes, or a layout the offsets were not taken from, would
    not. LMDB is not asked: its pages are never followed to judge the offsets."""
    assert meta.locations is not None
    offsets, lengths = meta.locations["offset"], meta.locations["length"]
    for index in spot_check_indices(offsets):
        if checksum(_pread(fd, int(lengths[index]), int(offsets[index]))) != int(meta.crc32[index]):
            return (
                f"record {index}'s bytes at its recorded location do not match its checksum (meta/crc32): "
                "the locations are wrong, or the record itself is damaged (`verify --full` tells which)"
            )
    return None


def locations_checksum(locations: np.ndarray) -> int:
    """The checksum meta/json records for meta/locations (``locations.crc32``): CRC-32 of its bytes."""
    return checksum(np.ascontiguousarray(locations, dtype=LOCATION_DTYPE).tobytes())


def locations_layout_problem(locations: np.ndarray, page_size: int, end: int) -> str | None:
    """Why ``locations`` cannot describe LMDB values of a file whose pages end at byte ``end``, or
    None: every located range must lie after the two meta pages and before ``end``, either inside
    one page (a value in a leaf page) or from just after an overflow page's 16-byte header, and no
    two may overlap. Cheap (no reads); catches damage the checksum cannot, in files without one."""
    located = np.flatnonzero(locations["offset"])
    starts = locations["offset"][located]
    lengths = locations["length"][located].astype(np.uint64)
    limit = np.uint64(end)
    in_meta_pages = starts < np.uint64(2 * page_size)
    if in_meta_pages.any():
        return f"{_location_text(locations, int(located[np.argmax(in_meta_pages)]))} lies in LMDB's meta pages"
    past_the_end = (starts >= limit) | (lengths > limit - np.minimum(starts, limit))
    if past_the_end.any():
        return (
            f"{_location_text(locations, int(located[np.argmax(past_the_end)]))} runs past the end of the file's pages"
        )
    in_page = starts % np.uint64(page_size)
    misshapen = (in_page != np.uint64(_PAGE_HEADER)) & (in_page + lengths > np.uint64(page_size))
    if misshapen.any():
        return (
            f"{_location_text(locations, int(located[np.argmax(misshapen)]))} is neither inside one page nor "
            "at the start of an overflow page: it is damaged"
        )
    order = np.argsort(starts, kind="stable") if np.any(starts[1:] < starts[:-1]) else np.arange(len(starts))
    overlapping = starts[order][1:] < (starts + lengths)[order][:-1]
    if overlapping.any():
        first = int(np.argmax(overlapping))
        a, b = (int(located[order[first + k]]) for k in (0, 1))
        return f"{_location_text(locations, a)} and {_location_text(locations, b)} overlap: they are damaged"
    return None


def _location_text(locations: np.ndarray, index: int) -> str:
    offset, length = int(locations["offset"][index]), int(locations["length"][index])
    return f"record {index}'s recorded location (offset {offset:,}, length {length:,})"


def _v1_records(path: str, env: lmdb.Environment, meta: Meta, lock: bool) -> _LmdbRecords | _LocatedRecords:
    """The source of a v1 file: by offset if its recorded locations fit it (locations_problem), else
    through LMDB, with a one-time LocationsWarning; files without them (older ones) silently."""
    through_lmdb = _LmdbRecords(path, meta.storage)
    # lock=True asks for LMDB's reader protocol, which protects a read from a concurrent writer;
    # reads by offset assume, as lock=False does, that the file does not change while it is read.
    unusable = lock or not _CAN_PREAD or os.path.isdir(path)
    if unusable or meta.locations is None or "locations" not in meta.document:
        return through_lmdb
    fd, file_id = shared_fd(path)
    problem = locations_problem(fd, env, meta)
    if problem is not None:
        warnings.warn(
            f"{path}: {problem}. It is read through LMDB, which gives the same bytes but is "
            f"slower on a cold cache; `python scripts/add_locations.py {path}` (installed with pip: "
            f"`imagefolder-lmdb add-locations {path}`) writes them again for this file.",
            LocationsWarning,
            stacklevel=4,  # _v1_records, _open_records, LMDBReader.__init__, the caller
        )
        return through_lmdb
    if not meta.locations["offset"].any():
        return through_lmdb  # every record is inline in a leaf that holds meta (a tiny dataset)
    offsets = np.ascontiguousarray(meta.locations["offset"])
    return _LocatedRecords(through_lmdb, offsets, np.ascontiguousarray(meta.locations["length"]), file_id)


class _LocatedRecords:
    """v1 records read with one pread each at the offsets recorded in meta/locations, checked when
    the file was opened (_v1_records). Records not located (offset 0) are read through ``lmdb``,
    and so is every record once the path names another file (replaced since it was opened)."""

    legacy = False

    def __init__(self, lmdb: _LmdbRecords, offsets: np.ndarray, lengths: np.ndarray, file_id: tuple[int, int]) -> None:
        self.lmdb = lmdb
        self.offsets: np.ndarray | None = offsets  # uint64 per record, 0 = read through LMDB
        self.lengths: np.ndarray | None = lengths  # uint32 per record
        self.file_id: tuple[int, int] | None = file_id  # (st_dev, st_ino) the offsets belong to

    @property
    def by_offset(self) -> bool:
        return self.offsets is not None

    def stop_reading_by_offset(self) -> None:
        """Read every record through LMDB from now on."""
        self.offsets = self.lengths = self.file_id = None

    def _fd(self) -> int | None:
        """The descriptor to pread from, or None (reads by offset stop) when the path now names
        another file than the one the offsets were checked for (replaced, then close_all_envs())."""
        fd, identity = shared_fd(self.lmdb.path)
        if identity == self.file_id:
            return fd
        warnings.warn(
            f"{self.lmdb.path} was replaced by another file since it was opened; it is read through LMDB",
            LocationsWarning,
            stacklevel=4,  # _fd, read or get_bytes, the dataset's method, its caller
        )
        self.stop_reading_by_offset()
        return None

    def get_bytes(self, index: int, begin: _Begin) -> bytes:
        # The common case, kept short: raw reads are where per-call overhead shows.
        offset = self.offsets.item(index) if self.offsets is not None else 0
        fd = self._fd() if offset else None
        if fd is None:
            return self.lmdb.get_bytes(index, begin)
        assert self.lengths is not None
        return _pread(fd, self.lengths.item(index), offset)

    def read(self, positions: list[int], decode: str, begin: _Begin, targets: list[int]) -> list[tuple[Any, int]]:
        """Decoded images and labels of ``positions``: one pread each where the records are located
        (see _read_located), the rest in one LMDB transaction."""
        fd = self._fd() if self.offsets is not None else None
        if fd is None:
            return self.lmdb.read(positions, decode, begin, targets)
        assert self.offsets is not None and self.lengths is not None
        if len(positions) == 1:  # get_bytes, ds[i]: spare them the array indexing of _read_located
            index = positions[0]
            offset = self.offsets.item(index)
            if not offset:
                return self.lmdb.read(positions, decode, begin, targets)
            data = _fetch(fd, offset, self.lengths.item(index), decode)
            return [(self._decoded(data, index, decode), targets[index])]
        return self._read_located(fd, positions, decode, begin, targets)

    def _read_located(
        self, fd: int, positions: list[int], decode: str, begin: _Begin, targets: list[int]
    ) -> list[tuple[Any, int]]:
        """A batch, read by offset where located.

        When a record about to be read is not in the page cache (a one-byte probe, made before the
        first read and after any slow one), the remaining ranges of the batch are requested all at
        once (posix_fadvise WILLNEED), so that they load in parallel while this one decodes.
        Cached batches are not hinted: asking for ranges already cached costs time and buys nothing."""
        assert self.offsets is not None and self.lengths is not None
        offsets, lengths = self.offsets[positions].tolist(), self.lengths[positions].tolist()
        # Not yet hinted; a batch whose first record is not cached is hinted before any read.
        hint = _CAN_ADVISE and not _hint_rest(fd, offsets, lengths)
        batch: list[Any] = []
        unlocated: list[int] = []
        for slot, (index, offset, length) in enumerate(zip(positions, offsets, lengths, strict=True)):
            if not offset:
                batch.append(None)
                unlocated.append(slot)
                continue
            started = time.perf_counter()
            data = _fetch(fd, offset, length, decode)
            if hint and _slow(time.perf_counter() - started, length):
                hint = not _hint_rest(fd, offsets, lengths, start=slot + 1)
            batch.append((self._decoded(data, index, decode), targets[index]))
        if unlocated:
            through_lmdb = self.lmdb.read([positions[slot] for slot in unlocated], decode, begin, targets)
            for slot, sample in zip(unlocated, through_lmdb, strict=True):
                batch[slot] = sample
        return batch

    def _decoded(self, data: bytes | torch.Tensor, index: int, decode: str) -> Any:
        """Record ``index``'s bytes as read by offset (a tensor for decode="tensor"), decoded."""
        if decode == "tensor":
            return encoded_tensor_decode(data, jpeg=self.lmdb.jpeg(index))
        return pil_decode(data) if decode == "pil" else data


# -- memory for batches ---------------------------------------------------------------------------
# Every batch allocates its values (and Pillow its images) afresh and frees them when it is done.
# With glibc's defaults the freed top of the heap goes back to the kernel and blocks over 128 KB are
# mmap'd, so each batch page-faults all of its memory in again: on a cold cache that time is added
# to the disk's, and batches by offset fell well short of the bare hinted preads (BENCHMARKS.md).

#: glibc's mallopt parameters (malloc.h).
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
#: Freed memory kept for the next batch, at most; blocks up to the second figure come from the heap.
KEEP_FREED_BYTES, HEAP_BLOCKS_UP_TO = 64 << 20, 16 << 20
#: Set to "default" to leave glibc's malloc settings alone in every process that reads.
MALLOC_ENV = "IMAGEFOLDER_LMDB_MALLOC"
#: glibc's environment variables for the same settings (MALLOC_<name>_): a user's choice wins.
_USER_MALLOC_SETTINGS = ("TRIM_THRESHOLD", "MMAP_THRESHOLD", "TOP_PAD", "MMAP_MAX")
_malloc_settled = False  # inherited by forked workers, as the settings are; spawned ones start anew


def keep_freed_memory_for_reuse() -> None:
    """Once per process, before its first batch: let glibc reuse a finished batch's memory for the
    next one instead of handing it back to the kernel. Memory kept stays below KEEP_FREED_BYTES.
    Skipped off glibc, where the user set these limits (MALLOC_*_, GLIBC_TUNABLES) or where
    ``IMAGEFOLDER_LMDB_MALLOC=default``."""
    global _malloc_settled
    if _malloc_settled:
        return
    _malloc_settled = True
    tuned = any(f"MALLOC_{name}_" in os.environ for name in _USER_MALLOC_SETTINGS)
    if tuned or "glibc.malloc" in os.environ.get("GLIBC_TUNABLES", "") or os.environ.get(MALLOC_ENV) == "default":
        return
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):  # not glibc
        return
    mallopt(_M_TRIM_THRESHOLD, KEEP_FREED_BYTES)
    mallopt(_M_MMAP_THRESHOLD, HEAP_BLOCKS_UP_TO)


# --------------------------------------------------------------------------------------------------
# 8. LEGACY: LMDBs of the folder2lmdb recipe (Efficient-PyTorch and its many copies). Opt-in only.
# --------------------------------------------------------------------------------------------------
# Their values are pickled ``(image_bytes, label)`` tuples under keys b"0", b"1", ... (not padded),
# with pickled b"__len__" and b"__keys__". Unpickling runs code named in the file, so nothing here
# is reached unless the user passes allow_pickle=True (or runs convert_legacy.py). Even then the
# legacy unpickler below builds only what these files legitimately hold (bytes, ints, lists,
# tuples, numpy scalars) and refuses any other global, as torch.load(weights_only=True) does.

LEGACY_KEYS = (b"__len__", b"__keys__")

#: The only globals a legacy value may name: protocol-2 pickles build bytes through _codecs.encode,
#: numpy labels through numpy's scalar constructor. Nothing else is ever imported or called.
_LEGACY_PICKLE_GLOBALS = frozenset(
    {
        ("_codecs", "encode"),
        ("builtins", "bytes"),
        ("builtins", "bytearray"),
        ("numpy", "dtype"),
        ("numpy.core.multiarray", "scalar"),
        ("numpy._core.multiarray", "scalar"),
    }
)


class _LegacyUnpickler(pickle.Unpickler):  # legacy, allow_pickle=True only: restricted globals
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in _LEGACY_PICKLE_GLOBALS:
            raise pickle.UnpicklingError(f"refusing to load the global {module}.{name} named in the file")
        return super().find_class(module, name)


def is_legacy_pickle_lmdb(txn: _ReadTxn) -> bool:
    """Whether the environment looks like a folder2lmdb file (checked without unpickling)."""
    return any(txn.get(key) is not None for key in LEGACY_KEYS)


def legacy_loads(data: bytes | memoryview, what: str) -> Any:
    """Unpickle one legacy value with the restricted legacy unpickler (allow_pickle=True only)."""
    try:
        # encoding="bytes": Python 2 pickles (str image data) come back as bytes, not text.
        return _LegacyUnpickler(io.BytesIO(data), encoding="bytes").load()  # legacy, allow_pickle only
    except Exception as exc:  # whatever the bytes hold, the answer is "not readable"
        raise FormatError(
            f"{what}: not a pickle this reader accepts ({type(exc).__name__}: {exc}). Only pickled "
            "(image bytes, integer label) records are read; files written with pyarrow.serialize "
            "(removed from pyarrow) are not supported."
        ) from exc


def legacy_keys(txn: _ReadTxn, where: str) -> list[bytes]:
    """The record keys of a legacy file in index order: ``__keys__`` if present, else 0..__len__-1."""
    raw_keys = txn.get(b"__keys__")
    if raw_keys is not None:
        keys = legacy_loads(raw_keys, f"{where}: __keys__")
        if not isinstance(keys, list | tuple) or not all(isinstance(k, bytes) for k in keys):
            raise FormatError(f"{where}: __keys__ is not a list of byte strings")
        return list(keys)
    length = legacy_loads(txn.get(b"__len__"), f"{where}: __len__")
    if not isinstance(length, int) or length < 0:
        raise FormatError(f"{where}: __len__ is not a record count")
    return [str(index).encode("ascii") for index in range(length)]


def legacy_record(value: bytes | memoryview | None, what: str) -> tuple[bytes, int]:
    """The ``(image bytes, label)`` of one legacy value; ``what`` names the record in errors."""
    if value is None:
        raise FormatError(f"{what}: the record is missing")
    record = legacy_loads(value, what)
    if not isinstance(record, tuple | list) or len(record) < 2:
        raise FormatError(f"{what}: expected an (image bytes, label) tuple, found {type(record).__name__}")
    image, label = record[0], record[1]
    if not isinstance(image, bytes | bytearray):
        raise FormatError(
            f"{what}: the image is a {type(image).__name__}, not encoded image bytes; only files that "
            "store the image files' bytes are supported"
        )
    try:
        label = operator.index(label)
    except TypeError as exc:
        raise FormatError(f"{what}: the label {label!r} is not an integer") from exc
    if label < 0:
        raise FormatError(f"{what}: negative label {label}")
    return bytes(image), label


class _LegacyRecords:
    """LEGACY (allow_pickle=True): folder2lmdb records, each a pickled ``(image bytes, label)``
    under its own key, read through LMDB and unpickled with the restricted legacy unpickler. Their
    values may be any format (PNG, CMYK JPEG, ...), so Pillow decodes them, and their labels are
    their own."""

    legacy = True
    by_offset = False

    def __init__(self, path: str, keys: list[bytes]) -> None:
        self.path = path
        self.keys = keys  # record keys in index order (legacy_keys)

    def record(self, txn: _ReadTxn, index: int) -> tuple[bytes, int]:
        """The ``(image bytes, label)`` of record ``index``."""
        key = self.keys[index]
        return legacy_record(txn.get(key), f"{self.path}: legacy record {key.decode('utf-8', 'backslashreplace')!r}")

    def read(self, positions: list[int], decode: str, begin: _Begin, targets: list[int]) -> list[tuple[Any, int]]:
        with begin() as txn:
            batch = []
            for index in positions:
                data, target = self.record(txn, index)
                batch.append((_decode(data, decode, jpeg=False), target))
        return batch

    def get_bytes(self, index: int, begin: _Begin) -> bytes:
        with begin() as txn:
            return self.record(txn, index)[0]


def _open_legacy(txn: _ReadTxn, path: str) -> _Opened:
    """LEGACY (allow_pickle=True): index a folder2lmdb file; reads every record for its label."""
    records = _LegacyRecords(path, legacy_keys(txn, path))
    targets = [records.record(txn, index)[1] for index in range(len(records.keys))]
    classes = [str(label) for label in range(max(targets, default=-1) + 1)]
    names = [key.decode("utf-8", "backslashreplace") for key in records.keys]
    document = {"format": "folder2lmdb (legacy pickle)", "length": len(targets)}
    return _Opened(records, document, classes, names, targets, meta=None)


# --------------------------------------------------------------------------------------------------
# 9. The dataset.
# --------------------------------------------------------------------------------------------------


def _check_options(decode: str, lock: bool, max_readers: int | None) -> None:
    """Refuse LMDBReader arguments that cannot work, before anything is opened."""
    if decode not in DECODE_CHOICES:
        raise ValueError(f"decode={decode!r}: choose one of {', '.join(map(repr, DECODE_CHOICES))}")
    if max_readers is not None and not lock:
        raise ValueError(
            "max_readers applies only with lock=True: with lock=False (the default) LMDB keeps no "
            "reader table, so any number of workers and ranks can read at once"
        )
    if max_readers is not None and max_readers < 1:
        raise ValueError(f"max_readers={max_readers}: must be at least 1")
    if decode == "tensor":
        _torchcodec_jpeg()  # fail here, not in a worker, when TorchCodec is missing


def class_words(document: dict[str, Any], classes: list[str]) -> list[str] | None:
    """meta/json's ``class_words``: the words of each class (``"tench, Tinca tinca"`` for
    ``n01440764``), written when every class is an ImageNet-1k WNID; None where the file has none
    (other classes, legacy files, files written before it existed) or they do not fit the classes."""
    words = document.get("class_words")
    if not isinstance(words, list) or len(words) != len(classes) or not all(isinstance(w, str) for w in words):
        return None
    return list(words)


def source_root(document: dict[str, Any]) -> str | None:
    """The folder the records' relative paths lie under, as meta/json's ``source.root`` records
    it; None where unknown: not a folder of the files themselves (archives, trees unpacked into the
    work folder, val images outside ``<wnid>/`` folders), or a file written before it was recorded."""
    source = document.get("source")
    root = source.get("root") if isinstance(source, dict) else None
    return root if isinstance(root, str) else None


def size_setting(document: dict[str, Any], key: str) -> int | None:
    """``short_side`` or ``max_side`` of meta/json's ``settings.encode``: the size the images were
    shrunk to at conversion; None where it was not set, or the file predates the setting."""
    settings = document.get("settings")
    encode = settings.get("encode") if isinstance(settings, dict) else None
    value = encode.get(key) if isinstance(encode, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _resized_words(short_side: int | None, max_side: int | None) -> str | None:
    """How a file's images were shrunk, for ``repr``; None when they keep the source's sizes."""
    bounds = [f"{side} side <= {n}" for side, n in (("shorter", short_side), ("longer", max_side)) if n is not None]
    return ", ".join(bounds) or None


class _Index:
    """What opening the file found, as LMDBReader shows it: ImageFolder's index (``root``, ``classes``,
    ``class_to_idx``, ``samples``, ``imgs``, ``targets``), the words of each class where the file has
    them (``class_words``), what the meta knows of each record
    without decoding it (``image_sizes``, ``checksums``, ``storage_codes``; None for a legacy
    file), and which record source reads them (``is_legacy``, ``reads_by_offset``)."""

    path: str
    _records: _Records

    def _set_index(self, opened: _Opened) -> None:
        self._records = opened.records  # where reads go; chosen by _open_records
        self.meta_document: dict[str, Any] = opened.document
        self.classes: list[str] = opened.classes
        self.class_to_idx: dict[str, int] = {name: i for i, name in enumerate(self.classes)}
        self.targets: list[int] = opened.targets
        self.samples: list[tuple[str, int]] = list(zip(opened.names, self.targets, strict=True))
        self.imgs = self.samples
        self.root: str | None = source_root(opened.document)
        # a copy prepared at a smaller size (encode.short_side, encode.max_side); None: source sizes
        self.short_side: int | None = size_setting(opened.document, "short_side")
        self.max_side: int | None = size_setting(opened.document, "max_side")
        self.class_words: list[str] | None = class_words(opened.document, self.classes)  # words of classes[k]
        meta = opened.meta
        self.image_sizes: np.ndarray | None = None if meta is None else meta.sizes  # (width, height) each
        self.checksums: np.ndarray | None = None if meta is None else meta.crc32  # CRC-32 of each value
        self.storage_codes: np.ndarray | None = None if meta is None else meta.storage  # STORAGE_REASONS

    @property
    def is_legacy(self) -> bool:
        """Whether this is a legacy folder2lmdb file read with ``allow_pickle=True``."""
        return self._records.legacy

    @property
    def reads_by_offset(self) -> bool:
        """Whether records are read with one pread each at their recorded file offsets (the fast
        path), rather than through LMDB's memory map."""
        return self._records.by_offset

    def __len__(self) -> int:
        return len(self.targets)

    def _check_index(self, index: Any) -> int:
        index = operator.index(index)  # ints, numpy integers, 0-d integer tensors
        n = len(self.targets)
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError(f"index {index} out of range for {self.path} with {n} images")
        return index

    def _require_meta(self, what: str) -> None:
        if self._records.legacy:
            raise FormatError(
                f"{self.path} is a legacy pickle LMDB: it stores no {what}. "
                "Convert it with scripts/convert_legacy.py (`imagefolder-lmdb convert-legacy`) to get them."
            )

    def storage_reason(self, index: int) -> str:
        """How record ``index`` was stored: ``passthrough`` or ``reencoded:<why>``."""
        self._require_meta("storage reasons")
        assert self.storage_codes is not None
        return STORAGE_REASONS[int(self.storage_codes[self._check_index(index)])]

    def class_counts(self) -> np.ndarray:
        """Images per class, ``int64[len(classes)]`` indexed like ``classes`` (zeros included),
        from ``targets``: e.g. ``1 / counts[targets]`` as WeightedRandomSampler weights."""
        return np.bincount(np.asarray(self.targets, dtype=np.int64), minlength=len(self.classes))

    def aspect_ratios(self) -> np.ndarray:
        """``width / height`` of each stored image, ``float64[len(self)]``, for aspect-ratio
        bucketing; from the meta's ``image_sizes``, no decoding."""
        self._require_meta("image sizes")
        assert self.image_sizes is not None
        return self.image_sizes[:, 0].astype(np.float64) / self.image_sizes[:, 1].astype(np.float64)

    # -- the offsets in use (None when reading through LMDB), for tests that look inside ----------

    @property
    def _offsets(self) -> np.ndarray | None:
        return getattr(self._records, "offsets", None)

    @_offsets.setter
    def _offsets(self, value: None) -> None:  # ds._offsets = None: read through LMDB from now on
        if value is not None:
            raise ValueError("reads by offset can only be turned off, by setting _offsets to None")
        if isinstance(self._records, _LocatedRecords):
            self._records.stop_reading_by_offset()

    @property
    def _lengths(self) -> np.ndarray | None:
        return getattr(self._records, "lengths", None)


# LMDBReader is the whole reader without torch's Dataset base, for tools that should not pay torch's
# import (the workflow's verify step); PyTorch code uses LMDBDataset, built on it below.
class LMDBReader(_Index):
    """An ImageFolder stored in one LMDB file: same indices, labels, classes and samples.

    ``LMDBDataset("results/train.lmdb", transform)`` replaces
    ``torchvision.datasets.ImageFolder("train/", transform)``. ``samples`` holds
    ``(relative path, class index)`` pairs, ``"class/file.JPEG"``, since the source need not exist
    where the dataset is read; ``root`` is the folder they were converted from (absolute, as it was
    then), so ``os.path.join(ds.root, ds.samples[i][0])`` is ImageFolder's ``samples[i][0]``, or
    None where the images were not files under one folder (archives, unpacked archives, ILSVRC val
    images outside ``<wnid>/`` folders) or the file predates it. Assign it if the source moved.
    ``targets``, ``class_counts()``, ``image_sizes`` and ``aspect_ratios()`` come from the meta,
    without decoding any image. ``short_side`` (and ``max_side``) say whether the file is a copy
    prepared at a smaller size: larger images were shrunk so that their shorter side is
    ``short_side`` (``storage_reason(i) == "reencoded:resized"``); None for the source's sizes.
    ``class_words[k]`` names ``classes[k]`` in words (``"tench, Tinca
    tinca"`` for ``n01440764``) where every class is an ImageNet-1k WNID; else it is None.

    ``decode`` chooses what ``transform`` receives (and what a sample holds without one):
      - ``"pil"`` (default): an RGB ``PIL.Image``, exactly as ImageFolder's loader makes it;
      - ``"tensor"``: a uint8 ``(3, H, W)`` RGB tensor from TorchCodec's ``decode_jpeg`` (``pip
        install torchcodec``; no FFmpeg needed), the JPEG read straight into a tensor (no extra copy
        of it), for transforms v2. Values stored as-is (PNG, BMP, ...) and JPEGs whose EXIF
        orientation TorchCodec would apply go through Pillow. Pixel-equal to ``"pil"`` with the
        pinned TorchCodec and Pillow (both libjpeg-turbo; tests check it); other builds may differ
        slightly;
      - ``"bytes"``: the stored bytes (a JPEG unless stored as-is), e.g. for GPU decoding.

    Reads: files written by the workflow record where each record lies in the file
    (``meta/locations``), so a record is one ``os.pread`` (``reads_by_offset``), also on a cold
    cache or a network filesystem, where LMDB's memory map faults in one 4 KB page at a time. They
    are checked when the file is opened (its LMDB transaction id, their checksum, their shape, and
    a spread of records against their CRC-32); a file they do not fit (e.g. a compacting
    ``mdb_copy -c``, or damage) is read through LMDB with a one-time LocationsWarning, as are older
    files without them, silently, and every file opened with ``lock=True``.
    ``scripts/add_locations.py FILE`` records them in a file.

    Damaged files: a file shorter than its LMDB header says (an interrupted copy) is refused with
    TruncatedFileError before LMDB maps it, and the pages on the way to each key LMDB is asked for
    are checked first (``PageGuard``), so damage gives a FormatError with a message, not a crash
    (``lock=True`` readers, whose file a writer may change, are not page-checked).
    ``scripts/verify.py FILE --full`` checks every page and record.

    Batches: ``__getitems__(indices)`` reads a batch together: when its records are not in the
    page cache, the kernel is asked for all of them at once (``posix_fadvise(WILLNEED)``), so their
    reads queue up together instead of one after the other; records not located are read in one
    LMDB transaction. Before its first batch a process lets glibc keep the memory a batch frees for
    the next one (``keep_freed_memory_for_reuse``; ``IMAGEFOLDER_LMDB_MALLOC=default`` leaves
    malloc as it is). DataLoader calls it by itself whenever it batches, and
    ``torch.utils.data.Subset(ds, indices)`` passes its batches through to it.
    ``DistributedSampler`` works as with any map-style dataset.

    Processes: the file is opened lazily in each process that reads it (one environment and one
    descriptor per file and process, closed before every fork), so the dataset pickles cleanly and
    works with DataLoader workers under fork, spawn and forkserver, also after the parent has read
    samples.

    ``lock=False`` (default) opens without LMDB's lock file: nothing is created beside the data,
    read-only filesystems work, and LMDB keeps no reader table, so there is no reader limit and
    ``max_readers`` does not apply (passing it raises ValueError). ``lock=True`` uses the
    ``-lock`` file's table of ``max_readers`` slots (default 126; sized by the first process that
    opens the file while no other has it open): every process reading at once on one machine
    (DataLoader workers x ranks, plus main processes) needs one while it reads; a full table is
    first cleared of slots left by dead processes, and then raises ReadersFullError naming
    workers x ranks.

    ``allow_pickle=True`` also reads LEGACY folder2lmdb files (pickled ``(image bytes, label)``
    values). Nothing of such a file is unpickled otherwise: it is refused with a FormatError. Even
    then the unpickler only builds bytes, integers and lists; classes are named ``"0"``, ``"1"``,
    ...; ``samples`` holds ``(key, label)``; opening reads every record once to learn the labels,
    and image sizes and checksums are unknown. ``scripts/convert_legacy.py`` converts such a file.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        transform: Callable[[Any], Any] | None = None,
        target_transform: Callable[[int], Any] | None = None,
        decode: Decode = "pil",
        *,
        lock: bool = False,
        max_readers: int | None = None,
        allow_pickle: bool = False,
        max_in_flight: int = 64,
        cache_dir: str | os.PathLike[str] | None = None,
        cache_bytes: int = 64 << 30,
    ) -> None:
        _check_options(decode, lock, max_readers)
        self.path = os.fspath(path)
        self.transform = transform
        self.target_transform = target_transform
        self.decode: str = decode
        self.lock = lock
        self.max_readers = max_readers
        self.allow_pickle = allow_pickle
        if _is_url(self.path):  # s3://, gs://, az://, http(s)://: imagefolder_lmdb.remote (the [remote] extra)
            from imagefolder_lmdb.remote.reading import open_remote_records

            self._set_index(open_remote_records(self.path, max_in_flight, cache_dir, cache_bytes))
            return
        if cache_dir is not None:
            raise ValueError(f"cache_dir is for datasets read from a URL; {self.path} is read in place")
        self._set_index(_open_records(self.path, self._env(), lock, allow_pickle))

    def _env(self) -> lmdb.Environment:
        return shared_env(self.path, lock=self.lock, max_readers=self.max_readers)

    def _transaction(self) -> _ReadTxn:
        """A read transaction of the file (see _begin_read): record sources open at most one per batch.
        Its ``get`` checks the pages on the way to each key first (guarded)."""
        return guarded(_begin_read(self._env(), self.path), self.path, self.lock)

    # -- reading: the record source reads, the dataset transforms ---------------------------------

    def __getitems__(self, indices: Sequence[int]) -> list[tuple[Any, Any]]:
        """Samples ``[(image, target), ...]`` of ``indices``, read together by the record source
        (by offset: _LocatedRecords.read, which hints a cold batch at once).

        DataLoader's batched fetch calls this instead of ``__getitem__`` once per sample; the list
        it returns goes to ``collate_fn``. Transforms run after every record has been read."""
        positions = [self._check_index(index) for index in indices]
        if len(positions) > 1:
            keep_freed_memory_for_reuse()
        batch = self._records.read(positions, self.decode, self._transaction, self.targets)
        return [self._finish(image, target) for image, target in batch]

    def _finish(self, image: Any, target: int) -> tuple[Any, Any]:
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        return self.__getitems__([index])[0]

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        for index in range(len(self)):
            yield self[index]

    def get_bytes(self, index: int) -> bytes:
        """The stored image bytes of record ``index`` (a JPEG unless stored-as-is)."""
        return self._records.get_bytes(self._check_index(index), self._transaction)

    def check_crc(self, index: int) -> bool:
        """Whether record ``index`` still has the CRC-32 recorded when it was written."""
        self._require_meta("checksums")
        assert self.checksums is not None
        return checksum(self.get_bytes(index)) == int(self.checksums[self._check_index(index)])

    def __getstate__(self) -> dict[str, Any]:
        # Nothing process-specific lives on the instance or its record source: environments and
        # descriptors are in the module's per-process table.
        return self.__dict__.copy()

    def __repr__(self) -> str:
        return _described(self)


def _is_url(path: str) -> bool:
    """Whether ``path`` names an object in a store or on an HTTP server rather than a file."""
    return re.match(r"(s3|s3a|gs|az|azure|abfs|abfss|adl|https?)://", path, re.IGNORECASE) is not None


def _described(ds: LMDBReader) -> str:
    """``repr(ds)``, in the form of ImageFolder's."""
    lines = [
        f"Dataset {type(ds).__name__}",
        f"    Number of datapoints: {len(ds)}",
        f"    Path: {ds.path}",
        f"    Root location: {ds.root}",  # as ImageFolder's repr names its folder
        f"    Classes: {len(ds.classes)}",
        f"    Decode: {ds.decode}",
    ]
    if ds.is_legacy:
        lines.append("    Layout: legacy folder2lmdb pickle (allow_pickle=True)")
    resized = _resized_words(ds.short_side, ds.max_side)
    if resized:
        lines.append(f"    Resized at conversion: {resized}")
    if ds.transform is not None:
        lines.append(f"    Transform: {ds.transform!r}")
    return "\n".join(lines)


def _build_dataset_class() -> type:
    """``LMDBDataset``: the methods above on top of ``torch.utils.data.Dataset``, as ImageFolder is."""
    from torch.utils.data import Dataset

    cls = type("LMDBDataset", (LMDBReader, Dataset), {"__module__": __name__})
    cls.__doc__ = LMDBReader.__doc__
    return cls


def __getattr__(name: str) -> Any:
    # PEP 562: `from dataset import LMDBDataset` (and unpickling one) builds the class once, importing
    # torch then; the writers never ask for it. Cached in the module, so pickle finds the same class.
    if name == "LMDBDataset":
        cls = globals()["LMDBDataset"] = _build_dataset_class()
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if TYPE_CHECKING:
    LMDBDataset = LMDBReader
