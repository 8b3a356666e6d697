"""A class tar's members listed fast, as tarfile lists them, where every member is a plain file.

Indexing ILSVRC2012_img_train.tar means reading 1.28M member headers of its 1,000 class tars;
tarfile spends ~30 µs on each (13 fields decoded, two checksums, its file object's seeks): most of
the extract step's 45 s at ImageNet's count (issue 60). Here each header is one ``pread`` and only
what the index uses is decoded (name, size, type). Any header that is not a plain regular file
with an ASCII-octal size and an unsigned checksum (a folder, a link, pax or GNU long-name records,
a sparse member, a ustar prefix, a damaged header) returns None, and the caller lists that tar
with tarfile: every unusual case keeps tarfile's own reading, so the result is the same.
"""

from __future__ import annotations

import os
import tarfile

BLOCK = tarfile.BLOCKSIZE
#: The header's checksum field, read as spaces when the sum is made.
CHECKSUM_FIELD = slice(148, 156)
SPACES_SUM = 8 * ord(" ")
REGULAR = (tarfile.REGTYPE, tarfile.AREGTYPE)
#: The ustar prefix (a long name's first part): a header that uses it goes to tarfile.
PREFIX_START = 345


def plain_tar_members(path: str, base: int, size: int) -> list[tarfile.TarInfo] | None:
    """The members of the tar of ``size`` bytes at ``base`` in ``path``, as ``TarFile.getmembers``
    gives them (``offset`` and ``offset_data`` counted from ``base``), when every member is a plain
    regular file; None otherwise (then list it with tarfile)."""
    members: list[tarfile.TarInfo] = []
    fd = os.open(path, os.O_RDONLY)
    try:
        offset = 0
        while offset + BLOCK <= size:
            header = os.pread(fd, BLOCK, base + offset)
            if len(header) != BLOCK:
                return None  # the file ends before the tar does: tarfile names it
            if not header.strip(b"\0"):
                break  # the end-of-archive zeros (check_tar_complete checks they are where they belong)
            member = plain_member(header, offset)
            if member is None:
                return None
            members.append(member)
            offset = member.offset_data + -(-member.size // BLOCK) * BLOCK
            if offset > size:
                return None  # data cut short: tarfile's own error ("unexpected end of data")
    finally:
        os.close(fd)
    return members or None  # an empty tar: tarfile's own answer (it refuses one without an end block)


def plain_member(header: bytes, offset: int) -> tarfile.TarInfo | None:
    """The member of ``header`` at ``offset``, or None unless it is a plain regular file whose
    header tarfile reads the same way."""
    if len(header) != BLOCK or header[156:157] not in REGULAR or header[PREFIX_START] != 0:
        return None
    size = octal(header[124:136])
    checksum = octal(header[CHECKSUM_FIELD])
    if size is None or checksum is None or checksum != sum(header) - sum(header[CHECKSUM_FIELD]) + SPACES_SUM:
        return None
    name_field = header[:100]
    end = name_field.find(b"\0")
    name = (name_field if end < 0 else name_field[:end]).decode(tarfile.ENCODING, "surrogateescape")
    if not name or name.endswith("/"):
        return None  # tarfile reads a regular member named "x/" as a folder
    member = tarfile.TarInfo(name)
    member.size, member.type, member.chksum = size, header[156:157], checksum
    member.offset, member.offset_data = offset, offset + BLOCK
    return member


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
