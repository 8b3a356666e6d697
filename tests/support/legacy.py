"""LEGACY folder2lmdb files, written the way the folder2lmdb recipe writes them: keys
``str(index).encode("ascii")`` (not zero-padded), values ``pickle.dumps((image_bytes, label))``,
plus pickled ``__keys__`` and ``__len__``; and a pickle that runs code when loaded, as a hostile
file would hold."""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import lmdb


def write_legacy(
    path: Path, values: Sequence[bytes], subdir: bool = False, keys: bool = True, length: bool = True
) -> None:
    """A folder2lmdb file holding ``values`` (already pickled) under keys b"0", b"1", ..."""
    record_keys = [f"{index}".encode("ascii") for index in range(len(values))]
    with lmdb.open(str(path), subdir=subdir, map_size=1 << 28) as env, env.begin(write=True) as txn:
        for key, value in zip(record_keys, values, strict=True):
            txn.put(key, value)
        if keys:
            txn.put(b"__keys__", pickle.dumps(record_keys))
        if length:
            txn.put(b"__len__", pickle.dumps(len(record_keys)))


def pickled(items: Sequence[tuple[bytes, Any]], protocol: int = pickle.DEFAULT_PROTOCOL) -> list[bytes]:
    return [pickle.dumps(item, protocol=protocol) for item in items]


class CreatesAFile:
    """Unpickling this object opens (so creates) ``path`` for writing: what a hostile file does."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, tuple[str, str]]:
        return (open, (self.path, "w"))
