"""Checks of an LMDB file made with plain reads before LMDB maps it or follows its pages.

``check_lmdb_file``: the file holds every page its header names (a short copy is refused with
``TruncatedFileError``, not a SIGBUS); ``PageGuard``: the pages on the way to each key are checked
before LMDB follows them (damage gives a ``FormatError``, not a crash)."""

from __future__ import annotations

import bisect
import itertools
import os
import struct
from dataclasses import dataclass
from typing import Any, TypeAlias

import lmdb

from imagefolder_lmdb.reader.keys import RECOPY_ADVICE, FormatError
from imagefolder_lmdb.reader.lmdb_layout import (
    F_BIGDATA,
    F_DUPDATA,
    MAGIC,
    META_BYTES,
    NODE_FIELDS,
    NODE_HEADER,
    P_BRANCH,
    P_INVALID,
    P_LEAF,
    PAGE_FIELDS,
    PAGE_HEADER,
    meta_problem,
    unpack_meta,
)


class TruncatedFileError(FormatError):
    """The file holds fewer bytes than its LMDB header says it must: an incomplete copy."""

    # printed under the name it is imported by, as numpy's errors are, not the defining module
    __module__ = "imagefolder_lmdb.reader"


# LMDB maps the file and never compares its size with the meta page: the first touch of a page
# past the end raises SIGBUS. So the size is checked with plain reads before LMDB opens it.
_INCOMPLETE = "The copy is incomplete (an interrupted scp or rsync, a full disk or quota)."


@dataclass(frozen=True)
class LmdbHeader:
    """What an LMDB file's current meta page says about its size (see read_lmdb_header)."""

    page_size: int
    last_page: int  # mm_last_pg: the highest page number in use
    txnid: int
    root: int = P_INVALID  # the main database's root page
    depth: int = 0  # the main database's B-tree depth

    @property
    def required_bytes(self) -> int:
        """The least size of a whole file: LMDB may touch any page up to ``last_page``."""
        return (self.last_page + 1) * self.page_size


def _starts_as_lmdb(raw: bytes) -> bool:
    """Whether a file's first bytes, however few, are what LMDB's first meta page starts with: its
    page number 0, then (after the page header) the magic. A short file that is not is no LMDB
    file at all, rather than an incomplete copy of one."""
    page_number, magic = raw[:8], raw[PAGE_HEADER : PAGE_HEADER + 4]
    if page_number != bytes(len(page_number)):
        return False
    return len(magic) < 4 or magic == MAGIC.to_bytes(4, "little")


def _meta_page(fd: int, offset: int, number: int, where: str) -> LmdbHeader | None:
    """Meta page ``number`` at ``offset``, as mdb_env_read_header checks it; None if cut off."""
    raw = os.pread(fd, META_BYTES, offset)
    if number == 0 and not _starts_as_lmdb(raw):
        raise FormatError(
            f"{where} is not an LMDB file (no LMDB meta page at its start). Point LMDBDataset at a "
            "results/<split>.lmdb written by the workflow."
        )
    if len(raw) < META_BYTES:
        return None
    problem = meta_problem(raw, number)
    if problem is not None:
        raise FormatError(f"{where}: {problem}. {RECOPY_ADVICE}")
    fields = unpack_meta(raw)
    page_size, last_page, txnid = fields.free.pad, fields.last_pgno, fields.txnid
    return LmdbHeader(page_size, last_page, txnid, fields.main.root, fields.main.depth)


def read_lmdb_header(fd: int, where: str) -> LmdbHeader:
    """The current meta page of the LMDB file open as ``fd``, read as LMDB reads it: both meta
    pages must be valid, and the one with the larger txnid (page 0 on a tie) is current. Raises
    FormatError naming ``where`` for anything LMDB would refuse or crash on."""
    size = os.fstat(fd).st_size
    first = _meta_page(fd, 0, 0, where)
    second = None if first is None else _meta_page(fd, first.page_size, 1, where)
    if first is None or second is None:
        at_least = "" if first is None else f" (its first meta page says {first.required_bytes:,} bytes)"
        raise TruncatedFileError(
            f"{where} is shorter than it should be: it holds {size:,} bytes, not even LMDB's two meta "
            f"pages{at_least}. {_INCOMPLETE} {RECOPY_ADVICE}"
        )
    return second if second.txnid > first.txnid else first


