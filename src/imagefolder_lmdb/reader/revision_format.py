"""The format of a split of revisions (docs/FORMAT.md, "A split of revisions (version 5)"): the pointer
at ``OUT/<split>.lmdb``, its keys and arrays, where its data files lie, and ``Revision`` with its
encoder and decoder. The reader (reader/revisions.py) and the writer (writing/revisions.py) both take
them from here, so they cannot drift apart. No pickle: JSON plus little-endian numeric arrays."""

from __future__ import annotations

import json
import os
import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from imagefolder_lmdb.reader.format import FORMAT_ID, RECOPY_ADVICE, FormatError, ReadTxn, checksum, encode_document

#: The pointer's format version: the next after the split files' 1 to 4, so that every earlier reader,
#: which checks ``format`` and then ``version`` before anything else in meta/json, refuses a pointer.
POINTER_VERSION = 5
#: meta/json's ``layout`` of a pointer.
LAYOUT = "revisions"
#: The folder beside the pointer holding its data files: ``OUT/train.lmdb`` -> ``OUT/train.lmdb.d``.
DATA_FOLDER_SUFFIX = ".d"
POINTER_JSON = b"meta/json"
#: Sample i of a revision: record ``record`` of the revision's data file ``files[file]``.
ORDER_DTYPE = np.dtype([("file", "<u4"), ("record", "<u4")])
#: A record of the parent no longer held: its file (an index into ``removed_from``), record and CRC-32.
REMOVED_DTYPE = np.dtype([("file", "<u4"), ("record", "<u4"), ("crc32", "<u4")])
#: The arrays of each revision, each under ``meta/revision/<N>/<name>`` and checksummed in its json.
REVISION_ARRAYS = ("order", "labels", "paths", "removed")
CHANGE_COUNTS = ("added", "removed", "relabelled", "moved")


def data_folder(pointer: str) -> str:
    """The folder of a split's data files, beside its pointer."""
    return pointer + DATA_FOLDER_SUFFIX


def data_file_path(pointer: str, content: str) -> str:
    """Where the data file of content id ``content`` lies for the pointer at ``pointer``."""
    return os.path.join(data_folder(pointer), f"{content}.lmdb")


def revision_key(number: int, name: str) -> bytes:
    """The key of one of revision ``number``'s values (``json`` or one of REVISION_ARRAYS)."""
    return b"meta/revision/%08d/%s" % (number, name.encode("ascii"))


def is_pointer_document(document: Any) -> bool:
    """Whether a meta/json document is a pointer's (a split of revisions), not a split file's."""
    return isinstance(document, dict) and document.get("format") == FORMAT_ID and document.get("version") == 5


@dataclass(frozen=True)
class DataFile:
    """A data file a revision reads: its content id (its name), record count and size when written (a hint)."""

    id: str
    records: int
    bytes: int

    def entry(self) -> dict[str, Any]:
        return {"id": self.id, "records": self.records, "bytes": self.bytes}


@dataclass
class Revision:
    """One revision of a split: which records of which data files, in which order, under which labels."""

    number: int
    parent: int | None
    created: str
    files: list[DataFile]
    document: dict[str, Any]  # the flattened file's meta/json, without checksums and locations
    order: np.ndarray  # ORDER_DTYPE[length]
    labels: np.ndarray  # int32[length]
    moved: dict[int, str] = field(default_factory=dict)  # position -> path, where not the data file's
    removed: np.ndarray = field(default_factory=lambda: np.zeros(0, REMOVED_DTYPE))
    removed_from: list[str] = field(default_factory=list)
    changes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CHANGE_COUNTS, 0))

    @property
    def length(self) -> int:
        return int(self.order.shape[0])

    @property
    def classes(self) -> list[str]:
        return list(self.document["classes"])


def pack_order(order: np.ndarray) -> bytes:
    """A revision's order as stored: zlib (deflate) of its ``file`` column (``uint32[n]``), then of the
    differences of its ``record`` column (``int32[n]``, the first from 0). An ImageFolder order is long runs
    of one file's consecutive records, so a change writes bytes in proportion to the change, not the split."""
    records = order["record"].astype(np.int64)
    steps = np.diff(records, prepend=0).astype("<i4")
    return zlib.compress(np.ascontiguousarray(order["file"], dtype="<u4").tobytes() + steps.tobytes())


