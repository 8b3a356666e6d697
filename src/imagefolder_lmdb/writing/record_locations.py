"""Where each record lies in an imagefolder-lmdb file, recorded so readers fetch it with one pread:
the library of write_meta, convert_legacy and ``imagefolder-lmdb add-locations`` (commands/add_locations.py,
the command, was this module's home: issue 42 put it below verify and the steps).

No record is rewritten: the file's pages are checked and its B-tree walked (reader/lmdb_pages.py:
branch and leaf pages, the free list), the locations it holds are compared with the walk, and,
unless they match and carry their checksum, one LMDB transaction stores ``meta/locations`` and the
``locations`` entry of ``meta/json``. A file that is cut short or whose pages are damaged is
refused with nothing written. docs/FORMAT.md describes what is stored.

Why some records stay unlocated: a write transaction copies every leaf page it changes to a new
place, and this one changes the leaves holding meta keys. Values stored inside such a leaf
(small ones; large values live on overflow pages that never move) would move under their
recorded offset, so they are marked "read through LMDB" instead. Afterwards the tree is walked
again and every recorded location is checked against it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

import lmdb
import numpy as np

from imagefolder_lmdb.reader import (
    KEY_WIDTH,
    LOCATION_DTYPE,
    META_KEYS,
    FormatError,
    Meta,
    check_lmdb_file,
    decode_meta,
    encode_document,
    encode_meta,
    lmdb_check,
    lmdb_pages,
    locations_checksum,
    locations_problem,
)
from imagefolder_lmdb.writing.lmdb_writer import LMDBWriter


@dataclass(frozen=True)
class LocationCount:
    """What add_locations recorded."""

    records: int
    located: int  # the others (inline values in a leaf that holds meta keys) read through LMDB
    txnid: int  # the LMDB transaction that wrote them, which identifies the layout they fit


def _walked(walk: lmdb_pages.Walk, length: int, where: str) -> lmdb_pages.Nodes:
    """The walk's nodes of records 0..length-1, in index order (refused unless exactly those)."""
    nodes = walk.records
    wanted = nodes.index < length
    if not np.array_equal(nodes.index[wanted], np.arange(length)):
        raise FormatError(f"{where}: the records are not exactly 0..{length - 1}; the file is damaged")
    return lmdb_pages.Nodes(*(getattr(nodes, name)[wanted] for name in lmdb_pages.Nodes.__dataclass_fields__))


def locations_from_walk(walk: lmdb_pages.Walk, length: int, where: str) -> np.ndarray:
    """LOCATION_DTYPE[length] from a walk: every record located except the inline values of leaf
    pages that also hold meta keys (the next write transaction moves those pages)."""
    nodes = _walked(walk, length, where)
    leaves = np.fromiter(walk.other_key_leaves, dtype=np.uint64, count=len(walk.other_key_leaves))
    movable = nodes.inline & np.isin(nodes.leaf, leaves)
    locations = np.zeros(length, LOCATION_DTYPE)
    locations["offset"] = np.where(movable, np.uint64(0), nodes.offset)
    locations["length"] = nodes.length
    return locations


def wrong_locations(stored: np.ndarray, walk: lmdb_pages.Walk, where: str) -> str | None:
    """Which located entries of ``stored`` differ from where the walk finds their record, or None."""
    nodes = _walked(walk, len(stored), where)
    located = stored["offset"] != 0
    wrong = np.flatnonzero(located & ((stored["offset"] != nodes.offset) | (stored["length"] != nodes.length)))
    if not wrong.size:
        return None
    first = int(wrong[0])
    return (
        f"the recorded locations of {wrong.size:,} of {len(stored):,} records do not match the file (record {first}: "
        f"recorded at offset {int(stored['offset'][first]):,}, length {int(stored['length'][first]):,}; the file "
        f"holds it at offset {int(nodes.offset[first]):,}, length {int(nodes.length[first]):,})"
    )


@dataclass(frozen=True)
class Finding:
    """What is wrong with the record locations a file holds, judged against a walk of its B-tree."""

    kind: Literal["missing", "rewritten", "wrong", "checksum", "no-checksum"]
    text: str

    @property
    def damaged(self) -> bool:
        """The locations claim to fit the file as it is, and do not: damage (or a writer's bug)."""
        return self.kind in ("wrong", "checksum")


def locations_finding(env: lmdb.Environment, meta: Meta, walk: lmdb_pages.Walk, where: str) -> Finding | None:
    """What is wrong with the record locations of ``meta`` (the file open as ``env``); None when every
    located entry is where ``walk`` finds its record and the checksum in meta/json matches."""
    entry = meta.document.get("locations")
    if meta.locations is None or not isinstance(entry, dict):
        return Finding("missing", "no record locations are recorded")
    txnid = env.info()["last_txnid"]
    if entry.get("txnid") != txnid:
        return Finding(
            "rewritten",
            f"the recorded locations were taken at LMDB transaction {entry.get('txnid')}, but the file is at "
            f"transaction {txnid}: it was rewritten since, for instance by a compacting copy (mdb_copy -c)",
        )
    if len(meta.locations) != meta.length:
        return Finding("wrong", f"meta/locations has {len(meta.locations)} entries for {meta.length} records")
    wrong = wrong_locations(meta.locations, walk, where)
    if wrong is not None:
        return Finding("wrong", wrong)
    if "crc32" not in entry:
        return Finding(
            "no-checksum", "the recorded locations match the file but carry no checksum (an earlier version wrote them)"
        )
    if entry["crc32"] != locations_checksum(meta.locations):
        return Finding("checksum", "the recorded locations match the file, but not their checksum in meta/json")
    return None