def data_file(path: str) -> str:
    """The file that holds an environment's pages (a directory environment keeps them in data.mdb).
    A folder of datasets (a conversion's OUTDIR) is named as such, with the files it holds."""
    if not os.path.isdir(path):
        return path
    data = os.path.join(path, "data.mdb")
    if os.path.exists(data):
        return data
    datasets = sorted(name for name in os.listdir(path) if name.endswith(".lmdb") and _holds_pages(path, name))
    if datasets:
        raise IsADirectoryError(
            f"{path} is a folder of datasets, not one: it holds {', '.join(datasets)}. "
            f"Open one of them, e.g. LMDBDataset({os.path.join(path, datasets[0])!r})"
        )
    raise FileNotFoundError(
        f"{path} is a folder holding no dataset: no data.mdb (a folder-style LMDB) and no .lmdb file. "
        f"Point LMDBDataset at a results/<split>.lmdb written by the workflow."
    )


def _holds_pages(folder: str, name: str) -> bool:
    """Whether ``folder/name`` is a file, or a folder-style LMDB (holding data.mdb)."""
    path = os.path.join(folder, name)
    return os.path.isfile(path) or os.path.exists(os.path.join(path, "data.mdb"))


def check_lmdb_file(path: str | os.PathLike[str]) -> LmdbHeader:
    """Check, with plain reads and before any memory map, that the LMDB file at ``path`` holds every
    page its header says it uses. Reader, verify, add_locations and convert_legacy call it before
    they open a file: LMDB would crash (SIGBUS) on the first missing page it touches.

    Args:
        path (str or os.PathLike): the LMDB file, or a folder holding ``data.mdb``.

    Returns:
        LmdbHeader: what the file's current meta page says (page size, last page, txnid, root).

    Raises:
        TruncatedFileError: the file holds fewer bytes than its header says (an incomplete copy).
        FormatError: not an LMDB file, or a damaged meta page; the message says what to do.
    """
    where = os.fspath(path)
    fd = os.open(data_file(where), os.O_RDONLY)
    try:
        header = read_lmdb_header(fd, where)
        size = os.fstat(fd).st_size
    finally:
        os.close(fd)
    missing = header.required_bytes - size
    if missing > 0:
        raise TruncatedFileError(
            f"{where} is shorter than it should be: its LMDB header says its pages run to "
            f"{header.required_bytes:,} bytes, but the file holds {size:,}: the last {missing:,} "
            f"byte{'s are' if missing > 1 else ' is'} missing. {_INCOMPLETE} {RECOPY_ADVICE}"
        )
    return header


# LMDB trusts its pages: a damaged node offset, key size or value size sends it past the end of the
# file (SIGBUS). So before the reader asks LMDB for a key, every page on the way to it is checked
# with plain reads (once per page and process): the node offsets and keys lie inside the page,
# child pages and values inside the file, keys in order (so LMDB's binary search takes the path
# checked here). The file must not change meanwhile: lock=True readers, whose writer may change it,
# are not checked this way.


@dataclass(frozen=True)
class _CheckedPage:
    branch: bool
    keys: list[bytes]  # each node's key, ascending (a branch page's first key is never compared)
    children: list[int]  # a branch page's child pages, one per key


