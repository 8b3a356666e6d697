# SPDX-License-Identifier: MIT
"""A bounded local cache of the records a remote dataset fetched, so later epochs read local disk.

One file per record, under a folder named after the object's URL and ETag (a replaced object never
meets the old one's records). Several processes share it: a record is written to a temporary file
and renamed into place (readers see all of it or nothing), and the bytes it may hold are counted in
one file under an exclusive lock, once per batch (``put_many``). When the limit is reached nothing
more is added (nothing is evicted: the cache holds what the first epoch fetched first). Records read
from it are checked against their CRC-32 like fetched ones, so a damaged cache file is fetched
again, never used.

The count is rewritten in place at offset 0 as a fixed-width number, never truncated: on ext4 a
truncated file is flushed to disk when closed (its ``auto_da_alloc``), which cost ~0.9 ms a record
when the count was truncated and rewritten for each one.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

#: The file under ``root`` that counts the bytes every version's records take there.
COUNTER = "used-bytes"
#: Digits of the count (zero-padded: each write covers any earlier one, so no truncate is needed).
WIDTH = 20


@dataclass(frozen=True)
class RecordCache:
    """Records of one object version, in ``root``; at most ``limit`` bytes for everything in ``root``."""

    root: str
    url: str
    etag: str | None
    limit: int

    @property
    def folder(self) -> Path:
        name = hashlib.sha256(f"{self.url}\n{self.etag}".encode()).hexdigest()[:32]
        return Path(self.root) / name

    def get(self, index: int) -> bytes | None:
        try:
            return (self.folder / str(index)).read_bytes()
        except OSError:
            return None

    def put(self, index: int, data: bytes) -> None:
        """Keep record ``index`` unless the cache is full (or the disk refuses: the cache is optional)."""
        self.put_many({index: data})

    def put_many(self, records: Mapping[int, bytes]) -> list[int]:
        """Keep each of ``records`` that still fits under the limit (one count for all); the indices kept."""
        kept: list[int] = []
        with contextlib.suppress(OSError):
            items = list(records.items())
            fits = self._reserve([len(data) for _, data in items])
            if not fits:
                return kept
            folder = self.folder
            folder.mkdir(parents=True, exist_ok=True)
            pid = os.getpid()
            for position in fits:
                index, data = items[position]
                temporary = folder / f".{index}.{pid}.tmp"
                temporary.write_bytes(data)
                os.replace(temporary, folder / str(index))
                kept.append(index)
        return kept

    def _reserve(self, sizes: Sequence[int]) -> list[int]:
        """Count the sizes that still fit under the limit, in order, under the lock every process
        takes; their positions in ``sizes``."""
        Path(self.root).mkdir(parents=True, exist_ok=True)
        fd = os.open(Path(self.root) / COUNTER, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            text = os.pread(fd, 64, 0).strip()
            used = int(text) if text.isdigit() else 0 if not text else self.limit  # unreadable: taken as full
            fits = []
            for position, size in enumerate(sizes):
                if used + size <= self.limit:
                    used += size
                    fits.append(position)
            if fits:
                os.pwrite(fd, f"{used:0{WIDTH}d}".encode(), 0)
            return fits
        finally:
            os.close(fd)
