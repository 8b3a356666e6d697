# SPDX-License-Identifier: MIT
"""The record source of a remote dataset: each record one ranged read at its recorded location.

A batch (``__getitems__``) is read at once: its ranges sorted, neighbours closer than
``RemoteSettings.merge_gap`` merged into one request (at most ``max_request`` long), all of them in
flight together (at most ``max_in_flight``), the samples returned in the batch's order. Every record
is checked against its CRC-32 (meta/crc32, reader/format.checksum) before it is used: ~2 us for a
110 KB JPEG, nothing beside a network read (milliseconds) and a decode (~1.5 ms). A mismatch is
fetched once more, then refused with ChecksumError (a DamagedRecordError, as a local read raises,
and an OSError, as the other failures of a remote read are): never a wrong image.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from imagefolder_lmdb.reader.format import DamagedRecordError, checksum

from . import client
from .cache import RecordCache
from .problems import ObjectChangedError, changed_message
from .urls import RemoteSettings


def merged_spans(
    spans: list[tuple[int, int]], settings: RemoteSettings
) -> tuple[list[tuple[int, int]], list[tuple[int, int, int]]]:
    """The requests that cover ``spans`` (neighbours merged), and for each span: its request's
    number and its place inside that request's bytes."""
    order = sorted(range(len(spans)), key=lambda i: spans[i])
    requests: list[list[int]] = []
    owner = [0] * len(spans)
    for i in order:
        start, end = spans[i]
        last = requests[-1] if requests else None
        if (
            last is not None
            and start - last[1] <= settings.merge_gap
            and max(end, last[1]) - last[0] <= settings.max_request
        ):
            last[1] = max(last[1], end)
        else:
            requests.append([start, end])
        owner[i] = len(requests) - 1
    pieces = [
        (owner[i], spans[i][0] - requests[owner[i]][0], spans[i][1] - requests[owner[i]][0]) for i in range(len(spans))
    ]
    return [(start, end) for start, end in requests], pieces


@dataclass(frozen=True)
class ObjectVersion:
    """Where a remote file's bytes are stored: the object and the version (ETag) every read is pinned
    to (If-Match), the storage token of the dataset's file identity."""

    url: str
    etag: str | None
    size: int

    def describe(self) -> str:
        return f"{self.url}, ETag {self.etag or '(none sent)'}, {self.size:,} bytes"


class RemoteRecords:
    """Records of the object at ``url`` (version ``etag``), read by their locations; picklable (no
    client is held: each process makes its own on its first read)."""

    legacy = False
    by_offset = True

    def __init__(
        self,
        url: str,
        etag: str | None,
        offsets: np.ndarray,
        lengths: np.ndarray,
        crc32: np.ndarray,
        storage: np.ndarray,
        settings: RemoteSettings,
        cache: RecordCache | None,
    ) -> None:
        self.url, self.etag, self.settings, self.cache = url, etag, settings, cache
        self.offsets, self.lengths, self.crc32 = offsets, lengths, crc32
        self.storage = storage  # each record's storage code: its codec decodes it (reader/codec.py)
        self.size: int | None = None  # the object's size in bytes, where known

    @property
    def token(self) -> ObjectVersion:
        """The object and version this source reads (the storage token of the file's identity)."""
        return ObjectVersion(self.url, self.etag, self.size or 0)

    def _intact(self, index: int, data: bytes) -> bool:
        return checksum(data) == self.crc32.item(index)

    def fetch(self, indices: list[int]) -> dict[int, bytes]:
        """The bytes at the locations of ``indices``, fetched together, unchecked (``verify`` checks them)."""
        spans = [(self.offsets.item(i), self.offsets.item(i) + self.lengths.item(i)) for i in indices]
        requests, pieces = merged_spans(spans, self.settings)
        parts = client.fetch(self.url, requests, self.etag, self.settings).parts
        return {index: parts[r][start:end] for index, (r, start, end) in zip(indices, pieces, strict=True)}

    def stored_bytes(self, positions: list[int]) -> list[bytes]:
        """The checked stored bytes of each of ``positions``, from the cache or fetched together."""
        found: dict[int, bytes] = {}
        if self.cache is not None:
            for index in dict.fromkeys(positions):
                data = self.cache.get(index)
                if data is not None and self._intact(index, data):
                    found[index] = data
        wanted = [index for index in dict.fromkeys(positions) if index not in found]
        fetched = self.fetch(wanted) if wanted else {}
        damaged = [index for index, data in fetched.items() if not self._intact(index, data)]
        if damaged:
            fetched.update(self.fetch(damaged))  # a transient fault gets one more try
            for index in damaged:
                if not self._intact(index, fetched[index]):
                    self._refuse_changed(index)
                    start, end = self.offsets.item(index), self.offsets.item(index) + self.lengths.item(index)
                    raise ChecksumError(
                        f"{self.url}: record {index} (bytes {start:,}-{end - 1:,}) does not "
                        "match its CRC-32 (meta/crc32), read twice: the object is damaged, or something between "
                        f"changes its bytes. Check it with `imagefolder-lmdb verify --full {self.url}`"
                    )
        if self.cache is not None and fetched:
            self.cache.put_many(fetched)  # one count of the cache's bytes for the whole batch
        found.update(fetched)
        return [found[index] for index in positions]

    def _refuse_changed(self, index: int) -> None:
        """ObjectChangedError if the object now has another ETag or size than at open (a server that
        ignored If-Match served a replaced file: changed, not damaged)."""
        now = client.fetch(self.url, [(0, 1)], None, self.settings)
        if (self.etag is not None and now.etag != self.etag) or (self.size and now.size != self.size):
            how = f"record {index} no longer matches its CRC-32; ETag {now.etag}, {now.size:,} bytes now"
            raise ObjectChangedError(changed_message(self.url, self.etag, how))

    def read(self, positions: list[int], decode: str, begin: Any, targets: Sequence[Any]) -> list[tuple[Any, Any]]:
        """Decoded images and labels of ``positions``, in order (``begin``, LMDB's transaction, is unused)."""
        from imagefolder_lmdb.reader.codec import codec_of

        datas = self.stored_bytes(positions)
        return [
            (codec_of(self.storage.item(index)).decode(data, decode), targets[index])
            for index, data in zip(positions, datas, strict=True)
        ]

    def get_bytes(self, index: int, begin: Any) -> bytes:
        return self.stored_bytes([index])[0]


class ChecksumError(DamagedRecordError, OSError):
    """A remote record's bytes do not match its CRC-32, twice: the damage a local read reports as
    DamagedRecordError, and an OSError as the other failures of a remote read, so that code handling
    either catches it."""
