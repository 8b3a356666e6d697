"""Record where each record lies in an imagefolder-lmdb file, so readers fetch it with one pread.

    python scripts/add_locations.py FILE.lmdb [FILE.lmdb ...]
    imagefolder-lmdb add-locations FILE.lmdb [...]   (the same, installed with pip)

The workflow does this itself (write_meta); run it on a file written before record locations
existed, or on a copy that the reader warns about (a compacting ``mdb_copy -c`` renumbers every
page). No record is rewritten: the file's B-tree is walked (lmdb_pages: branch and leaf pages
only) and one LMDB transaction stores ``meta/locations`` and the ``locations`` entry of
``meta/json``. Run it while nothing reads the file. docs/FORMAT.md describes what is stored.

Why some records stay unlocated: a write transaction copies every leaf page it changes to a new
place, and this one changes the leaves holding meta keys. Values stored inside such a leaf
(small ones; large values live on overflow pages that never move) would move under their
recorded offset, so they are marked "read through LMDB" instead. Afterwards the tree is walked
again and every recorded location is checked against it.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass

import lmdb
import numpy as np

from imagefolder_lmdb import lmdb_pages
from imagefolder_lmdb.dataset import (
    KEY_WIDTH,
    LOCATION_DTYPE,
    META_KEYS,
    FormatError,
    Meta,
    decode_meta,
    encode_document,
    locations_problem,
)


@dataclass(frozen=True)
class Located:
    """What add_locations recorded."""

    records: int
    located: int  # the others (inline values in a leaf that holds meta keys) read through LMDB
    txnid: int  # the LMDB transaction that wrote them, which identifies the layout they fit


def locations_from_walk(walk: lmdb_pages.Walk, length: int, where: str) -> np.ndarray:
    """LOCATION_DTYPE[length] from a walk: every record located except the inline values of leaf
    pages that also hold meta keys (the next write transaction moves those pages)."""
    nodes = walk.records
    wanted = nodes.index < length
    if not np.array_equal(nodes.index[wanted], np.arange(length)):
        raise FormatError(f"{where}: the records are not exactly 0..{length - 1}; the file is damaged")
    leaves = np.fromiter(walk.other_key_leaves, dtype=np.uint64, count=len(walk.other_key_leaves))
    movable = nodes.inline[wanted] & np.isin(nodes.leaf[wanted], leaves)
    locations = np.zeros(length, LOCATION_DTYPE)
    locations["offset"] = np.where(movable, np.uint64(0), nodes.offset[wanted])
    locations["length"] = nodes.length[wanted]
    return locations


def _commit(env: lmdb.Environment, meta: Meta, locations: np.ndarray) -> int:
    """Store the locations and the JSON entry that names this transaction; returns its id."""
    located = int(np.count_nonzero(locations["offset"]))
    while True:
        try:
            with env.begin(write=True) as txn:
                txnid = txn.id()
                document = {**meta.document, "locations": {"txnid": txnid, "located": located}}
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
    fd = os.open(path, os.O_RDONLY)
    try:
        with env.begin() as txn:
            meta = decode_meta(txn, path)
            problem = locations_problem(path, fd, env, txn, meta)
    finally:
        os.close(fd)
    if problem is not None:
        raise RuntimeError(f"{path}: {problem} right after writing them (a bug)")
    return meta


def current_locations(env: lmdb.Environment, path: str) -> Located | None:
    """What the file's stored locations say, if they are valid for it as it is, else None."""
    fd = os.open(path, os.O_RDONLY)
    try:
        with env.begin() as txn:
            meta = decode_meta(txn, path)
            entry = meta.document.get("locations")
            if meta.locations is None or not entry or locations_problem(path, fd, env, txn, meta) is not None:
                return None
    finally:
        os.close(fd)
    return Located(records=meta.length, located=int(np.count_nonzero(meta.locations["offset"])), txnid=entry["txnid"])


def add_locations(env: lmdb.Environment, path: str) -> Located:
    """Record the locations of every record of the dataset at ``path``, open for writing as
    ``env`` (single file, its meta already written). Returns what was recorded."""
    with env.begin() as txn:
        meta = decode_meta(txn, path)
    locations = locations_from_walk(lmdb_pages.walk(path, KEY_WIDTH), meta.length, path)
    txnid = _commit(env, meta, locations)
    _check(path, env, locations, txnid)
    return Located(records=meta.length, located=int(np.count_nonzero(locations["offset"])), txnid=txnid)


def add_locations_to_file(path: str) -> tuple[Located, bool]:
    """add_locations on a finished file, unless its locations are valid already (then nothing is
    written); returns them and whether they were written now."""
    if os.path.isdir(path):
        raise FormatError(f"{path} is a directory LMDB; only single-file datasets have record locations")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such file")
    size = os.path.getsize(path)
    # lock=False as the workflow's writers: one writer, no -lock file left beside the data.
    env = lmdb.open(path, subdir=False, map_size=max(1 << 30, 2 * size), lock=False, readahead=False, max_dbs=0)
    try:
        located = current_locations(env, path)
        if located is not None:
            return located, False
        located = add_locations(env, path)
        env.sync(True)
    finally:
        env.close()
    return located, True


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=prog,
        description=(
            "Record where each record lies in imagefolder-lmdb files (meta/locations), so that the "
            "reader fetches each with one pread, fast also on a cold cache. Rewrites no record; "
            "run it while nothing reads the file."
        ),
        epilog="See docs/FORMAT.md, section 'Record locations'.",
    )
    parser.add_argument("files", nargs="+", metavar="FILE.lmdb", help="a dataset file (results/<split>.lmdb)")
    args = parser.parse_args(argv)
    status = 0
    for path in args.files:
        try:
            located, written = add_locations_to_file(path)
        except (FormatError, ValueError, OSError, lmdb.Error) as exc:
            print(f"FAIL {path}: {exc}", file=sys.stderr, flush=True)
            status = 1
            continue
        print(
            f"OK {path}: {located.located:,} of {located.records:,} records located "
            f"(the others are read through LMDB), LMDB transaction {located.txnid}"
            + ("" if written else "; they were recorded already, nothing written"),
            flush=True,
        )
    return status


if __name__ == "__main__":
    sys.exit(main())
