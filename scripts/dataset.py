"""Read an ``imagefolder-lmdb`` v1 file as a drop-in for ``torchvision.datasets.ImageFolder``.

This one file is the whole reader and the single owner of the on-disk format (docs/FORMAT.md): the
writer scripts of the workflow import their key and meta encoders from here, so writer and reader
cannot drift apart. It depends on lmdb, numpy, Pillow and torch only; copy it next to your training
code and ``from dataset import LMDBDataset``.

No pickle is involved anywhere: meta is JSON plus little-endian numeric arrays.
"""

from __future__ import annotations

import io
import json
import os
import threading
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import lmdb
import numpy as np
from PIL import Image

try:  # torch is optional for format helpers used by the writers, required for the Dataset base
    from torch.utils.data import Dataset as _TorchDataset
except ImportError:  # pragma: no cover - the workflow environment always has torch
    _TorchDataset = object  # type: ignore[assignment,misc]

__all__ = [
    "FORMAT_ID",
    "FORMAT_VERSION",
    "META_KEYS",
    "STORAGE_REASONS",
    "FormatError",
    "LMDBDataset",
    "Meta",
    "close_all_envs",
    "decode_meta",
    "encode_meta",
    "open_env_readonly",
    "record_key",
    "shared_env",
]

# --------------------------------------------------------------------------------------------------
# The format: keys, meta layout, storage codes. docs/FORMAT.md is the prose version of this block.
# --------------------------------------------------------------------------------------------------

FORMAT_ID = "imagefolder-lmdb"
FORMAT_VERSION = 1

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
}

#: How a record's bytes came to be. Code 0 is the only one whose value equals the source file.
STORAGE_REASONS: dict[int, str] = {
    0: "passthrough",  # a valid RGB JPEG, stored byte for byte
    1: "reencoded:not-jpeg",  # PNG (also when named .JPEG), GIF, BMP, WebP, TIFF, ...
    2: "reencoded:cmyk",  # CMYK / YCCK JPEG
    3: "reencoded:grayscale",  # single-channel JPEG
    4: "reencoded:mpo",  # multi-picture JPEG from cameras: only the first frame is kept
    5: "reencoded:other-mode",  # any other pixel mode of a JPEG
    6: "reencoded:resized",  # larger than encode.max_side
    7: "reencoded:always",  # encode.reencode = always
    8: "stored-as-is",  # encode.reencode = never and the file is not a plain RGB JPEG
}
STORAGE_CODES = {reason: code for code, reason in STORAGE_REASONS.items()}

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
    values[META_KEYS["json"]] = json.dumps(meta.document, sort_keys=True, indent=1).encode("utf-8")
    return values


def _array(txn: lmdb.Transaction, name: str) -> np.ndarray:
    raw = txn.get(META_KEYS[name])
    if raw is None:
        raise FormatError(f"meta key {META_KEYS[name].decode()} is missing")
    return np.frombuffer(bytes(raw), dtype=_ARRAY_DTYPES[name])


def decode_meta(txn: lmdb.Transaction, where: str) -> Meta:
    """Read and check the meta of an open environment; ``where`` names the file in errors."""
    raw = txn.get(META_KEYS["json"])
    if raw is None:
        raise FormatError(_missing_meta_message(txn, where))
    try:
        document = json.loads(bytes(raw))
    except ValueError as exc:
        raise FormatError(f"{where}: meta/json is not valid JSON ({exc}); the file is damaged") from exc
    if document.get("format") != FORMAT_ID:
        raise FormatError(f"{where}: format is {document.get('format')!r}, expected {FORMAT_ID!r}")
    version = document.get("version")
    if version != FORMAT_VERSION:
        raise FormatError(
            f"{where}: {FORMAT_ID} version {version!r}, but this reader knows version "
            f"{FORMAT_VERSION} only; use the scripts/dataset.py of the workflow that wrote it"
        )
    try:
        meta = Meta(
            document=document,
            labels=_array(txn, "labels"),
            sizes=_array(txn, "sizes").reshape(-1, 2),
            crc32=_array(txn, "crc32"),
            storage=_array(txn, "storage"),
            source_bytes=_array(txn, "source_bytes"),
            paths=bytes(txn.get(META_KEYS["paths"], b"")).decode("utf-8").split("\0")[:-1],
        )
    except FormatError as exc:
        raise FormatError(f"{where}: {exc}; the file is damaged, convert it again") from exc
    n = meta.length
    for name in ("labels", "sizes", "crc32", "storage", "source_bytes", "paths"):
        if len(getattr(meta, name)) != n:
            raise FormatError(f"{where}: meta {name} has {len(getattr(meta, name))} entries, expected {n}")
    return meta


def _missing_meta_message(txn: lmdb.Transaction, where: str) -> str:
    if txn.get(b"__len__") is not None or txn.get(b"__keys__") is not None:
        return (
            f"{where} is a legacy LMDB of pickled (image, label) records, not {FORMAT_ID}. "
            "Unpickling runs code stored in the file, so it is not read. Convert it with the "
            "workflow instead."
        )
    if txn.get(record_key(0)) is not None:
        return (
            f"{where} has image records but no {FORMAT_ID} meta: the conversion did not finish. "
            "Run the same snakemake command again to complete it."
        )
    return f"{where} is an LMDB, but not an {FORMAT_ID} dataset (no meta/json key)."


