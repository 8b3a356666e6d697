"""meta/json parsed and its entries' types checked (docs/FORMAT.md, ``meta/json``), before the reader,
``info`` or ``verify`` takes anything from it. reader/format.py asks here and raises its FormatError:
a document that is no UTF-8 JSON object of the documented shape is damage (issue 57), never a
traceback further on (a nesting bomb's RecursionError, ``"tool": 5`` in ``info``) or a value read as
another type (``"version": true`` as version 1, ``"checksums": 5`` as no checksums).

An entry a file lacks is left alone: files written before it existed lack it (docs/FORMAT.md says
what a reader takes it as). Only an entry that is there must have its type. The arrays beside it are
read as their types here too, a size no such array has named as such.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from imagefolder_lmdb.reader.format_targets import LABEL_KINDS

#: How deep meta/json's values may nest: the writers' nest a few levels (``made_from``'s are the deepest).
#: Deeper is damage, refused before anything walks it by recursion (json.dumps, a digest).
MAX_DEPTH = 32
#: The most characters of a value an error quotes: a damaged value may be megabytes.
QUOTED = 60
#: The largest value a CRC-32 takes.
CRC_MAX = 2**32 - 1


def quoted(value: Any) -> str:
    """``repr(value)``, cut to :data:`QUOTED` characters."""
    text = repr(value)
    return text if len(text) <= QUOTED else text[: QUOTED - 3] + "..."


def _depth(value: Any) -> int:
    """How deep JSON ``value`` nests (a scalar: 0), walked without recursion. Only containers are
    pushed: a table of a thousand class names costs one pass at C speed, not a thousand steps."""
    if not isinstance(value, dict | list):
        return 0
    deepest, pending = 0, [(value, 1)]
    while pending:
        item, level = pending.pop()
        deepest = max(deepest, level)
        if deepest > MAX_DEPTH:
            break
        children = item.values() if isinstance(item, dict) else item
        pending.extend((child, level + 1) for child in children if isinstance(child, dict | list))
    return deepest


def parse_document(raw: bytes | memoryview) -> dict[str, Any]:
    """meta/json's stored bytes as the JSON object they must be; ValueError (its words follow
    "meta/json") for bytes that are not UTF-8, not JSON, not an object, or nested too deep."""
    try:
        text = bytes(raw).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"is not UTF-8 (byte {exc.start})") from None
    try:
        document = json.loads(text)
    except RecursionError:  # a nesting bomb: json's scanner recurses once per level
        raise ValueError(f"nests deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:
        raise ValueError(f"is not valid JSON ({quoted(str(exc))})") from None
    if not isinstance(document, dict):
        raise ValueError(f"is a JSON {type(document).__name__} ({quoted(document)}), not an object")
    if _depth(document) > MAX_DEPTH:
        raise ValueError(f"nests deeper than {MAX_DEPTH} levels")
    return document


@dataclass(frozen=True)
class Kind:
    """What a documented entry holds: ``what`` in words, ``fits`` the test of a value; an object's
    named ``entries`` (each where present) or ``every`` value of it, and a list's ``every`` item,
    are checked in turn."""

    what: str
    fits: Callable[[Any], bool]
    entries: dict[str, Kind] = field(default_factory=dict)
    every: Kind | None = None


def _whole(value: Any) -> bool:
    return type(value) is int and value >= 0  # not bool: JSON's true is no count


TEXT = Kind("a string", lambda value: type(value) is str)
COUNT = Kind("a whole number", _whole)
CRC = Kind("a CRC-32 (0..2**32-1)", lambda value: _whole(value) and value <= CRC_MAX)
TEXT_OR_NULL = Kind("a string or null", lambda value: value is None or type(value) is str)
SIDE = Kind("a whole number above 0, or null", lambda value: value is None or (_whole(value) and value > 0))
SCALAR = Kind("a string, number, true, false or null", lambda value: not isinstance(value, dict | list))


def _object(every: Kind | None = None, **entries: Kind) -> Kind:
    """An object with these named entries; ``every``: the kind of its every value (a table of names)."""
    return Kind("an object", lambda value: type(value) is dict, entries, every)


def _list(every: Kind) -> Kind:
    return Kind("a list", lambda value: type(value) is list, every=every)


#: Every entry of meta/json that docs/FORMAT.md describes, besides the four decode_meta checks first
#: (format, version, length, classes). ``made_from`` is the workflow's own: an object here.
DOCUMENT = _object(
    class_to_idx=_object(COUNT),
    class_words=_list(TEXT),
    settings=_object(encode=_object(SCALAR, short_side=SIDE, max_side=SIDE)),
    source=_object(path=TEXT, root=TEXT_OR_NULL, inside=TEXT, images=COUNT, classes=COUNT, ignored_files=COUNT),
    class_list=_object(origin=TEXT, images_outside=COUNT, classes_outside=COUNT, classes_unread=COUNT),
    stats=_object(
        source_bytes=COUNT,
        stored_bytes=COUNT,
        storage=_object(COUNT),
        skipped=_list(_object(index=COUNT, path=TEXT, reason=TEXT)),
    ),
    storage_reasons=_object(TEXT),
    tool=_object(name=TEXT, version=TEXT),
    created=TEXT,
    checksums=_object(CRC),
    locations=_object(txnid=COUNT, located=COUNT, crc32=CRC),
    made_from=_object(),
)
#: Version 4's entries (earlier versions' documents mean nothing by them: not checked there).
TARGETS_ENTRIES = {
    "label_kind": Kind(f"one of {', '.join(map(repr, LABEL_KINDS))}", lambda value: value in LABEL_KINDS),
    "fields": _list(_object(name=TEXT, type=TEXT)),
}


def _label_kind(kinds: tuple[str, ...]) -> Kind:
    """``label_kind`` of a version whose kinds are ``kinds`` (version 6 adds "none")."""
    return Kind(f"one of {', '.join(map(repr, kinds))}", lambda value: value in kinds)


def _every_scalar_fits(value: Any, kind: Kind) -> bool:
    """Whether ``kind`` takes each value of ``value`` (a list or object) as a scalar of one kind and each
    fits it: a table of class names checked at C speed, no per-entry walk needed (none is wrong)."""
    every = kind.every
    if every is None or every.entries or every.every is not None:
        return False
    return all(map(every.fits, value if isinstance(value, list) else value.values()))


def _problems(value: Any, kind: Kind, where: str) -> list[str]:
    """What in ``value`` (at ``where``, a dotted path) is not of ``kind``."""
    if not kind.fits(value):
        return [f"{where} is {quoted(value)}, not {kind.what}"]
    found = []
    every = None if _every_scalar_fits(value, kind) else kind.every
    if every is not None:
        inner = enumerate(value) if isinstance(value, list) else value.items()
        for key, item in inner:
            found += _problems(item, every, f"{where}[{key}]" if isinstance(key, int) else f"{where}.{key}")
    for name, entry in kind.entries.items():
        if name in value:
            found += _problems(value[name], entry, f"{where}.{name}")
    return found


def entry_problems(document: dict[str, Any], targets: bool, kinds: tuple[str, ...] = LABEL_KINDS) -> list[str]:
    """Each documented entry of ``document`` that is there with another type, in words (``meta/json's
    stats.storage is 5, not an object``); ``targets``: a version-4 file (or later), whose label kind
    (one of ``kinds``, its version's) and fields are checked too."""
    entries = {**TARGETS_ENTRIES, "label_kind": _label_kind(kinds)} if targets else {}
    kind = _object(**DOCUMENT.entries, **entries)
    return [problem.replace("meta/json.", "meta/json's ", 1) for problem in _problems(document, kind, "meta/json")]


# -- the arrays beside it ----------------------------------------------------------------------------


def typed_array(raw: bytes, name: str, dtype: np.dtype[Any]) -> np.ndarray:
    """meta/``name``'s bytes as an array of ``dtype``; ValueError for a size no such array has."""
    if len(raw) % dtype.itemsize:
        raise ValueError(f"meta/{name} holds {len(raw)} bytes, not a whole number of {dtype.itemsize}-byte entries")
    return np.frombuffer(raw, dtype=dtype)


def size_pairs(sizes: np.ndarray) -> np.ndarray:
    """meta/sizes as (width, height) rows; ValueError for an odd count of numbers."""
    if len(sizes) % 2:
        raise ValueError(f"meta/sizes holds {len(sizes)} numbers, not (width, height) pairs")
    return sizes.reshape(-1, 2)


def path_names(raw: bytes, errors: str) -> list[str]:
    """meta/paths' names, each ended by a NUL byte; ValueError for bytes that are not UTF-8 where the
    version takes none as bytes (``errors``: "strict", or "surrogateescape" from version 3 on)."""
    try:
        return raw.decode("utf-8", errors).split("\0")[:-1]
    except UnicodeDecodeError as exc:
        raise ValueError(f"meta/paths is not UTF-8 (byte {exc.start}), which names are before version 3") from None
