"""Whether a file's recorded record locations (meta/locations) fit it: transaction, checksum, layout,
and a spread of records against their CRC-32 (``locations_problem``), checked when a file opens."""

from __future__ import annotations

import os

import lmdb
import numpy as np

from imagefolder_lmdb.reader.format import LOCATION_DTYPE, Meta, checksum
from imagefolder_lmdb.reader.lmdb_layout import PAGE_HEADER
from imagefolder_lmdb.reader.offset_reads import pread_bytes

#: How many located records are compared byte for byte with LMDB's view when a file is opened.
SPOT_CHECKS = 8


class LocationsWarning(UserWarning):
    """A file's recorded record locations do not fit it, so it is read through LMDB instead."""

    # printed under the name it is imported by, as numpy's errors are, not the defining module
    __module__ = "imagefolder_lmdb.reader"


def spot_check_indices(offsets: np.ndarray, count: int = SPOT_CHECKS) -> list[int]:
    """Located records spread evenly over the file, first and last included: deterministic, so
    every process checks the same ones."""
    located = np.flatnonzero(offsets)
    if not located.size:
        return []
    # linspace(0, last, count).round()'s points (half to even, as numpy rounds), in plain integers: a file
    # of a split of a thousand opens without numpy's per-call cost for eight numbers
    last = located.size - 1
    picks = sorted({round(step * last / (count - 1)) for step in range(count)}) if count > 1 else [0]
    return located[picks].tolist()


def locations_problem(fd: int, env: lmdb.Environment, meta: Meta) -> str | None:
    """Why ``meta.locations`` cannot be used to read the file open as ``env`` and as ``fd``, or None
    if they can.

    They must have been taken at the file's current LMDB transaction (a compacting copy restarts
    at 1 and renumbers pages; a plain copy keeps both), match their checksum (files written before
    it existed have none: see docs/FORMAT.md), have the shape of LMDB values (locations_layout_problem)
    and hold, for a spread of records, bytes with the record's CRC-32 (_spot_check_problem).

    Args:
        fd (int): a read-only descriptor of the file.
        env (lmdb.Environment): the file's environment (its transaction id and page size).
        meta (Meta): the file's meta, with ``locations``.

    Returns:
        str or None: the problem, in words that follow the file's name; None if they fit.
    """
    info = env.info()
    return fitting_problem(fd, meta, info["last_txnid"], info["last_pgno"], env.stat()["psize"])


def fitting_problem(fd: int, meta: Meta, txnid: int, last_pgno: int, page_size: int) -> str | None:
    """locations_problem of a file whose LMDB header (transaction, last page, page size) was read
    without LMDB (reader/data_files.py reads a split's data files by plain reads only)."""
    assert meta.locations is not None
    recorded = meta.document.get("locations")
    taken = recorded.get("txnid") if isinstance(recorded, dict) else None
    if taken != txnid:
        return (
            f"its record locations were taken at LMDB transaction {taken}, but the file is at "
            f"transaction {txnid}: it was rewritten since, for instance by a compacting copy (mdb_copy -c)"
        )
    if len(meta.locations) != meta.length:
        return f"meta/locations has {len(meta.locations)} entries for its {meta.length} records: it is damaged"
    if isinstance(recorded, dict) and "crc32" in recorded and recorded["crc32"] != locations_checksum(meta.locations):
        return "its record locations (meta/locations) do not match their checksum: they are damaged"
    pages_end = (last_pgno + 1) * page_size
    problem = locations_layout_problem(meta.locations, page_size, min(pages_end, os.fstat(fd).st_size))
    if problem is not None:
        return problem
    return _spot_check_problem(fd, meta)


def _spot_check_problem(fd: int, meta: Meta) -> str | None:
    """Whether a spread of located records holds, at its recorded location, bytes with the record's
    CRC-32 (meta/crc32): another record's bytes, or a layout the offsets were not taken from, would
    not. LMDB is not asked: its pages are never followed to judge the offsets."""
    assert meta.locations is not None
    offsets, lengths = meta.locations["offset"], meta.locations["length"]
    for index in spot_check_indices(offsets):
        if checksum(pread_bytes(fd, int(lengths[index]), int(offsets[index]))) != int(meta.crc32[index]):
            return (
                f"record {index}'s bytes at its recorded location do not match its checksum (meta/crc32): "
                "the locations are wrong, or the record itself is damaged (`verify --full` tells which)"
            )
    return None


def locations_checksum(locations: np.ndarray) -> int:
    """The checksum meta/json records for meta/locations (``locations.crc32``): CRC-32 of its bytes."""
    return checksum(np.ascontiguousarray(locations, dtype=LOCATION_DTYPE).tobytes())


def locations_layout_problem(locations: np.ndarray, page_size: int, end: int) -> str | None:
    """Why ``locations`` cannot describe LMDB values of a file whose pages end at byte ``end``, or
    None: every located range must lie after the two meta pages and before ``end``, either inside
    one page (a value in a leaf page) or from just after an overflow page's 16-byte header, and no
    two may overlap. Cheap (no reads); catches damage the checksum cannot, in files without one."""
    located = np.flatnonzero(locations["offset"])
    starts = locations["offset"][located]
    lengths = locations["length"][located].astype(np.uint64)
    limit = np.uint64(end)
    in_meta_pages = starts < np.uint64(2 * page_size)
    if in_meta_pages.any():
        return f"{_location_text(locations, int(located[np.argmax(in_meta_pages)]))} lies in LMDB's meta pages"
    past_the_end = (starts >= limit) | (lengths > limit - np.minimum(starts, limit))
    if past_the_end.any():
        return (
            f"{_location_text(locations, int(located[np.argmax(past_the_end)]))} runs past the end of the file's pages"
        )
    in_page = starts % np.uint64(page_size)
    misshapen = (in_page != np.uint64(PAGE_HEADER)) & (in_page + lengths > np.uint64(page_size))
    if misshapen.any():
        return (
            f"{_location_text(locations, int(located[np.argmax(misshapen)]))} is neither inside one page nor "
            "at the start of an overflow page: it is damaged"
        )
    order = np.argsort(starts, kind="stable") if np.any(starts[1:] < starts[:-1]) else np.arange(len(starts))
    overlapping = starts[order][1:] < (starts + lengths)[order][:-1]
    if overlapping.any():
        first = int(np.argmax(overlapping))
        a, b = (int(located[order[first + k]]) for k in (0, 1))
        return f"{_location_text(locations, a)} and {_location_text(locations, b)} overlap: they are damaged"
    return None


def _location_text(locations: np.ndarray, index: int) -> str:
    offset, length = int(locations["offset"][index]), int(locations["length"][index])
    return f"record {index}'s recorded location (offset {offset:,}, length {length:,})"
