"""The on-disk format (docs/FORMAT.md is its prose): record keys, meta keys and arrays, storage codes,
``Meta`` with its encoder and decoder, ``FormatError``. The writers import their encoders from here, so
writer and reader cannot drift apart. No pickle: meta is JSON plus little-endian numeric arrays.

Every CRC-32 of the project is :func:`checksum` (the writers', ``merge``'s, ``verify``'s, the record
locations', and every record read, local or remote). It is zlib's CRC-32, so the format is the same
whichever library computes it; zlib-ng computes it (a base requirement), else the first of isal,
deflate and CPython's zlib that is installed (CRC32_LIBRARIES). Why zlib-ng (issue 50, measured on
one core: 110 KB in 2 us against zlib's 26 us, 1 MB in 18 us against 235 us; isal and deflate the
same speed): a portable C library that picks its code at run time (x86-64 PCLMUL/VPCLMUL, ARMv8
CRC32/PMULL, POWER, s390x, a C loop elsewhere), wheels for Linux x86-64 and aarch64, macOS and
Windows, PSF-2.0 and zlib licences, a binding that is CPython's zlib module code, so it releases the
GIL above 5 KB as zlib.crc32 does (deflate's holds it), kept by the maintainers who keep isal, in a
third of isal's wheel size.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from imagefolder_lmdb.reader import meta_checks
from imagefolder_lmdb.reader.codec import WEBP_VERSION
from imagefolder_lmdb.reader.format_targets import (
    MULTI_LABEL,
    SINGLE_LABEL,
    FieldColumn,
    LabelLists,
    declared_fields,
    field_problems,
    fields_entry,
    label_lists_problems,
    pack_fields,
    pack_label_lists,
    unpack_fields,
    unpack_label_lists,
)
from imagefolder_lmdb.reader.format_unlabelled import UNLABELLED, UNLABELLED_VERSION, label_kinds, labels_problem
from imagefolder_lmdb.reader.keys import CRC32_LIBRARIES as CRC32_LIBRARIES
from imagefolder_lmdb.reader.keys import CRC32_LIBRARY as CRC32_LIBRARY
from imagefolder_lmdb.reader.keys import KEY_WIDTH as KEY_WIDTH
from imagefolder_lmdb.reader.keys import MAX_RECORDS as MAX_RECORDS
from imagefolder_lmdb.reader.keys import META_KEYS as META_KEYS
from imagefolder_lmdb.reader.keys import RECOPY_ADVICE as RECOPY_ADVICE
from imagefolder_lmdb.reader.keys import FormatError as FormatError
from imagefolder_lmdb.reader.keys import checksum as checksum
from imagefolder_lmdb.reader.keys import fastest_crc32 as fastest_crc32
from imagefolder_lmdb.reader.keys import record_key as record_key


class ReadTxn(Protocol):
    """What the meta is read through: LMDB's read transaction, or one whose gets check the pages on
    the way first (file_checks.py, which raises this module's errors: so named here, not imported)."""

    def get(self, key: bytes, default: Any = None) -> Any: ...


FORMAT_ID = "imagefolder-lmdb"
#: The newest version of a single file. Versions 2 and 7 add storage codes (9, a PNG value; 10-16, WebP:
#: reader/codec.py); a writer writes the oldest version that holds its records (format_version_of), so a
#: file without such records stays readable by older readers, and one with them is refused by those
#: readers (by its version) instead of being decoded as JPEG.
FORMAT_VERSION = WEBP_VERSION
READABLE_VERSIONS = (1, 2, 3, 4, UNLABELLED_VERSION, WEBP_VERSION)  # 5: a pointer (reader/revision_format.py)
#: Version 3 is version 2 whose meta/paths may hold names that are not valid UTF-8 (a latin-1
#: ``caf\xe9.jpg``), stored as the file system gave their bytes; written only by a file that has such a
#: name (``encode_meta``), so that an older reader refuses it instead of calling the file damaged.
NAMES_AS_BYTES_VERSION = 3
#: Version 4 is version 3 with several labels per image (meta/label_lists) and typed per-image fields
#: (meta/fields); written only by a file that has either, so that an older reader refuses it instead of
#: reading a multi-label file's meta/labels (no class: NO_SINGLE_LABEL) as its labels.
TARGETS_VERSION = 4

#: Where each record's value lies in the file: byte offset and length, so that a reader can fetch
#: it with one pread instead of LMDB's page-by-page faults. Offset 0 means "not located, read
#: through LMDB". Valid only for the file whose LMDB transaction id meta/json records under
#: "locations" (a compacting copy rewrites every page); see LMDBReader and scripts/add_locations.py.
LOCATION_DTYPE = np.dtype([("offset", "<u8"), ("length", "<u4")])

#: The meta arrays whose CRC-32 meta/json records under "checksums" (meta/locations has its own,
#: under "locations": the reader can do without it, so its damage only slows reads down).
CHECKSUMMED_ARRAYS = ("labels", "sizes", "crc32", "storage", "source_bytes", "paths")
#: The version-4 keys, checksummed under their names too where a file has them.
CHECKSUMMED_TARGETS = ("label_lists", "fields")

#: The meta/json fields whose CRC-32 it records under "checksums" too: a byte flipped inside a
#: class name leaves the JSON valid, and would rename a class without a word.
CHECKSUMMED_FIELDS = ("classes", "class_words")

_ARRAY_DTYPES: dict[str, np.dtype[Any]] = {
    "labels": np.dtype("<i4"),
    "sizes": np.dtype("<u4"),
    "crc32": np.dtype("<u4"),
    "storage": np.dtype("u1"),
    "source_bytes": np.dtype("<u8"),
}


class TargetsFormatError(FormatError):
    """A version-4 file whose label lists or fields disagree with its meta (``problems``: one line each)."""

    def __init__(self, where: str, problems: list[str]) -> None:
        super().__init__(f"{where}: {'; '.join(problems)}: the file is damaged. {RECOPY_ADVICE}")
        self.problems = problems


class DamagedRecordError(FormatError):
    """A record's stored bytes do not match the CRC-32 recorded when it was written (meta/crc32)."""

    # printed under the name it is imported by, as numpy's errors are, not the defining module
    __module__ = "imagefolder_lmdb.reader"


def check_record(path: str, index: int, data: bytes | memoryview, crc32: np.ndarray | None) -> None:
    """Raise DamagedRecordError if record ``index``'s bytes ``data`` do not match ``crc32[index]``;
    ``crc32`` None: the dataset was opened with ``crc_check=False``, nothing is checked."""
    if crc32 is None or checksum(data) == crc32.item(index):
        return
    raise DamagedRecordError(damaged_record_message(path, index))


def damaged_record_message(path: str, index: int) -> str:
    """Why record ``index`` of the file at ``path`` is refused (its CRC-32), and the fix."""
    return (
        f"{path}: record {index} does not match its CRC-32 (meta/crc32): its stored bytes changed since it was "
        f"written (a damaged copy or disk). Check the file with `imagefolder-lmdb verify {path} --full` "
        f"(in a checkout: `python scripts/verify.py {path} --full`) and copy it again from an original that passes; "
        "crc_check=False turns this check off."
    )


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
    label_lists: LabelLists | None = None  # each record's class indices; None: one class each (labels)
    fields: dict[str, FieldColumn] | None = None  # each field's type and values; None: no fields
    unlabelled: bool = False  # version 6: no image has a label (meta/labels all -1)

    @property
    def length(self) -> int:
        return int(self.document["length"])

    @property
    def label_kind(self) -> str:
        return UNLABELLED if self.unlabelled else SINGLE_LABEL if self.label_lists is None else MULTI_LABEL

    def targets(self) -> list[Any]:
        """Each record's label: its class index, or (multi-label) the list of its class indices."""
        return self.labels.tolist() if self.label_lists is None else self.label_lists.lists()

    @property
    def classes(self) -> list[str]:
        return list(self.document["classes"])


def encode_meta(meta: Meta) -> dict[bytes, bytes]:
    """The meta keys and values to store, meta/json with the checksums of the arrays and class names.

    Args:
        meta (Meta): the document and the arrays; ``locations`` None stores "none located".

    Returns:
        dict[bytes, bytes]: every meta key (META_KEYS) and its value.

    Raises:
        ValueError: an array without one entry per record, or a path holding a NUL byte.
    """
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
    paths = "".join(p + "\0" for p in meta.paths)
    try:
        values[META_KEYS["paths"]] = paths.encode("utf-8")
    except UnicodeEncodeError:  # a name that is not UTF-8, kept as Python's surrogate escapes hold it
        values[META_KEYS["paths"]] = paths.encode("utf-8", "surrogateescape")
        meta.document["version"] = max(int(meta.document.get("version", 1)), NAMES_AS_BYTES_VERSION)
    # Without known locations the array says "none located": every file written from here on has
    # the key, and scripts/add_locations.py fills it in.
    locations = np.zeros(n, LOCATION_DTYPE) if meta.locations is None else meta.locations
    locations = np.ascontiguousarray(locations, dtype=LOCATION_DTYPE)
    if locations.shape != (n,):
        raise ValueError(f"meta array 'locations' has shape {locations.shape}, expected ({n},)")
    values[META_KEYS["locations"]] = locations.tobytes()
    values |= _targets_values(meta)
    # meta/json names each array's CRC-32, so a reader can tell a damaged label from a real one.
    checksums = {name: checksum(values[META_KEYS[name]]) for name in CHECKSUMMED_ARRAYS}
    checksums |= {name: checksum(values[META_KEYS[name]]) for name in CHECKSUMMED_TARGETS if META_KEYS[name] in values}
    checksums |= {name: field_checksum(meta.document[name]) for name in CHECKSUMMED_FIELDS if name in meta.document}
    values[META_KEYS["json"]] = encode_document({**meta.document, "checksums": checksums})
    return values


def _targets_values(meta: Meta) -> dict[bytes, bytes]:
    """The version-4 keys of a file with label lists or fields, its document saying so; nothing for
    any other file, which is then written as before version 4 existed."""
    values: dict[bytes, bytes] = {}
    if meta.label_lists is not None:
        values[META_KEYS["label_lists"]] = pack_label_lists(meta.label_lists)
        meta.document["label_kind"] = MULTI_LABEL
    if meta.fields:
        values[META_KEYS["fields"]] = pack_fields(meta.fields)
        meta.document["fields"] = fields_entry(meta.fields)
    if values:
        meta.document["version"] = max(int(meta.document.get("version", 1)), TARGETS_VERSION)
    if meta.unlabelled:  # and only then version 6 (or later): every other file as before it existed
        meta.document.update(
            label_kind=UNLABELLED, version=max(int(meta.document.get("version", 1)), UNLABELLED_VERSION)
        )
    return values


def encode_document(document: dict[str, Any]) -> bytes:
    """The stored form of the meta JSON document (sorted keys, so equal documents are equal bytes)."""
    return json.dumps(document, sort_keys=True, indent=1).encode("utf-8")


def _array_bytes(txn: ReadTxn, name: str, checksums: dict[str, Any]) -> bytes:
    """A meta array's stored bytes, checked against its CRC-32 in meta/json (older files: none)."""
    raw = txn.get(META_KEYS[name])
    if raw is None:
        raise FormatError(f"meta key {META_KEYS[name].decode()} is missing")
    raw = bytes(raw)
    if name in checksums and checksums[name] != checksum(raw):
        raise FormatError(f"meta/{name} does not match its checksum")
    return raw


def _array(txn: ReadTxn, name: str, checksums: dict[str, Any]) -> np.ndarray:
    return meta_checks.typed_array(_array_bytes(txn, name, checksums), name, _ARRAY_DTYPES[name])


def _locations(txn: ReadTxn) -> np.ndarray | None:
    raw = txn.get(META_KEYS["locations"])
    if raw is None:
        return None  # written before record locations existed: read through LMDB
    whole = len(raw) - len(raw) % LOCATION_DTYPE.itemsize  # a damaged size is caught by locations_problem
    return np.frombuffer(bytes(raw[:whole]), dtype=LOCATION_DTYPE)


def _names_errors(document: dict[str, Any]) -> str:
    """How meta/paths is decoded: names that are not UTF-8 kept as their bytes from version 3 on."""
    return "surrogateescape" if document["version"] >= NAMES_AS_BYTES_VERSION else "strict"


def decode_meta(txn: ReadTxn, where: str) -> Meta:
    """Read and check the meta of an open file: the JSON document, the arrays against their CRC-32,
    one entry per record in each, every label naming a class.

    Args:
        txn: a read transaction of the file (LMDB's own, or a guarded one).
        where (str): names the file in errors.

    Returns:
        Meta: the document and the arrays (``locations`` None where the file has none).

    Raises:
        FormatError: no imagefolder-lmdb meta (a legacy pickle file, an unfinished conversion, another
            LMDB), a version this reader does not know, or damage; the message says what to do.
    """
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
            sizes=meta_checks.size_pairs(_array(txn, "sizes", sums)),
            crc32=_array(txn, "crc32", sums),
            storage=_array(txn, "storage", sums),
            source_bytes=_array(txn, "source_bytes", sums),
            paths=meta_checks.path_names(_array_bytes(txn, "paths", sums), _names_errors(document)),
            locations=_locations(txn),
        )
        if document["version"] >= TARGETS_VERSION:  # earlier versions: read exactly as before it existed
            meta.label_lists, meta.fields = _label_lists(txn, document, sums), _fields(txn, document, sums)
            meta.unlabelled = document.get("label_kind") == UNLABELLED  # only a version-6 file may say so
    except (FormatError, ValueError) as exc:  # ValueError: an array of a broken size, paths not UTF-8
        raise _damaged(where, str(exc)) from exc
    _check_meta(meta, where)
    return meta


