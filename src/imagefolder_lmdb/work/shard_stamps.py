"""Shard stamps: what decides each encode job's part, written by checkpoint count_check.

Snakemake reruns every job downstream of one that reruns, so a changed image would encode every
shard again. count_check is a checkpoint instead: once it has run, Snakemake judges each encode job
afresh by its inputs, and skips one whose small inputs kept the checksum it recorded. A shard's stamp
is that input: a digest of the manifest lines the shard encodes and of where their bytes come from
(``Origins``, which the source's kind picks: ``Source.stamp_origins`` in sources/base.py; each class
folder's listing for a folder read in place, each file's size and time otherwise). An image
replaced under its name changes its folder's listing, hence the stamps of the shards holding that
folder's images, and no other; one written in place with its size and time kept changes its change
time, hence the stamp of its own shard (a part finished before the edit is never reused). Encode
jobs take the manifest as an ``ancient()`` input and check that the lines they read are the ones
their stamp names.
"""

from __future__ import annotations

import hashlib
import json
import os
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, BinaryIO

from imagefolder_lmdb.work.files import ManifestHeader, Sample, read_json, shard_name, shard_range
from imagefolder_lmdb.work.folder_listing import LOOSE_FILES, folder_entries
from imagefolder_lmdb.writing.atomic import write_json_atomic


class StaleStampError(RuntimeError):
    """The manifest holds other lines than the shard's stamp names."""


@dataclass(frozen=True)
class ShardStamp:
    shard: int
    shards: int
    start: int  # the manifest's images start <= index < stop
    stop: int
    rows: str  # digest of those manifest lines, as written
    origin: str  # digest of where their bytes come from


def write_shard_stamps(
    folder: str, manifest_path: str, shards: int, origins: Origins, samples: Sequence[Sample]
) -> None:
    """One stamp per shard in ``folder``, for the manifest just written from ``samples``; ``origins``:
    where their bytes come from, as the source's kind tells (``Source.stamp_origins``)."""
    os.makedirs(folder, exist_ok=True)
    with open(manifest_path, "rb") as manifest:
        header = read_header(manifest)
        for shard in range(shards):
            start, stop = shard_range(header.count, shards, shard)
            rows = digest_lines(manifest, stop - start, header)
            stamp = ShardStamp(shard, shards, start, stop, rows, origins.of(samples[start:stop]))
            write_json_atomic(os.path.join(folder, f"{shard_name(shard)}.json"), asdict(stamp))


def read_shard_stamp(path: str) -> ShardStamp:
    return ShardStamp(**read_json(path))


def checked_range(stamp_path: str, manifest_path: str, shard: int, shards: int) -> tuple[int, int]:
    """Shard ``shard`` of ``shards``'s images ``start, stop``, once the manifest's lines there are
    the ones its stamp names."""
    stamp = read_shard_stamp(stamp_path)
    with open(manifest_path, "rb") as manifest:
        header = read_header(manifest)
        start, stop = shard_range(header.count, shards, shard)
        for _ in range(start):
            manifest.readline()
        rows = digest_lines(manifest, stop - start, header)
    if (stamp.shard, stamp.shards, stamp.start, stamp.stop, stamp.rows) != (shard, shards, start, stop, rows):
        raise StaleStampError(
            f"{manifest_path} does not hold the images {stamp_path} was written for (was either file changed "
            "by hand?). Run the same command with --forcerun count_check to list the split again."
        )
    return start, stop


def read_header(manifest: BinaryIO) -> ManifestHeader:
    """The manifest's first line (its paths may hold names that are not UTF-8: write_manifest)."""
    return ManifestHeader.from_data(json.loads(manifest.readline().decode("utf-8", "surrogateescape")))


def digest_lines(manifest: BinaryIO, count: int, header: ManifestHeader) -> str:
    """A digest of the next ``count`` lines of ``manifest`` (binary), and of the header fields that
    say how they are read."""
    # the kind's options by their values alone, as when Parquet's image_column was the one field
    read_by = [header.root, header.kind, header.containers, *header.options.values()]
    digest = hashlib.sha256(json.dumps(read_by).encode())
    for _ in range(count):
        digest.update(manifest.readline())
    return digest.hexdigest()


class Origins(ABC):
    """Where a slice of the samples' bytes come from, as a digest. ``changed``: the source's groups
    that changed since the dataset was made (run/made_from.py: those edited in place, nested deeper
    than a listing looks), whose shards are encoded again."""

    def __init__(self, changed: dict[str, str]) -> None:
        self.changed = changed

    @abstractmethod
    def origin(self, samples: Sequence[Sample]) -> Any:
        """What the digest is of (JSON)."""

    def of(self, samples: Sequence[Sample]) -> str:
        origin = self.origin(samples)
        return hashlib.sha256(json.dumps(origin, ensure_ascii=False).encode("utf-8", "surrogateescape")).hexdigest()


class FileOrigins(Origins):
    """The size, time and inode of every file the split reads (an archive, source files): a change to
    one is a change to every shard."""

    def __init__(self, files: list[str], changed: dict[str, str]) -> None:
        super().__init__(changed)
        self.files = [file_identity(path) for path in dict.fromkeys(files)]

    def origin(self, samples: Sequence[Sample]) -> Any:
        return self.files + sorted(self.changed.values())


class FolderOrigins(Origins):
    """The listings of the class folders a slice's images lie in (a file beside the class folders by
    its size and time), and each image's inode and change time: images that are files under ``root``,
    read in place."""

    def __init__(self, root: str, changed: dict[str, str]) -> None:
        super().__init__(changed)
        self.root = root
        self.entries = folder_entries(root)

    def origin(self, samples: Sequence[Sample]) -> Any:
        origin: list[Any] = [self.entry(name) for name in sorted({sample.path.split("/", 1)[0] for sample in samples})]
        origin.append(self.written(samples))
        return origin

    def entry(self, name: str) -> list[Any]:
        """A class folder's ``[name, digest]`` (a file's ``[name, size, time]``), and its hint if changed."""
        value = self.entries.get(name) or [None]
        group = name if len(value) == 1 else LOOSE_FILES
        return [name, *value] + ([self.changed[group]] if group in self.changed else [])

    def written(self, samples: Sequence[Sample]) -> str:
        """A digest of the samples' inodes and change times: a write in place moves the change time
        whatever size and time the file keeps (one stat an image, on a run that lists the split)."""
        digest = hashlib.sha256()
        for sample in samples:
            try:
                info = os.stat(os.path.join(self.root, sample.path))
                digest.update(f"{info.st_ino}:{info.st_ctime_ns}\n".encode())
            except OSError:
                digest.update(b"missing\n")
        return digest.hexdigest()


def file_identity(path: str) -> list[Any]:
    try:
        info = os.stat(path)
    except OSError:
        return [path, None]
    return [path, info.st_size, info.st_mtime_ns, info.st_ino, info.st_ctime_ns]
