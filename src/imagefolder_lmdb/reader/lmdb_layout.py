"""LMDB 0.9's on-disk layout (libraries/liblmdb/mdb.c), 64-bit little-endian builds only: the one
description of it that the reader's file checks (file_checks.py) and the page walk of verify and
add_locations (lmdb_pages.py) read files with.

- every page starts with a 16-byte header: pgno u64, pad u16, flags u16, then lower u16 and
  upper u16 (overflow pages: a u32 page count instead);
- meta pages 0 and 1: after the header, magic u32, version u32, address u64, mapsize u64, two
  48-byte MDB_db records (free list, main database), last_pg u64, txnid u64; the valid one is
  the one with the larger txnid; the page size is the free-list record's ``pad``;
- branch and leaf pages: ``(lower - 16) / 2`` node offsets (u16, from the page start) follow
  the header; a node is lo u16, hi u16, flags u16, ksize u16, the key, then the data. A branch
  node's child is ``lo | hi << 16 | flags << 32``. A leaf node's data size is ``lo | hi << 16``;
  with F_BIGDATA its data is the u64 number of the first overflow page and the value starts
  right after that page's header, otherwise the value is inline after the key.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

MAGIC = 0xBEEFC0DE
DATA_VERSION = 1
#: An LMDB page header's size: a value on overflow pages starts this far into its first page.
PAGE_HEADER = 16
NODE_HEADER = 8
MAX_PAGE_SIZE = 1 << 16

P_BRANCH, P_LEAF, P_OVERFLOW, P_META, P_LEAF2 = 0x01, 0x02, 0x04, 0x08, 0x20
#: Leaf node flags: a value on overflow pages; a named database's record; duplicates.
F_BIGDATA, F_SUBDATA, F_DUPDATA = 0x01, 0x02, 0x04
MDB_DUPSORT = 0x04
P_INVALID = 2**64 - 1  # the root of an empty database

#: A branch or leaf page's header: pgno u64, (pad u16), flags u16, lower u16, upper u16.
PAGE_FIELDS = struct.Struct("<Q2xHHH")
#: A node's header: lo u16, hi u16, flags u16, key size u16.
NODE_FIELDS = struct.Struct("<HHHH")
#: An MDB_db record: pad u32, flags u16, depth u16, then five u64 counts/pgnos.
DB = struct.Struct("<IHHQQQQQ")
#: magic, version, address, mapsize (after the page header); then two MDB_db; then last_pg, txnid.
META_HEAD = struct.Struct("<IIQQ")
META_TAIL = struct.Struct("<QQ")
#: A meta page's bytes up to its txnid: what reading one needs.
META_BYTES = PAGE_HEADER + META_HEAD.size + 2 * DB.size + META_TAIL.size


@dataclass(frozen=True)
class Database:
    """One MDB_db record of a meta page."""

    pad: int
    flags: int
    depth: int
    branch_pages: int
    leaf_pages: int
    overflow_pages: int
    entries: int
    root: int


@dataclass(frozen=True)
class MetaFields:
    """A meta page's fields as stored, unchecked (each reader checks what it relies on)."""

    pgno: int
    flags: int
    magic: int
    version: int
    free: Database  # the free list's record; its ``pad`` is the page size
    main: Database
    last_pgno: int
    txnid: int


def unpack_meta(raw: bytes) -> MetaFields:
    """The fields of the meta page whose first META_BYTES bytes are ``raw``."""
    pgno, _, flags = struct.unpack_from("<QHH", raw)
    magic, version, _, _ = META_HEAD.unpack_from(raw, PAGE_HEADER)
    start = PAGE_HEADER + META_HEAD.size
    free = Database(*DB.unpack_from(raw, start))
    main = Database(*DB.unpack_from(raw, start + DB.size))
    last_pgno, txnid = META_TAIL.unpack_from(raw, start + 2 * DB.size)
    return MetaFields(pgno, flags, magic, version, free, main, last_pgno, txnid)


def meta_problem(raw: bytes, number: int) -> str | None:
    """Why meta page ``number``, whose first META_BYTES bytes are ``raw``, is one LMDB would refuse
    or crash on, in words; None where it reads. The one check of a meta page: the reader's file
    checks and the page walk each word it into their own error."""
    fields = unpack_meta(raw)
    if fields.magic != MAGIC:
        damaged = f"LMDB meta page {number} is damaged (no LMDB magic number)"
        return _other_build(raw) or ("not an LMDB file (no LMDB magic number at its start)" if number == 0 else damaged)
    if fields.version != DATA_VERSION:
        return f"LMDB data format version {fields.version}; only version {DATA_VERSION} (LMDB 0.9) is read"
    if fields.pgno != number or not fields.flags & P_META:
        return f"LMDB meta page {number} is damaged"
    page_size = fields.free.pad
    if not 512 <= page_size <= MAX_PAGE_SIZE or page_size & (page_size - 1) or fields.last_pgno < 1:
        return f"LMDB meta page {number} is damaged (page size {page_size})"
    return None


def _other_build(raw: bytes) -> str | None:
    """An LMDB file this layout does not describe: its magic where another build puts it."""
    if len(raw) >= PAGE_HEADER + 4 and struct.unpack_from(">I", raw, PAGE_HEADER)[0] == MAGIC:
        return "a big-endian LMDB file; only little-endian files are supported"
    if len(raw) >= 16 and struct.unpack_from("<I", raw, 12)[0] == MAGIC:
        return "an LMDB file of a 32-bit build; only 64-bit files are supported"
    return None