def _label_lists(txn: ReadTxn, document: dict[str, Any], checksums: dict[str, Any]) -> LabelLists | None:
    """meta/label_lists of a multi-label file (meta/json ``label_kind``); None for one class per image."""
    if document.get("label_kind", SINGLE_LABEL) in (SINGLE_LABEL, UNLABELLED):  # checked with the document
        return None
    return unpack_label_lists(_array_bytes(txn, "label_lists", checksums), document["length"])


def _fields(txn: ReadTxn, document: dict[str, Any], checksums: dict[str, Any]) -> dict[str, FieldColumn] | None:
    """meta/fields, typed as meta/json lists them; None where it lists none."""
    types = declared_fields(document)
    return unpack_fields(_array_bytes(txn, "fields", checksums), types) if types else None


def targets_problems(meta: Meta) -> list[str]:
    """What is wrong with a meta's label lists and fields, one line each (verify lists them)."""
    problems = (
        [] if meta.label_lists is None else label_lists_problems(meta.label_lists, meta.length, len(meta.classes))
    )
    for name, column in (meta.fields or {}).items():
        problems += field_problems(name, column, meta.length)
    return problems


def _check_fields(document: dict[str, Any], checksums: dict[str, Any], where: str) -> None:
    """meta/json's class names against their checksums (files written before them: none)."""
    for name in CHECKSUMMED_FIELDS:
        if name in checksums and checksums[name] != field_checksum(document.get(name)):
            raise _damaged(where, f"meta/json's {name} do not match their checksum")


