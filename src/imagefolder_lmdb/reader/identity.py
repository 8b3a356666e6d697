"""Which file a dataset opened: its content (``content_id``, from what the meta holds) and where that
content is stored (a ``StorageToken``: device, inode and size of a local file; an object store's
version for an object). A process that opens the path again (a DataLoader worker, each epoch without
persistent workers, the parent after a fork) compares both: the same content in another place (a
compacted copy, ``cp``) is read on, its record locations checked again; other content at the path is a
``FileChangedError`` naming both files, never its images under the first file's labels."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from imagefolder_lmdb.reader.file_checks import data_file
from imagefolder_lmdb.reader.format import Meta


class StorageToken(Protocol):
    """Where a file's bytes are stored: equal tokens, the same stored bytes (compared with ``==``)."""

    def describe(self) -> str:
        """The token in words, for messages."""
        ...


@dataclass(frozen=True)
class LocalFileToken:
    """A local file: device, inode and size of the file LMDB opened."""

    device: int
    inode: int
    size: int

    def describe(self) -> str:
        return f"inode {self.inode} on device {self.device}, {self.size:,} bytes"


def local_token(path: str) -> LocalFileToken:
    """The token of the file (or a legacy folder's data.mdb) now at ``path``."""
    info = os.stat(data_file(path))
    return LocalFileToken(info.st_dev, info.st_ino, info.st_size)


def content_id(meta: Meta) -> str:
    """A digest of a file's content that the meta already pins: the checksums meta/json records (of the
    labels, names, classes and of every record's CRC-32). Deterministic: two conversions of one tree with
    one setting share it. Older files without those checksums: the same arrays, digested at open."""
    sums = meta.document.get("checksums")
    digest = hashlib.sha256(str(meta.length).encode())
    if isinstance(sums, dict) and sums:
        digest.update(json.dumps(sums, sort_keys=True).encode())
    else:
        for array in (meta.labels, meta.crc32, meta.sizes, meta.storage):
            digest.update(np.ascontiguousarray(array).tobytes())
        digest.update("\0".join([*meta.classes, *meta.paths]).encode("utf-8", "surrogateescape"))
    return digest.hexdigest()[:32]


def meta_digest(document: dict[str, Any]) -> str:
    """A digest of a file's meta document, its creation time included: which conversion made the file,
    not only what it holds. A report records it (verify.json ``dataset_meta_digest``) so that the report
    is taken as current only beside the very file it checked (issue 49)."""
    return hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()[:32]


@dataclass(frozen=True)
class FileIdentity:
    """The file a dataset opened: its content and where it was stored then."""

    content: str
    storage: Any  # a StorageToken

    def describe(self, document: dict[str, Any] | None = None) -> str:
        created = (document or {}).get("created")
        when = f", written {created}" if isinstance(created, str) else ""
        return f"content {self.content[:12]}{when}, {self.storage.describe()}"


class FileChangedError(RuntimeError):
    """The path a dataset reads now holds other content than the file it opened."""


def changed_message(path: str, opened: str, found: str) -> str:
    return (
        f"{path} is not the file this dataset opened: it opened {opened}; the path now holds {found}, other "
        "images or labels (a new conversion published at the same path while this job runs). Reading on would "
        "give the new file's images under the old file's labels, so nothing is read. Restart the job (or make a "
        "new LMDBDataset) to read the new file; to publish under a running job without stopping it, write the "
        "new version at a new path and point the next job at it (docs/training.md)."
    )
