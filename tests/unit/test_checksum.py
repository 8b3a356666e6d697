"""The one CRC-32 of the project (reader/format.checksum, issue 50): the fast library it uses gives
zlib's CRC-32 on every kind of buffer the reader hands it, and without any fast library installed the
reader falls back to zlib.crc32 and still refuses a damaged record."""

from __future__ import annotations

import mmap
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
import torch

from imagefolder_lmdb.reader import DamagedRecordError, LMDBReader, close_all_envs
from imagefolder_lmdb.reader import format as record_format
from imagefolder_lmdb.reader import keys as record_keys
from support.datasets import random_values, write_dataset
from unit.test_damaged_files import flip_record

#: Around every block and fold width the libraries switch code at (16, 64, 256 bytes; zlib's GIL
#: release at 5 KB), a record's sizes (10 KB-5 MB), and 8 MB.
SIZES = [0, 1, 3, 15, 16, 17, 63, 64, 65, 255, 256, 257, 4095, 5120, 5121, 10_000, 110_017, 1 << 20, 5_000_003, 8 << 20]


def installed_libraries() -> list[str]:
    """The fast CRC-32 libraries installed here, each as format.CRC32_LIBRARIES names it."""
    found = []
    for module, _ in record_format.CRC32_LIBRARIES:
        try:
            __import__(module)
        except ImportError:
            continue
        found.append(module)
    return found


@pytest.fixture(scope="module")
def random_bytes() -> bytes:
    return np.random.default_rng(50).bytes((8 << 20) + 64)


def test_the_base_requirement_computes_it() -> None:
    # zlib-ng is in pyproject's dependencies and requirements.txt: an install without it is broken.
    assert record_format.CRC32_LIBRARY == "zlib_ng.zlib_ng"


@pytest.mark.parametrize("module", installed_libraries())
def test_each_library_equals_zlib_on_every_size_and_alignment(module: str, random_bytes: bytes) -> None:
    crc32 = dict(record_format.CRC32_LIBRARIES)[module]
    function = getattr(sys.modules[module], crc32)
    whole = memoryview(random_bytes)
    for size in SIZES:
        for start in (0, 1, 3, 7):  # unaligned views: the reader's slices of a bigger buffer
            view = whole[start : start + size]
            assert function(view) == zlib.crc32(view), (module, size, start)
        assert function(bytes(whole[:size])) == zlib.crc32(whole[:size]), (module, size)
        assert function(bytearray(whole[:size])) == zlib.crc32(whole[:size]), (module, size)


def test_checksum_equals_zlib_on_an_mmap_and_a_tensor(random_bytes: bytes, tmp_path: Path) -> None:
    path = tmp_path / "mapped.bin"
    path.write_bytes(random_bytes)
    with path.open("rb") as stream, mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        whole = memoryview(mapped)
        try:
            for size in SIZES:
                view = whole[5 : 5 + size]  # LMDB's values are memoryviews of its map, at any offset
                assert record_format.checksum(view) == zlib.crc32(view), size
            del view
        finally:
            whole.release()
    # decode="tensor" checks the tensor its record was read into (records_located._decoded)
    tensor = torch.frombuffer(bytearray(random_bytes[:110_017]), dtype=torch.uint8)
    assert record_format.checksum(tensor.numpy().data) == zlib.crc32(random_bytes[:110_017])


def test_without_a_fast_library_reads_fall_back_to_zlib_and_still_check(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for module, _ in record_format.CRC32_LIBRARIES:  # as if none were installed
        monkeypatch.setitem(sys.modules, module, None)
    function, name = record_format.fastest_crc32()
    assert (function, name) == (zlib.crc32, "zlib")
    monkeypatch.setattr(record_keys, "_crc32", function)  # checksum's home (reader/keys.py)
    path = tmp_path / "d.lmdb"
    values = random_values([300 if i % 5 == 0 else 5000 + 997 * i for i in range(40)])
    write_dataset(path, values)
    flip_record(path, 7)
    for by_offset in (True, False):
        close_all_envs()
        ds = LMDBReader(path, decode="bytes")
        if not by_offset:
            ds._offsets = None
        assert ds.reads_by_offset is by_offset
        assert [ds.get_bytes(i) for i in (0, 6, 8)] == [values[i] for i in (0, 6, 8)]
        with pytest.raises(DamagedRecordError, match=rf"{path}: record 7 does not match its CRC-32"):
            ds.get_bytes(7)
        with pytest.raises(DamagedRecordError, match=rf"{path}: record 7 .*verify {path} --full"):
            ds.__getitems__([6, 7, 8])