def unpack_order(raw: bytes, length: int) -> np.ndarray:
    """The order ``pack_order`` stored, of ``length`` samples (ValueError for one of another size)."""
    packed = inflate(raw, 8 * length)
    order = np.zeros(length, ORDER_DTYPE)
    order["file"] = np.frombuffer(packed[: 4 * length], "<u4")
    records = np.cumsum(np.frombuffer(packed[4 * length :], "<i4").astype(np.int64))
    if length and not 0 <= int(records.min()) <= int(records.max()) < 1 << 32:
        raise ValueError("the order names a record outside 0..2**32-1")
    order["record"] = records
    return order


def inflate(raw: bytes, size: int) -> bytes:
    """``raw`` decompressed (zlib), exactly ``size`` bytes: ValueError for more or fewer, never more in memory."""
    stream = zlib.decompressobj()
    try:
        data = stream.decompress(raw, size)
    except zlib.error as exc:
        raise ValueError(f"a packed array is no zlib stream ({exc})") from None
    if len(data) != size or stream.unconsumed_tail or not stream.eof:
        raise ValueError(f"a packed array does not hold the {size:,} bytes its revision's length gives")
    return data


def _pack_moved(moved: dict[int, str]) -> bytes:
    positions = sorted(moved)
    names = "".join(moved[position] + "\0" for position in positions)
    head = np.array([len(positions), *positions], dtype="<u4").tobytes()
    return head + names.encode("utf-8", "surrogateescape")


def _unpack_moved(raw: bytes) -> dict[int, str]:
    count = int(np.frombuffer(raw[:4], "<u4")[0])
    positions = np.frombuffer(raw[4 : 4 * (count + 1)], "<u4").tolist()
    names = raw[4 * (count + 1) :].decode("utf-8", "surrogateescape").split("\0")[:-1]
    if len(positions) != count or len(names) != count:
        raise ValueError(f"{count} moved samples, but {len(positions)} positions and {len(names)} paths")
    return dict(zip(positions, names, strict=True))


def encode_revision(revision: Revision) -> tuple[dict[str, Any], dict[bytes, bytes]]:
    """Revision's entry of the pointer's ``revisions`` list, and its keys and values."""
    arrays = {
        "order": pack_order(revision.order),
        "labels": zlib.compress(np.ascontiguousarray(revision.labels, dtype="<i4").tobytes()),
        "paths": _pack_moved(revision.moved),
        "removed": np.ascontiguousarray(revision.removed, dtype=REMOVED_DTYPE).tobytes(),
    }
    body = {
        "document": revision.document,
        "removed_from": revision.removed_from,
        "checksums": {name: checksum(value) for name, value in arrays.items()},
    }
    values = {revision_key(revision.number, name): value for name, value in arrays.items()}
    values[revision_key(revision.number, "json")] = encode_document(body)
    entry = {
        "revision": revision.number,
        "parent": revision.parent,
        "created": revision.created,
        "length": revision.length,
        "files": [file.entry() for file in revision.files],
        "changes": revision.changes,
        "crc32": checksum(values[revision_key(revision.number, "json")]),
    }
    return entry, values


def encode_pointer(current: int, entries: list[dict[str, Any]]) -> bytes:
    """The pointer's meta/json: the current revision and every kept revision's entry, ascending."""
    document = {
        "format": FORMAT_ID,
        "version": POINTER_VERSION,
        "layout": LAYOUT,
        "revision": current,
        "revisions": sorted(entries, key=lambda entry: int(entry["revision"])),
    }
    return encode_document(document)


def printable_layout(document: Any) -> str:
    layout = document.get("layout") if isinstance(document, dict) else None
    return repr(layout)[:40]


def decode_pointer(raw: bytes | memoryview, where: str) -> dict[str, Any]:
    """A pointer's meta/json, checked: its layout, current revision and revisions list."""
    try:
        document = json.loads(bytes(raw))
    except (ValueError, RecursionError) as exc:
        raise FormatError(f"{where}: meta/json is not valid JSON ({exc}); the file is damaged") from exc
    if not is_pointer_document(document) or document.get("layout") != LAYOUT:
        raise FormatError(
            f"{where}: meta/json says version 5, a split of revisions, but is no pointer's (layout "
            f"{printable_layout(document)}): the file is damaged. {RECOPY_ADVICE}"
        )
    entries = document.get("revisions")
    if not isinstance(entries, list) or not entries or not all(_sound_entry(entry) for entry in entries):
        raise FormatError(f"{where}: meta/json's revisions list is damaged. {RECOPY_ADVICE}")
    if document.get("revision") not in [entry["revision"] for entry in entries]:
        raise FormatError(
            f"{where}: meta/json's current revision {document.get('revision')!r} is not among its revisions"
        )
    return document


