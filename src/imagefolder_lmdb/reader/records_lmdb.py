"""v1 records read through LMDB's memory map (``LmdbRecords``): one read transaction per batch."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from imagefolder_lmdb.reader.codec import Codec, codec_of
from imagefolder_lmdb.reader.file_checks import LmdbReadTxn
from imagefolder_lmdb.reader.format import FormatError, check_record, record_key
from imagefolder_lmdb.reader.records import Begin


class LmdbRecords:
    """v1 records read through LMDB's memory map, key ``record_key(i)``, one transaction per batch.

    The source of files without record locations, of files they do not fit, of ``lock=True``
    readers, and of the records that LocatedRecords cannot locate."""

    legacy = False
    by_offset = False

    def __init__(self, path: str, storage: np.ndarray, crc32: np.ndarray | None) -> None:
        self.path = path
        self.storage = storage  # storage code of each record (reader/codec.py)
        self.crc32 = crc32  # CRC-32 of each record, checked on every read; None: crc_check=False

    def codec(self, index: int) -> Codec:
        """The codec of record ``index`` (reader/codec.py), which decodes it."""
        return codec_of(self.storage.item(index))

    def read(self, positions: list[int], decode: str, begin: Begin, targets: Sequence[Any]) -> list[tuple[Any, Any]]:
        """Decoded images and labels of ``positions``, all from one LMDB transaction.

        Decoding happens while the transaction is alive, straight from LMDB's buffers, so each
        stored value is copied or decoded exactly once and no buffer outlives its transaction.
        The transaction (and a lock=True reader slot) ends when this function returns.
        """
        with begin() as txn:
            batch = []
            for index in positions:
                data = self._value(txn, index)
                batch.append((self.codec(index).decode(data, decode), targets[index]))
                del data  # drop the buffer before the transaction ends
        return batch

    def get_bytes(self, index: int, begin: Begin) -> bytes:
        with begin() as txn:
            return bytes(self._value(txn, index))

    def _value(self, txn: LmdbReadTxn, index: int) -> bytes | memoryview:
        data = txn.get(record_key(index))
        if data is None:
            raise FormatError(f"{self.path}: record {index} is missing; the file is damaged")
        check_record(self.path, index, data, self.crc32)
        return data