class PageGuard:
    """Checks the pages of one LMDB file on the way to a key before LMDB follows them."""

    def __init__(self, fd: int, header: LmdbHeader, where: str) -> None:
        self.fd, self.header, self.where = fd, header, where
        self.checked: dict[int, _CheckedPage] = {}

    def check_key(self, key: bytes) -> None:
        """Raise FormatError unless LMDB can look ``key`` up without leaving checked pages."""
        pgno = self.header.root
        if pgno == P_INVALID:
            return  # an empty database: LMDB reads no page
        for _ in range(self.header.depth):
            page = self.checked.get(pgno) or self._check_page(pgno)
            if not page.branch:
                return
            # LMDB's binary search over ascending keys: the last child whose key is <= ``key``
            pgno = page.children[bisect.bisect_right(page.keys, key, 1, len(page.keys)) - 1]
        raise self._damaged(pgno, f"the tree is deeper than the {self.header.depth} levels its meta page says")

    def _damaged(self, pgno: int, what: str) -> FormatError:
        return FormatError(f"{self.where}: its LMDB page {pgno} is damaged ({what}). {RECOPY_ADVICE}")

    def _check_page(self, pgno: int) -> _CheckedPage:
        size = self.header.page_size
        if not 2 <= pgno <= self.header.last_page:
            raise self._damaged(pgno, "a page number outside the file")
        raw = os.pread(self.fd, size, pgno * size)
        stored, flags, lower, upper = PAGE_FIELDS.unpack_from(raw) if len(raw) == size else (-1, 0, 0, 0)
        if stored != pgno or flags not in (P_BRANCH, P_LEAF):  # on disk exactly one of the two
            raise self._damaged(pgno, "not the branch or leaf page it should be")
        if not PAGE_HEADER <= lower <= upper <= size or lower % 2:
            raise self._damaged(pgno, "a damaged header")
        ptrs = struct.unpack_from(f"<{(lower - PAGE_HEADER) // 2}H", raw, PAGE_HEADER)
        page = _CheckedPage(flags == P_BRANCH, [], [])
        if page.branch and len(ptrs) < 2:  # LMDB asserts this never happens (an abort, not an error)
            raise self._damaged(pgno, "a branch page with fewer than two keys")
        for ptr in ptrs:
            self._check_node(pgno, raw, ptr, upper, page)
        if any(a >= b for a, b in itertools.pairwise(page.keys[1 if page.branch else 0 :])):
            raise self._damaged(pgno, "its keys are out of order")
        self.checked[pgno] = page
        return page

    def _check_node(self, pgno: int, raw: bytes, ptr: int, upper: int, page: _CheckedPage) -> None:
        """One node of a page: inside it, and what it points to inside the file."""
        size = self.header.page_size
        if ptr % 2 or not upper <= ptr <= size - NODE_HEADER:
            raise self._damaged(pgno, "a node offset outside the page")
        lo, hi, flags, key_size = NODE_FIELDS.unpack_from(raw, ptr)
        data_at = ptr + NODE_HEADER + key_size
        page.keys.append(raw[ptr + NODE_HEADER : data_at])
        if page.branch:
            page.children.append(lo | hi << 16 | flags << 32)
            if not 2 <= page.children[-1] <= self.header.last_page or data_at > size:
                raise self._damaged(pgno, "a child page outside the file")
            return
        length = lo | hi << 16
        if flags & F_DUPDATA:  # never in these files' main database (not duplicate-sorted)
            raise self._damaged(pgno, f"node flags {flags:#x}: duplicate data")
        if not flags & F_BIGDATA:  # inline data, also a named database's record (F_SUBDATA)
            if data_at + length > size:
                raise self._damaged(pgno, "a value past the end of its page")
            return
        first = struct.unpack_from("<Q", raw, data_at)[0] if data_at + 8 <= size else 0
        if first < 2 or first * size + PAGE_HEADER + length > self.header.required_bytes:
            raise self._damaged(pgno, "a value's overflow pages outside the file")


class GuardedTxn:
    """A read transaction whose ``get`` first has a PageGuard check the way to the key; anything
    else (``stat``, ``id``, the context manager) is the transaction's own."""

    def __init__(self, txn: lmdb.Transaction, guard: PageGuard) -> None:
        self.txn, self.guard = txn, guard

    def get(self, key: bytes, default: Any = None) -> Any:
        self.guard.check_key(key)
        return self.txn.get(key, default)

    def __enter__(self) -> GuardedTxn:
        self.txn.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.txn.__exit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.txn, name)


#: A read transaction as the reading functions take it: LMDB's own, or one whose gets are guarded.
LmdbReadTxn: TypeAlias = "lmdb.Transaction | GuardedTxn"
