"""The pinned reader of a split of revisions (docs/FORMAT.md, version 5): ``open_if_revisions`` opens
the revision a dataset asks for (default: the pointer's current one) and ``RevisionRecords`` reads its
samples from its data files, found by content id. The pointer is read once, when the dataset is made:
a DataLoader worker (fork, spawn, forkserver) gets the revision with the dataset and reopens only its
data files, so a reader keeps the revision it opened for its life, whatever the pointer names later."""

from __future__ import annotations

import json
import operator
import os
from collections.abc import Sequence
from typing import Any

import lmdb
import numpy as np

from imagefolder_lmdb.reader.format import Meta
from imagefolder_lmdb.reader.handles import forget_if_replaced, guarded, shared_env
from imagefolder_lmdb.reader.identity import FileChangedError, changed_message
from imagefolder_lmdb.reader.records import Opened
from imagefolder_lmdb.reader.revision_data_files import (
    MissingDataFileError,
    OpenOptions,
    missing_message,
    opened_file,
)
from imagefolder_lmdb.reader.revision_format import (
    POINTER_JSON,
    Revision,
    data_file_path,
    data_folder,
    decode_pointer,
    decode_revision,
    entry_of,
    is_pointer_document,
)
from imagefolder_lmdb.reader.revision_records import (
    Located,
    NoTargets,
    OpenSettings,
    RevisionRecords,
    located_places,
)

# the names other parts take from here (remote/revisions.py, verify/, writing/)
__all__ = [
    "MissingDataFileError",
    "NoTargets",
    "OpenOptions",
    "OpenSettings",
    "RevisionRecords",
    "composed_meta",
    "missing_message",
    "open_if_revisions",
    "opened_env",
    "pointer_document",
    "refuse_if_pointer",
]


def opened_env(path: str) -> lmdb.Environment:
    """This process's environment of the file now at ``path`` (the commands' and the writer's way in: LMDB
    opens a file once per process, and a reader in the same process may have it open already)."""
    path = os.path.realpath(path)  # the name a dataset opens it by (its realpath)
    forget_if_replaced(path)
    return shared_env(path)


def pointer_document(path: str, env: lmdb.Environment, lock: bool) -> dict[str, Any] | None:
    """The pointer's meta/json if the file at ``path`` is a pointer, else None (a split file, or
    anything its own reader names)."""
    with guarded(env.begin(), path, lock) as txn:
        raw = txn.get(POINTER_JSON)
        raw = None if raw is None else bytes(raw)
    try:
        document = None if raw is None else json.loads(raw)
    except (ValueError, RecursionError):  # a nesting bomb too
        return None  # a split file's damaged meta: its own reader names it
    return decode_pointer(raw, path) if raw is not None and is_pointer_document(document) else None


def refuse_if_pointer(path: str, env: lmdb.Environment, lock: bool, opened: str) -> None:
    """FileChangedError if a dataset that opened a single split file finds a pointer at its path: the
    split changed since (its file now lies in the data folder; a new dataset reads the new revision)."""
    pointer = pointer_document(path, env, lock)
    if pointer is not None:
        found = f"a split of revisions at revision {pointer['revision']}, its data files in {data_folder(path)}/"
        raise FileChangedError(changed_message(path, opened, found))


def open_if_revisions(
    path: str, env: lmdb.Environment, options: OpenOptions, revision: int | None = None
) -> Opened | None:
    """Revision ``revision`` (None: the current one) of the pointer at ``path``; None when ``path`` is a
    split file (ValueError if a revision was asked of one)."""
    pointer = pointer_document(path, env, options.lock)
    if pointer is None:
        if revision is not None:
            raise ValueError(
                f"revision={revision}: {path} is a single split file, not a split of revisions (it never "
                "changed since its conversion); open it without revision="
            )
        return None
    entry = entry_of(pointer, revision, path)
    with guarded(env.begin(), path, options.lock) as txn:
        opened = decode_revision(txn, entry, path)
    return open_revision(path, opened, options)


def open_revision(path: str, revision: Revision, options: OpenOptions) -> Opened:
    """Revision ``revision`` of the pointer at ``path``: its data files opened and checked, its index composed."""
    places = [data_file_path(path, file.id) for file in revision.files]
    missing = [place for place in places if not os.path.isfile(place)]
    if missing:
        raise MissingDataFileError(missing_message(path, revision.number, missing))
    files = [
        opened_file(path, revision.number, file, place, options)
        for file, place in zip(revision.files, places, strict=True)
    ]
    metas = [file.meta for file in files]
    at = record_places(revision.order, metas)
    meta = composed_meta(revision, metas, at)
    offsets, lengths = located_places(files, at)
    crc32 = meta.crc32 if options.crc_check else None
    records = RevisionRecords(
        path, revision.number, revision.order, files, options, Located(offsets, lengths, crc32, meta.storage)
    )
    for file in files:  # the composed meta and places hold what the dataset needs: workers get no copy of each file's
        file.meta = file.offsets = file.lengths = None
    return Opened(records, meta.document, meta.classes, meta.paths, meta.targets(), meta, revision.number)


def record_places(order: np.ndarray, metas: Sequence[Meta | None]) -> np.ndarray:
    """Each sample's record's place in the data files' records put end to end (``order``: the revision's)."""
    known = [meta for meta in metas if meta is not None]
    assert len(known) == len(metas)
    if not known:
        return order["record"]
    starts = np.cumsum([0] + [meta.length for meta in known[:-1]], dtype=np.int64)
    return starts[order["file"].astype(np.int64)] + order["record"].astype(np.int64)


def composed_meta(revision: Revision, metas: Sequence[Meta | None], at: np.ndarray | None = None) -> Meta:
    """The meta of the single file the revision flattens to: each sample's columns taken from its record
    (one gather over the data files' columns put end to end, whatever their number; ``at``: record_places)."""
    known = [meta for meta in metas if meta is not None]
    assert len(known) == len(metas)
    at = record_places(revision.order, metas) if at is None else at
    columns = {name: _gathered(known, name, dtype, at) for name, dtype in COLUMNS.items()}
    paths = _gathered_paths([meta.paths for meta in known], at)
    for position, path in revision.moved.items():
        paths[position] = path
    return Meta(
        document=dict(revision.document),
        labels=np.ascontiguousarray(revision.labels, dtype=np.int32),
        sizes=columns["sizes"],
        crc32=columns["crc32"],
        storage=columns["storage"],
        source_bytes=columns["source_bytes"],
        paths=paths,
    )


#: The per-record columns of a data file that a revision's meta takes, with their types.
COLUMNS = {"sizes": np.uint32, "crc32": np.uint32, "storage": np.uint8, "source_bytes": np.uint64}


def _gathered(metas: Sequence[Meta], name: str, dtype: type, at: np.ndarray) -> np.ndarray:
    if not metas:
        return np.zeros((0, 2) if name == "sizes" else 0, dtype)
    return np.concatenate([np.asarray(getattr(meta, name), dtype=dtype) for meta in metas])[at]


def _gathered_paths(per_file: list[list[str]], at: np.ndarray) -> list[str]:
    """The names at ``at`` of the files' names put end to end, taken at C speed (itemgetter)."""
    joined = [name for names in per_file for name in names]
    if len(at) < 2:
        return [joined[position] for position in at.tolist()]
    return list(operator.itemgetter(*at.tolist())(joined))