def _decode_document(raw: bytes | memoryview, where: str) -> dict[str, Any]:
    """The meta JSON document, checked for what every reader relies on (reader/meta_checks.py: each
    documented entry's type); damage raises FormatError naming it and ``verify``."""
    try:
        document = meta_checks.parse_document(raw)
    except ValueError as exc:
        raise _damaged(where, f"meta/json {exc}") from None
    if document.get("format") != FORMAT_ID:
        raise FormatError(f"{where}: format is {meta_checks.quoted(document.get('format'))}, expected {FORMAT_ID!r}")
    version = document.get("version")
    if type(version) is not int or version < 1:  # true, 4.0 and "4" are no version (true read as 1: issue 57)
        raise _damaged(where, f"meta/json's version is {meta_checks.quoted(version)}, not a format version")
    if version not in READABLE_VERSIONS:
        raise FormatError(
            f"{where}: {FORMAT_ID} version {version!r}, but this reader knows "
            f"{' and '.join(f'version {known}' for known in READABLE_VERSIONS)} only; read it with the reader "
            "of the imagefolder-lmdb release that wrote it (or a newer one)"
        )
    length, classes = document.get("length"), document.get("classes")
    if type(length) is not int or not 0 <= length <= MAX_RECORDS:
        raise _damaged(where, f"meta/json has no valid record count (length {meta_checks.quoted(length)})")
    if not isinstance(classes, list) or not all(isinstance(name, str) for name in classes):
        raise _damaged(where, "meta/json has no valid list of classes")
    problems = meta_checks.entry_problems(document, targets=version >= TARGETS_VERSION, kinds=label_kinds(version))
    if problems:
        raise _damaged(where, "; ".join(problems))
    return document