def _sound_entry(entry: Any) -> bool:
    return (
        isinstance(entry, dict)
        and type(entry.get("revision")) is int
        and type(entry.get("length")) is int
        and isinstance(entry.get("files"), list)
        and all(isinstance(file, dict) and isinstance(file.get("id"), str) for file in entry["files"])
    )


def entry_of(pointer: dict[str, Any], number: int | None, where: str) -> dict[str, Any]:
    """The revisions entry of revision ``number`` (None: the current one); FormatError naming those kept."""
    wanted = pointer["revision"] if number is None else number
    for entry in pointer["revisions"]:
        if entry["revision"] == wanted:
            return dict(entry)
    kept = ", ".join(str(entry["revision"]) for entry in pointer["revisions"])
    raise FormatError(
        f"{where}: revision={wanted} is not kept (the pointer keeps revisions {kept}; `imagefolder-lmdb gc "
        "--keep` drops the oldest); open one of those, or the current one: LMDBDataset(path)"
    )


def decode_revision(txn: ReadTxn, entry: dict[str, Any], where: str) -> Revision:
    """Revision ``entry`` read from the pointer, its json and arrays each checked against its CRC-32."""
    number = int(entry["revision"])
    try:
        raw = _value(txn, revision_key(number, "json"), entry.get("crc32"))
        body = json.loads(raw)
        sums = body["checksums"]
        arrays = {name: _value(txn, revision_key(number, name), sums.get(name)) for name in REVISION_ARRAYS}
        revision = Revision(
            number=number,
            parent=entry.get("parent"),
            created=str(entry.get("created")),
            files=[DataFile(str(f["id"]), int(f["records"]), int(f.get("bytes", 0))) for f in entry["files"]],
            document=body["document"],
            order=unpack_order(arrays["order"], int(entry["length"])),
            labels=np.frombuffer(inflate(arrays["labels"], 4 * int(entry["length"])), "<i4"),
            moved=_unpack_moved(arrays["paths"]),
            removed=np.frombuffer(arrays["removed"], REMOVED_DTYPE),
            removed_from=list(body["removed_from"]),
            changes=dict(entry.get("changes", {})),
        )
    except (KeyError, TypeError, ValueError, RecursionError) as exc:
        raise FormatError(f"{where}: revision {number} is damaged ({exc}). {RECOPY_ADVICE}") from exc
    _check_revision(revision, f"{where}: revision {number}")
    return revision


def _value(txn: ReadTxn, key: bytes, expected: Any) -> bytes:
    raw = txn.get(key)
    if raw is None:
        raise ValueError(f"{key.decode()} is missing")
    raw = bytes(raw)
    if expected is None or checksum(raw) != expected:
        raise ValueError(f"{key.decode()} does not match its checksum")
    return raw


def _check_revision(revision: Revision, where: str) -> None:
    """Every sample names a file and record of the revision, every label a class, every moved sample a position."""
    problems = []
    n, classes, order = revision.length, len(revision.classes), revision.order
    if revision.labels.shape[0] != n or revision.document.get("length") != n:
        problems.append(
            f"{revision.labels.shape[0]} labels and a document of {revision.document.get('length')} for {n} samples"
        )
    if n and int(order["file"].max()) >= len(revision.files):
        problems.append("a sample names a data file the revision does not list")
    records = np.array([file.records for file in revision.files], dtype=np.int64)
    if n and not problems and (order["record"].astype(np.int64) >= records[order["file"]]).any():
        problems.append("a sample names a record past its data file's end")
    if n and not 0 <= int(revision.labels.min()) <= int(revision.labels.max()) < classes:
        problems.append(f"a label outside 0..{classes - 1}")
    if any(not 0 <= position < n for position in revision.moved):
        problems.append("a moved sample outside the revision")
    if problems:
        raise FormatError(f"{where}: {'; '.join(problems)}: the pointer is damaged. {RECOPY_ADVICE}")
