"""Reading a record's bytes by file offset: one ``os.pread`` (or ``preadv`` into a tensor's memory)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from imagefolder_lmdb.reader.format import FormatError

if TYPE_CHECKING:
    import torch


CAN_PREAD = hasattr(os, "pread")
CAN_ADVISE = hasattr(os, "posix_fadvise")
CAN_PREADV = hasattr(os, "preadv")
CAN_PROBE = CAN_PREADV and hasattr(os, "RWF_NOWAIT")


def _read_into(fd: int, buffer: memoryview, offset: int, done: int = 0) -> None:
    """Fill ``buffer`` from file offset ``offset`` on, however many reads that takes."""
    while done < len(buffer):
        if CAN_PREADV:
            got = os.preadv(fd, [buffer[done:]], offset + done)
        else:  # pragma: no cover - platforms without preadv: one copy more
            chunk = os.pread(fd, len(buffer) - done, offset + done)
            buffer[done : done + len(chunk)], got = chunk, len(chunk)
        if got == 0:
            raise FormatError("a record ends past the end of the file: the file is truncated")
        done += got


def pread_bytes(fd: int, length: int, offset: int) -> bytes:
    """``length`` bytes at ``offset``: one read, except at the end of the file or past the
    kernel's cap on a single read (2 GiB on Linux)."""
    data = os.pread(fd, length, offset)
    if len(data) == length:
        return data
    buffer = bytearray(length)
    buffer[: len(data)] = data
    _read_into(fd, memoryview(buffer), offset, done=len(data))
    return bytes(buffer)


def pread_tensor(fd: int, length: int, offset: int) -> torch.Tensor:
    """The bytes at ``offset`` read straight into a new uint8 tensor's own memory: no extra copy."""
    import torch

    encoded = torch.empty(length, dtype=torch.uint8)
    _read_into(fd, encoded.numpy().data, offset)
    return encoded


def fetch_record(fd: int, offset: int, length: int, decode: str) -> bytes | torch.Tensor:
    """A located record's bytes: into a tensor's own memory for decode="tensor", else bytes."""
    return pread_tensor(fd, length, offset) if decode == "tensor" else pread_bytes(fd, length, offset)
