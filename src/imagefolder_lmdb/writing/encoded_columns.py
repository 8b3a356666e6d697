"""The per-record meta a writer of encoded images gathers, in output order: what writing/meta_document.py's
builder takes for the records it stores (convert-legacy's, a change's added records)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from imagefolder_lmdb.reader import checksum
from imagefolder_lmdb.writing.reencode import Encoded


@dataclass
class EncodedColumns:
    """Label, size, CRC-32, storage and bytes of each stored record; the images set aside."""

    labels: list[int] = field(default_factory=list)
    sizes: list[tuple[int, int]] = field(default_factory=list)
    crc32: list[int] = field(default_factory=list)
    storage: list[int] = field(default_factory=list)
    source_bytes: list[int] = field(default_factory=list)
    stored_bytes: list[int] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)

    def add_encoded(self, label: int, encoded: Encoded, source_size: int) -> None:
        """One record stored: ``encoded``, made from ``source_size`` bytes."""
        self.labels.append(label)
        self.sizes.append((encoded.width, encoded.height))
        self.crc32.append(checksum(encoded.value))
        self.storage.append(encoded.storage)
        self.source_bytes.append(source_size)
        self.stored_bytes.append(len(encoded.value))