def _damaged(where: str, what: str) -> FormatError:
    """The error of a damaged meta: what is wrong, then what to do."""
    return FormatError(f"{where}: {what}: the file is damaged. {RECOPY_ADVICE}")


def _check_meta(meta: Meta, where: str) -> None:
    """Every array has one entry per record, and every label names a class (meta/locations, which
    the reader can do without, is checked by locations_problem)."""
    n = meta.length
    for name in ("labels", "sizes", "crc32", "storage", "source_bytes", "paths"):
        if len(getattr(meta, name)) != n:
            raise _damaged(where, f"meta/{name} has {len(getattr(meta, name))} entries, expected {n}")
    problems = targets_problems(meta)
    if problems:
        raise TargetsFormatError(where, problems)
    problem = labels_problem(meta.labels, meta.label_kind, len(meta.classes))  # each kind's meta/labels
    if problem:
        raise _damaged(where, problem)


def _missing_meta_message(txn: ReadTxn, where: str) -> str:
    if is_legacy_pickle_lmdb(txn):
        return (
            f"{where} is a legacy LMDB of pickled (image, label) records (the folder2lmdb layout: keys "
            f"'0', '1', ..., '__len__', '__keys__'), not {FORMAT_ID}. Unpickling runs code stored in the "
            "file, so it is not read by default. Convert it once with "
            "`imagefolder-lmdb convert-legacy IN.lmdb OUT.lmdb [--classes classes.txt]` (in a checkout: "
            "`python scripts/convert_legacy.py IN.lmdb OUT.lmdb`), or, for a file "
            "you trust, read it as it is with LMDBDataset(path, allow_pickle=True) (a restricted "
            "unpickler that only builds bytes, numbers and lists)."
        )
    if any(txn.get(key) is not None for name, key in META_KEYS.items() if name != "json"):
        # write_meta stores every meta key in one transaction: some without meta/json is damage
        return f"{where} holds meta arrays but no meta/json: the file is damaged. {RECOPY_ADVICE}"
    if txn.get(record_key(0)) is not None:
        return (
            f"{where} has image records but no {FORMAT_ID} meta: the conversion did not finish. "
            "Run the same snakemake command again to complete it."
        )
    return f"{where} is an LMDB, but not an {FORMAT_ID} dataset (no meta/json key)."


LEGACY_KEYS = (b"__len__", b"__keys__")


def is_legacy_pickle_lmdb(txn: ReadTxn) -> bool:
    """Whether the environment looks like a folder2lmdb file (checked without unpickling)."""
    return any(txn.get(key) is not None for key in LEGACY_KEYS)
