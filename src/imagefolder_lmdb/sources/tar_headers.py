"""A class tar's members listed fast, as tarfile lists them, where every member is a plain file.

Indexing ILSVRC2012_img_train.tar means reading 1.28M member headers of its 1,000 class tars;
tarfile spends ~30 µs on each (13 fields decoded, two checksums, its file object's seeks): most of
the extract step's 45 s at ImageNet's count (issue 60). Here each header is one ``pread``, only its
size is decoded on the way (to find the next), and the checks of a whole class tar's headers are one
numpy pass (type, ustar prefix, checksum). Any header that is not a plain regular file with an
ASCII-octal size and an unsigned checksum (a folder, a link, pax or GNU long-name records, a sparse
member, a ustar prefix, a damaged header) makes the answer None, and the caller lists that tar with
tarfile: every unusual case keeps tarfile's own reading, so the result is the same.
"""

from __future__ import annotations

import os
import tarfile
from dataclasses import dataclass

import numpy as np

BLOCK = tarfile.BLOCKSIZE
ZERO_BLOCK = bytes(BLOCK)
#: The header's fields read here (tarfile's layout).
NAME_FIELD = slice(0, 100)
SIZE_FIELD = slice(124, 136)
CHECKSUM_FIELD = slice(148, 156)
TYPE_AT = 156
#: The ustar prefix (a long name's first part): a header that uses it goes to tarfile.
PREFIX_START = 345
SPACES_SUM = 8 * ord(" ")
REGULAR_TYPES = (ord(tarfile.REGTYPE), ord(tarfile.AREGTYPE))


@dataclass
class PlainMembers:
    """A tar's members, all plain regular files, in the tar's order: each one's name, and where its
    data starts (counted from the tar's first byte) and how long it is."""

    names: list[str]
    offsets: list[int]
    sizes: list[int]
    rows: str | None = None  # their members.jsonl rows, where the lister was asked for them

    def end(self) -> int:
        """Where the last member's data ends, padded to a block (the end-of-archive zeros follow)."""
        return self.offsets[-1] + padded(self.sizes[-1])


def padded(size: int) -> int:
    return -(-size // BLOCK) * BLOCK


def plain_tar_members(path: str, base: int, size: int) -> PlainMembers | None:
    """The members of the tar of ``size`` bytes at ``base`` in ``path``, as ``TarFile.getmembers``
    gives them, when every member is a plain regular file; None otherwise (then list it with tarfile)."""
    headers = read_headers(path, base, size)
    if not headers or not all_plain(headers[0]):
        return None  # an empty tar: tarfile's own answer (it refuses one without an end block)
    names = [member_name(header) for header in headers[0]]
    if any(not name or name.endswith("/") for name in names):
        return None  # tarfile reads a regular member named "x/" as a folder
    return PlainMembers(names, headers[1], headers[2])


def read_headers(path: str, base: int, size: int) -> tuple[list[bytes], list[int], list[int]] | None:
    """Every member header of the tar, each member's data offset and its size, read by following
    the sizes; None where a size is not ASCII octal or the data runs past the tar's end."""
    headers: list[bytes] = []
    offsets: list[int] = []
    sizes: list[int] = []
    fd = os.open(path, os.O_RDONLY)
    try:
        offset = 0
        while offset + BLOCK <= size:
            header = os.pread(fd, BLOCK, base + offset)
            if len(header) != BLOCK:
                return None  # the file ends before the tar does: tarfile names it
            if header == ZERO_BLOCK:
                break  # the end-of-archive zeros (check_tar_complete checks they are where they belong)
            member_size = octal(header[SIZE_FIELD])
            if member_size is None:
                return None
            headers.append(header)
            offsets.append(offset + BLOCK)
            sizes.append(member_size)
            offset += BLOCK + padded(member_size)
            if offset > size:
                return None  # data cut short: tarfile's own error ("unexpected end of data")
    finally:
        os.close(fd)
    return headers, offsets, sizes


def all_plain(headers: list[bytes]) -> bool:
    """Whether every header is a regular file without a ustar prefix whose unsigned checksum holds:
    one pass over the headers as rows of a byte array (the stored checksums read one by one)."""
    rows = np.frombuffer(b"".join(headers), dtype=np.uint8).reshape(len(headers), BLOCK)
    if not (np.isin(rows[:, TYPE_AT], REGULAR_TYPES).all() and (rows[:, PREFIX_START] == 0).all()):
        return False
    sums = rows.sum(axis=1, dtype=np.int64) - rows[:, CHECKSUM_FIELD].sum(axis=1, dtype=np.int64) + SPACES_SUM
    stored = [octal(header[CHECKSUM_FIELD]) for header in headers]
    return None not in stored and np.array_equal(np.asarray(stored, dtype=np.int64), sums)


def member_name(header: bytes) -> str:
    """The name field up to its first NUL, decoded as tarfile decodes it."""
    field = header[NAME_FIELD]
    end = field.find(b"\0")
    return (field if end < 0 else field[:end]).decode(tarfile.ENCODING, "surrogateescape")


def octal(field: bytes) -> int | None:
    """An ASCII-octal number field, as tarfile's ``nti`` reads it; None for a base-256 one or junk."""
    if field[:1] in (b"\x80", b"\xff"):
        return None
    end = field.find(b"\0")
    text = (field if end < 0 else field[:end]).strip()
    if not text:
        return 0
    try:
        return int(text, 8)
    except ValueError:
        return None
