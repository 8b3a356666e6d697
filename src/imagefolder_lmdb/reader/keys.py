"""The format's record keys, meta keys, record checksum and ``FormatError`` (reader/format.py names
them too, docs/FORMAT.md says what they are), with no numpy: the rule jobs that write records (encode_shard, merge) and
write_pointer need only these, and numpy is a third of a job's start. Why zlib-ng computes the CRC-32:
reader/format.py's docstring.
"""

from __future__ import annotations

import importlib
import zlib
from collections.abc import Callable
from typing import Any

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
    "storage": b"meta/storage",  # uint8, how each record was stored (reader/codec.py, STORAGE)
    "source_bytes": b"meta/source_bytes",  # uint64 little-endian size of each source file
    "paths": b"meta/paths",  # UTF-8 relative paths, each followed by one NUL byte
    "locations": b"meta/locations",  # LOCATION_DTYPE per record; optional (older files lack it)
    "label_lists": b"meta/label_lists",  # uint32 offsets[n + 1], then int32 class indices; multi-label only
    "fields": b"meta/fields",  # UTF-8 JSON, each field's values in index order; only where fields exist
}

#: A meta copy of a published file (writing/revision_copy.py): the object it copies, and each record's size.
#: Its locations are the published file's and none of its records are in it.
PUBLISHED_COPY_KEY = b"meta/published_copy"
PUBLISHED_LENGTHS_KEY = b"meta/published_lengths"


def record_key(index: int) -> bytes:
    """Key of record ``index``: fixed-width decimal, so byte order equals numeric order."""
    if not 0 <= index < MAX_RECORDS:
        raise IndexError(f"record index {index} outside 0..{MAX_RECORDS - 1}")
    return b"%08d" % index


#: The libraries whose CRC-32 equals zlib's, most preferred first (module, function): zlib-ng is the
#: base requirement (reader/format.py's docstring); CPython's zlib, ~12x slower, is the fallback.
CRC32_LIBRARIES = (("zlib_ng.zlib_ng", "crc32"), ("isal.isal_zlib", "crc32"), ("deflate", "crc32"))


def fastest_crc32() -> tuple[Callable[[Any], int], str]:
    """The first of CRC32_LIBRARIES that imports, and its module's name; else zlib.crc32 and "zlib"."""
    for module, function in CRC32_LIBRARIES:
        try:
            return getattr(importlib.import_module(module), function), module
        except ImportError:
            continue
    return zlib.crc32, "zlib"


_crc32, CRC32_LIBRARY = fastest_crc32()


def checksum(value: bytes | bytearray | memoryview) -> int:
    """The checksum meta/crc32 records for a stored value: its CRC-32 (zlib's, unsigned), computed by
    the fastest library installed (CRC32_LIBRARY)."""
    return _crc32(value)


class FormatError(Exception):
    """The file is not a complete imagefolder-lmdb v1 dataset; the message says what to do."""

    # printed under the name it is imported by, as numpy's errors are, not the defining module
    __module__ = "imagefolder_lmdb.reader"


#: The remedy for a damaged or incomplete file: a new copy, from a source checked first.
RECOPY_ADVICE = (
    "Copy it again from the original, and check the original first with `imagefolder-lmdb verify "
    "ORIGINAL --full` (in a checkout: `python scripts/verify.py ORIGINAL --full`)."
)
