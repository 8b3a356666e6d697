"""LEGACY: LMDBs of the folder2lmdb recipe (pickled records), read only with ``allow_pickle=True``."""

from __future__ import annotations

import io
import operator
import pickle
from collections.abc import Sequence
from typing import Any

from imagefolder_lmdb.reader.codec import AS_IS
from imagefolder_lmdb.reader.file_checks import LmdbReadTxn
from imagefolder_lmdb.reader.format import FormatError
from imagefolder_lmdb.reader.records import Begin, Opened

# Their values are pickled ``(image_bytes, label)`` tuples under keys b"0", b"1", ... (not padded),
# with pickled b"__len__" and b"__keys__". Unpickling runs code named in the file, so nothing here
# is reached unless the user passes allow_pickle=True (or runs convert_legacy.py). Even then the
# legacy unpickler below builds only what these files legitimately hold (bytes, ints, lists,
# tuples, numpy scalars) and refuses any other global, as torch.load(weights_only=True) does.

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


def legacy_keys(txn: LmdbReadTxn, where: str) -> list[bytes]:
    """The record keys of a legacy file in index order: ``__keys__`` if present, else 0..__len__-1."""
    raw_keys = txn.get(b"__keys__")
    if raw_keys is not None:
        keys = legacy_loads(raw_keys, f"{where}: __keys__")
        if not isinstance(keys, list | tuple) or not all(isinstance(k, bytes) for k in keys):
            raise FormatError(f"{where}: __keys__ is not a list of byte strings")
        return list(keys)
    length = legacy_loads(txn.get(b"__len__") or b"", f"{where}: __len__")  # none: not a pickle
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

    def record(self, txn: LmdbReadTxn, index: int) -> tuple[bytes, int]:
        """The ``(image bytes, label)`` of record ``index``."""
        key = self.keys[index]
        return legacy_record(txn.get(key), f"{self.path}: legacy record {key.decode('utf-8', 'backslashreplace')!r}")

    def read(self, positions: list[int], decode: str, begin: Begin, targets: Sequence[Any]) -> list[tuple[Any, Any]]:
        with begin() as txn:
            batch = []
            for index in positions:
                data, target = self.record(txn, index)
                batch.append((AS_IS.decode(data, decode), target))
        return batch

    def get_bytes(self, index: int, begin: Begin) -> bytes:
        with begin() as txn:
            return self.record(txn, index)[0]


def open_legacy(txn: LmdbReadTxn, path: str) -> Opened:
    """LEGACY (allow_pickle=True): index a folder2lmdb file; reads every record for its label."""
    records = _LegacyRecords(path, legacy_keys(txn, path))
    targets = [records.record(txn, index)[1] for index in range(len(records.keys))]
    classes = [str(label) for label in range(max(targets, default=-1) + 1)]
    names = [key.decode("utf-8", "backslashreplace") for key in records.keys]
    document = {"format": "folder2lmdb (legacy pickle)", "length": len(targets)}
    return Opened(records, document, classes, names, targets, meta=None)