def open_env_readonly(path: str, max_readers: int = 126) -> lmdb.Environment:
    """Open a dataset for reading with the settings that suit random access by many processes.

    ``lock=False``: the file never changes after it is written, so readers need no lock table
    (and work on read-only filesystems); ``readahead=False``: random reads must not pull in
    neighbouring pages; ``meminit=False``: nothing is written.
    """
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such file")
    subdir = os.path.isdir(path)  # legacy datasets are often directories holding data.mdb
    try:
        return lmdb.open(
            path,
            subdir=subdir,
            readonly=True,
            lock=False,
            readahead=False,
            meminit=False,
            max_readers=max_readers,
            max_dbs=0,
        )
    except lmdb.InvalidError as exc:
        raise FormatError(
            f"{path} is not an LMDB file ({exc}). Point LMDBDataset at a results/<split>.lmdb written by the workflow."
        ) from exc
    except lmdb.Error as exc:
        raise FormatError(f"{path} cannot be opened as an LMDB file: {exc}") from exc


# --------------------------------------------------------------------------------------------------
# One environment per file and process.
# --------------------------------------------------------------------------------------------------
# py-lmdb refuses to open one path twice in a process, and a forked child inherits the parent's
# "already open" state. So environments live in one per-process table shared by every dataset
# instance, and the table is emptied right before any fork: the parent reopens lazily afterwards
# and the child opens its own. Under spawn/forkserver the child starts with an empty table anyway.

_ENVS: dict[str, lmdb.Environment] = {}
_ENVS_LOCK = threading.Lock()


def shared_env(path: str) -> lmdb.Environment:
    key = os.path.realpath(path)
    with _ENVS_LOCK:
        env = _ENVS.get(key)
        if env is None:
            env = _ENVS[key] = open_env_readonly(path)
        return env


def close_all_envs() -> None:
    """Close every dataset file this process has open; datasets reopen them when next read.
    Runs by itself before each fork; call it after replacing a file that was open."""
    with _ENVS_LOCK:
        for env in _ENVS.values():
            env.close()
        _ENVS.clear()


def _forget_envs_in_child() -> None:
    # The child's copies were closed before the fork; start from a clean table and a fresh lock.
    global _ENVS_LOCK
    _ENVS.clear()
    _ENVS_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=close_all_envs, after_in_child=_forget_envs_in_child)


# --------------------------------------------------------------------------------------------------
# The Dataset.
# --------------------------------------------------------------------------------------------------


def pil_decode(data: bytes | memoryview) -> Image.Image:
    """Decode stored bytes exactly as torchvision's ``pil_loader`` decodes a file."""
    image = Image.open(io.BytesIO(data))
    return image.convert("RGB")


class LMDBDataset(_TorchDataset):  # type: ignore[misc,valid-type]
    """An ImageFolder stored in one LMDB file: same indices, labels, classes and samples.

    ``LMDBDataset("results/train.lmdb", transform)`` replaces
    ``torchvision.datasets.ImageFolder("train/", transform)``. ``samples`` holds
    ``(relative path, class index)`` pairs, ``"class/file.JPEG"``, as no source folder exists.
    The file is opened lazily in each process that reads it, so the dataset pickles cleanly and
    works with DataLoader workers under fork, spawn and forkserver.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        transform: Callable[[Any], Any] | None = None,
        target_transform: Callable[[int], Any] | None = None,
    ) -> None:
        self.path = os.fspath(path)
        self.transform = transform
        self.target_transform = target_transform
        self._load_meta()

    def _load_meta(self) -> None:
        env = shared_env(self.path)
        with env.begin() as txn:
            meta = decode_meta(txn, self.path)
        self.meta_document: dict[str, Any] = meta.document
        self.classes: list[str] = meta.classes
        self.class_to_idx: dict[str, int] = {name: i for i, name in enumerate(self.classes)}
        self.targets: list[int] = meta.labels.tolist()
        self.samples: list[tuple[str, int]] = list(zip(meta.paths, self.targets, strict=True))
        self.imgs = self.samples
        self.image_sizes: np.ndarray = meta.sizes
        self.checksums: np.ndarray = meta.crc32  # CRC-32 of each stored value
        self.storage_codes: np.ndarray = meta.storage  # see STORAGE_REASONS

    def __len__(self) -> int:
        return len(self.targets)

    def _check_index(self, index: int) -> int:
        n = len(self.targets)
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError(f"index {index} out of range for {self.path} with {n} images")
        return index

    def get_bytes(self, index: int) -> bytes:
        """The stored image bytes of record ``index`` (a JPEG unless stored-as-is)."""
        index = self._check_index(index)
        with shared_env(self.path).begin() as txn:
            value = txn.get(record_key(index))
        if value is None:
            raise FormatError(f"{self.path}: record {index} is missing; the file is damaged")
        return value

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        index = self._check_index(index)
        image = pil_decode(self.get_bytes(index))
        target = self.targets[index]
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        for index in range(len(self)):
            yield self[index]

    def check_crc(self, index: int) -> bool:
        """Whether record ``index`` still has the CRC-32 recorded when it was written."""
        return zlib.crc32(self.get_bytes(index)) == int(self.checksums[self._check_index(index)])

    def storage_reason(self, index: int) -> str:
        """How record ``index`` was stored: ``passthrough`` or ``reencoded:<why>``."""
        return STORAGE_REASONS[int(self.storage_codes[self._check_index(index)])]

    def __getstate__(self) -> dict[str, Any]:
        # Nothing process-specific lives on the instance; environments are in the module table.
        return self.__dict__.copy()

    def __repr__(self) -> str:
        lines = [
            f"Dataset {type(self).__name__}",
            f"    Number of datapoints: {len(self)}",
            f"    Path: {self.path}",
            f"    Classes: {len(self.classes)}",
        ]
        if self.transform is not None:
            lines.append(f"    Transform: {self.transform!r}")
        return "\n".join(lines)
