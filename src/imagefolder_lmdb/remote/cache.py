# SPDX-License-Identifier: MIT
"""A bounded local cache of the records a remote dataset fetched, so later epochs read local disk.

One file per record, under a folder named after the object's URL and ETag (a replaced object never
meets the old one's records). Several processes share it: a record is written to a temporary file
and renamed into place (readers see all of it or nothing), and the bytes it may hold are counted in
one file under an exclusive lock. When the limit is reached nothing more is added (nothing is
evicted: the cache holds what the first epoch fetched first). Records read from it are checked
against their CRC-32 like fetched ones, so a damaged cache file is fetched again, never used.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path


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
        with contextlib.suppress(OSError):
            if not self._reserve(len(data)):
                return
            folder = self.folder
            folder.mkdir(parents=True, exist_ok=True)
            temporary = folder / f".{index}.{os.getpid()}.tmp"
            temporary.write_bytes(data)
            os.replace(temporary, folder / str(index))

    def _reserve(self, size: int) -> bool:
        """Count ``size`` more bytes against the limit, under the lock every process takes."""
        Path(self.root).mkdir(parents=True, exist_ok=True)
        with open(Path(self.root) / "used-bytes", "a+b") as counter:
            fcntl.flock(counter, fcntl.LOCK_EX)
            counter.seek(0)
            used = int(counter.read() or b"0")
            if used + size > self.limit:
                return False
            counter.seek(0)
            counter.truncate()
            counter.write(str(used + size).encode())
        return True