def _commit(env: lmdb.Environment, meta: Meta, locations: np.ndarray) -> int:
    """Store the locations and the JSON entry that names this transaction; returns its id."""
    located = int(np.count_nonzero(locations["offset"]))
    while True:
        try:
            with env.begin(write=True) as txn:
                txnid = txn.id()
                entry = {"txnid": txnid, "located": located, "crc32": locations_checksum(locations)}
                document = {**meta.document, "locations": entry}
                txn.put(META_KEYS["locations"], locations.tobytes())
                txn.put(META_KEYS["json"], encode_document(document))
            return txnid
        except lmdb.MapFullError:
            env.set_mapsize(env.info()["map_size"] * 2)


def _check(path: str, env: lmdb.Environment, recorded: np.ndarray, txnid: int) -> Meta:
    """Walk the committed file again: every located record must sit where it was recorded, and
    the reader's own opening checks must accept the file. Anything else is a bug here."""
    if env.info()["last_txnid"] != txnid:
        raise RuntimeError(f"{path}: expected LMDB transaction {txnid}, found {env.info()['last_txnid']}")
    after = lmdb_pages.walk(path, KEY_WIDTH).records
    located = np.flatnonzero(recorded["offset"])
    if not (
        np.array_equal(after.offset[located], recorded["offset"][located])
        and np.array_equal(after.length[located], recorded["length"][located])
    ):
        raise RuntimeError(f"{path}: a located record moved while its location was written (a bug)")
    with env.begin() as txn:
        meta = decode_meta(txn, path)
    fd = os.open(path, os.O_RDONLY)
    try:
        problem = locations_problem(fd, env, meta)
    finally:
        os.close(fd)
    if problem is not None:
        raise RuntimeError(f"{path}: {problem} right after writing them (a bug)")
    return meta


def current_locations(env: lmdb.Environment, path: str) -> LocationCount | None:
    """What the file's stored locations say, if they are valid for it as it is, else None."""
    with env.begin() as txn:
        meta = decode_meta(txn, path)
    entry = meta.document.get("locations")
    if meta.locations is None or not entry:
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        if locations_problem(fd, env, meta) is not None:
            return None
    finally:
        os.close(fd)
    return LocationCount(
        records=meta.length, located=int(np.count_nonzero(meta.locations["offset"])), txnid=entry["txnid"]
    )


def add_locations(env: lmdb.Environment, path: str) -> LocationCount:
    """Record the locations of every record of the dataset at ``path``, open for writing as
    ``env`` (single file, its meta already written). Returns what was recorded."""
    with env.begin() as txn:
        meta = decode_meta(txn, path)
    locations = locations_from_walk(lmdb_pages.walk(path, KEY_WIDTH), meta.length, path)
    txnid = _commit(env, meta, locations)
    _check(path, env, locations, txnid)
    return LocationCount(records=meta.length, located=int(np.count_nonzero(locations["offset"])), txnid=txnid)


def store_meta_and_locations(writer: LMDBWriter, meta: Meta) -> LocationCount:
    """The last step of writing a file: ``meta`` stored, then the records' real locations."""
    values = encode_meta(meta)
    del values[META_KEYS["locations"]]  # an all-zero placeholder: add_locations stores the real ones
    writer.put_many(values)
    return add_locations(writer.env, writer.path)


@dataclass(frozen=True)
class Outcome:
    """What add_locations_to_file found and did."""

    located: LocationCount
    written: bool
    finding: Finding | None  # what was wrong with the stored locations, None if they matched the file


def _checked_walk(path: str) -> lmdb_pages.Walk:
    """The file's walk, after checking its size and every page a write transaction reads, so that
    LMDB never follows damage (a signal, or a page in use handed out as free)."""
    check_lmdb_file(path)
    try:
        return lmdb_check.check(path, KEY_WIDTH)
    except ValueError as exc:
        raise FormatError(
            f"{path}: its LMDB pages do not check out ({exc}): the file is damaged, or not one this workflow "
            "wrote; nothing was written. Copy it again from the original, and check the original first with "
            "`imagefolder-lmdb verify ORIGINAL --full`"
        ) from exc


def add_locations_to_file(path: str, force: bool = False) -> Outcome:
    """add_locations on a finished file, unless its locations match it already (then nothing is
    written, unless ``force``); says what was wrong with them."""
    if os.path.isdir(path):
        raise FormatError(f"{path} is a directory LMDB; only single-file datasets have record locations")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such file")
    walk = _checked_walk(path)
    size = os.path.getsize(path)
    # lock=False as the workflow's writers: one writer, no -lock file left beside the data.
    env = lmdb.open(path, subdir=False, map_size=max(1 << 30, 2 * size), lock=False, readahead=False, max_dbs=0)
    try:
        with env.begin() as txn:
            meta = decode_meta(txn, path)
        finding = locations_finding(env, meta, walk, path)
        if finding is None and not force:
            assert meta.locations is not None
            located = int(np.count_nonzero(meta.locations["offset"]))
            return Outcome(LocationCount(meta.length, located, env.info()["last_txnid"]), False, None)
        outcome = Outcome(add_locations(env, path), True, finding)
        env.sync(True)
    finally:
        env.close()
    return outcome
