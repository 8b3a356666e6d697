"""The format's version-4 addition (docs/FORMAT.md, "Several labels per image, and fields"): each
image's list of class indices (``meta/label_lists``) and its typed fields (``meta/fields``), packed
and unpacked, and what is wrong with them. reader/format.py stores and checks them with the rest of
the meta; the writers' builder (writing/meta_document.py) and ``verify`` ask the same questions here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: How each image is labelled (meta/json ``label_kind``; absent means "single"): one class index in
#: meta/labels, or a list of them, possibly empty, in meta/label_lists.
SINGLE_LABEL, MULTI_LABEL = "single", "multi"
LABEL_KINDS = (SINGLE_LABEL, MULTI_LABEL)
#: meta/labels of a multi-label file: no image has one class, so none is named there.
NO_SINGLE_LABEL = -1

#: A field's values are one of these: a scalar, or a list of one scalar type (possibly empty).
SCALAR_FIELD_TYPES = ("int", "float", "str")
FIELD_TYPES = (*SCALAR_FIELD_TYPES, *(f"list[{scalar}]" for scalar in SCALAR_FIELD_TYPES))
#: The name a field may not take: ``target_type="label"`` is the label.
RESERVED_FIELD = "label"

OFFSET_DTYPE = np.dtype("<u4")
VALUE_DTYPE = np.dtype("<i4")


@dataclass
class LabelLists:
    """Each image's class indices: image ``i``'s are ``values[offsets[i]:offsets[i + 1]]``."""

    offsets: np.ndarray  # uint32[length + 1], offsets[0] == 0, never decreasing
    values: np.ndarray  # int32[offsets[-1]], class indices

    @classmethod
    def from_lists(cls, lists: Sequence[Sequence[int]]) -> LabelLists:
        counts = np.fromiter((len(labels) for labels in lists), dtype=np.int64, count=len(lists))
        offsets = np.zeros(len(lists) + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        values = np.fromiter((label for labels in lists for label in labels), dtype=np.int64, count=int(offsets[-1]))
        return cls(offsets.astype(OFFSET_DTYPE), values.astype(VALUE_DTYPE))

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def lists(self) -> list[list[int]]:
        """Every image's class indices, as Python lists (a dataset's ``targets``)."""
        return [part.tolist() for part in np.split(self.values, self.offsets[1:-1].astype(np.int64))]


@dataclass
class FieldColumn:
    """One field of every image: its type (FIELD_TYPES) and its value for each image, in index order."""

    type: str
    values: list[Any]


def pack_label_lists(lists: LabelLists) -> bytes:
    """meta/label_lists: the offsets, then the class indices, little-endian, nothing between."""
    return (
        np.ascontiguousarray(lists.offsets, OFFSET_DTYPE).tobytes()
        + np.ascontiguousarray(lists.values, VALUE_DTYPE).tobytes()
    )


def unpack_label_lists(raw: bytes, length: int) -> LabelLists:
    """meta/label_lists of a file of ``length`` records; ValueError for a size no such value has."""
    head = (length + 1) * OFFSET_DTYPE.itemsize
    if len(raw) < head or (len(raw) - head) % VALUE_DTYPE.itemsize:
        raise ValueError(f"meta/label_lists holds {len(raw)} bytes, which no {length} offsets and labels fill")
    return LabelLists(np.frombuffer(raw[:head], OFFSET_DTYPE), np.frombuffer(raw[head:], VALUE_DTYPE))


def label_lists_problems(lists: LabelLists, length: int, classes: int) -> list[str]:
    """What is wrong with ``lists`` for ``length`` records of ``classes`` classes, one line each."""
    offsets, problems = lists.offsets.astype(np.int64), []
    if len(offsets) != length + 1:
        return [f"meta/label_lists has {len(offsets) - 1} images' offsets, expected {length}"]
    if offsets[0] != 0 or offsets[-1] != len(lists.values) or (np.diff(offsets) < 0).any():
        problems.append(
            f"meta/label_lists' offsets do not run from 0 up to its {len(lists.values)} labels without going back"
        )
    outside = np.flatnonzero((lists.values < 0) | (lists.values >= classes))
    if len(outside):
        problems.append(
            f"meta/label_lists holds {len(outside)} labels outside 0..{classes - 1} (its {classes} classes), "
            f"the first {int(lists.values[outside[0]])}"
        )
    return problems


def _is_scalar(value: Any, scalar: str) -> bool:
    if scalar == "int":
        return type(value) is int  # not bool, not numpy's: JSON writes them as it reads them back
    if scalar == "float":
        return type(value) is float and math.isfinite(value)  # JSON has no NaN or infinity
    return type(value) is str


def value_is(value: Any, field_type: str) -> bool:
    """Whether ``value`` is one of ``field_type`` (a list type: a list of that scalar, possibly empty)."""
    if field_type.startswith("list["):
        scalar = field_type[len("list[") : -1]
        return type(value) is list and all(_is_scalar(item, scalar) for item in value)
    return _is_scalar(value, field_type)


def field_problems(name: str, column: FieldColumn, length: int) -> list[str]:
    """What is wrong with field ``name`` for ``length`` records: its name, type, count, values."""
    if not name or name == RESERVED_FIELD:
        return [f"a field is named {name!r}: a field needs a name, and {RESERVED_FIELD!r} is the label's own"]
    if column.type not in FIELD_TYPES:
        return [f"field {name!r} has type {column.type!r}; a field's type is one of {', '.join(FIELD_TYPES)}"]
    if len(column.values) != length:
        return [f"field {name!r} has {len(column.values)} values, expected one per image ({length})"]
    wrong = next((index for index, value in enumerate(column.values) if not value_is(value, column.type)), None)
    if wrong is None:
        return []
    return [f"field {name!r} is {column.type}, but image {wrong}'s value is {column.values[wrong]!r}"]


def fields_entry(fields: dict[str, FieldColumn]) -> list[dict[str, str]]:
    """meta/json's ``fields``: each field's name and type, in the order a reader lists them."""
    return [{"name": name, "type": column.type} for name, column in fields.items()]


def pack_fields(fields: dict[str, FieldColumn]) -> bytes:
    """meta/fields: one UTF-8 JSON object of each field's values in index order (their types are
    meta/json's ``fields``); sorted keys and no spaces, so equal fields are equal bytes."""
    values = {name: column.values for name, column in fields.items()}
    return json.dumps(values, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def declared_fields(document: dict[str, Any]) -> dict[str, str]:
    """meta/json's ``fields`` as {name: type}; ValueError where it is no list of names and types."""
    entry = document.get("fields", [])
    if not isinstance(entry, list) or not all(
        isinstance(item, dict) and isinstance(item.get("name"), str) and isinstance(item.get("type"), str)
        for item in entry
    ):
        raise ValueError("meta/json's fields is not a list of {name, type} entries")
    return {item["name"]: item["type"] for item in entry}


def unpack_fields(raw: bytes, types: dict[str, str]) -> dict[str, FieldColumn]:
    """meta/fields, each column under the type meta/json gives it (``types``, in its order);
    ValueError where it is no JSON object of lists or holds other names than ``types``."""
    try:
        values = json.loads(raw.decode("utf-8"))
    except RecursionError:  # a nesting bomb: json's scanner recurses once per level
        raise ValueError("meta/fields nests deeper than one list of values per field") from None
    if not isinstance(values, dict) or not all(isinstance(column, list) for column in values.values()):
        raise ValueError("meta/fields is not a JSON object of one list per field")
    if set(values) != set(types):
        raise ValueError(f"meta/fields holds the fields {sorted(values)}, meta/json lists {sorted(types)}")
    return {name: FieldColumn(field_type, values[name]) for name, field_type in types.items()}
