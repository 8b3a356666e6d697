"""The next revision of a split, planned (writing/revisions.py writes it): each sample of the new
listing found in a data file by its path, the newest file first; the records of the parent no longer
held; what changed; the meta document of the file the revision flattens to."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import lmdb
import numpy as np

from imagefolder_lmdb.reader import Meta, format_version_of, record_key
from imagefolder_lmdb.reader.format import NAMES_AS_BYTES_VERSION
from imagefolder_lmdb.reader.identity import content_id
from imagefolder_lmdb.reader.revision_format import ORDER_DTYPE, REMOVED_DTYPE, DataFile, Revision
from imagefolder_lmdb.reader.revisions import composed_meta
from imagefolder_lmdb.writing.meta_document import checked, storage_counts
from imagefolder_lmdb.writing.revision_copy import copied_lengths


def planned(
    parent: Revision,
    parent_metas: Sequence[Meta],
    added: Sequence[Meta],
    samples: Sequence[tuple[str, int]],
    classes: list[str],
    moved: Mapping[str, str],
    document: Mapping[str, Any],
    created: str,
    lengths: Mapping[str, np.ndarray],
) -> Revision:
    """The revision after ``parent`` whose samples are ``samples`` (path, class index into ``classes``)."""
    files, metas = _candidate_files(parent, parent_metas, added)
    parent_paths = composed_meta(parent, parent_metas).paths
    if not added and not moved and [path for path, _ in samples] == parent_paths:
        order, labels = parent.order.copy(), _labels(samples, classes)  # relabelled only: every sample kept
    else:
        where = _locations(parent, parent_paths, metas, len(parent.files), moved)
        order, labels = _order(samples, classes, where), _labels(samples, classes)
    used = np.unique(order["file"]).tolist()
    renumber = np.zeros(len(files), np.uint32)
    renumber[used] = np.arange(len(used), dtype=np.uint32)
    revision = Revision(
        number=_next_number(parent),
        parent=parent.number,
        created=created,
        files=[files[index] for index in used],
        document={"classes": classes},
        order=np.zeros(len(samples), ORDER_DTYPE),
        labels=labels,
    )
    revision.order["file"], revision.order["record"] = renumber[order["file"]], order["record"]
    used_metas = [metas[index] for index in used]
    paths = [path for path, _ in samples]
    composed = composed_meta(revision, used_metas)  # each sample under its data file's own path
    differ = np.flatnonzero(_objects(paths) != _objects(composed.paths))  # compared in numpy's loop, not Python's
    revision.moved = {position: paths[position] for position in differ.tolist()}
    composed.paths = paths
    revision.removed, revision.removed_from = _removed(parent, parent_metas, order)
    revision.changes = _changes(parent, parent_paths, order, labels, classes, paths, len(revision.removed))
    revision.document = _document(parent, revision, composed, lengths, document, created)
    return revision


def _next_number(parent: Revision) -> int:
    return parent.number + 1


def _candidate_files(
    parent: Revision, parent_metas: Sequence[Meta], added: Sequence[Meta]
) -> tuple[list[DataFile], list[Meta]]:
    """The parent's data files, then each added file not already among them (by content id)."""
    files, metas = list(parent.files), list(parent_metas)
    for meta in added:
        found = content_id(meta)
        if found not in {file.id for file in files}:
            files.append(DataFile(found, meta.length, _size_hint(meta)))
            metas.append(meta)
    return files, metas


def _size_hint(meta: Meta) -> int:
    stats = meta.document.get("stats")
    return int(stats.get("stored_bytes", 0)) if isinstance(stats, dict) else 0


@dataclass(frozen=True)
class Candidates:
    """Every record a sample of the new revision may be: the parent's samples' (in its order), then each
    added file's; ``row`` finds a path's, the last given winning (a moved image's old one, an added file's)."""

    row: dict[str, int]
    files: np.ndarray
    records: np.ndarray


def _locations(
    parent: Revision, parent_paths: list[str], metas: Sequence[Meta], first_added: int, moved: Mapping[str, str]
) -> Candidates:
    """Each path's record: the parent's, then a moved image's old record, then the added files' (the last wins)."""
    row = dict(zip(parent_paths, range(len(parent_paths)), strict=True))
    for new, old in moved.items():
        if old not in row:
            raise ValueError(f"moved: {old!r} (now {new!r}) is not a sample of revision {parent.number}")
        row[new] = row[old]
    files, records = [parent.order["file"]], [parent.order["record"]]
    for index in range(first_added, len(metas)):
        start = sum(len(part) for part in files)
        row.update(zip(metas[index].paths, range(start, start + metas[index].length), strict=True))
        files.append(np.full(metas[index].length, index, np.uint32))
        records.append(np.arange(metas[index].length, dtype=np.uint32))
    return Candidates(row, np.concatenate(files), np.concatenate(records))


def _order(samples: Sequence[tuple[str, int]], classes: list[str], where: Candidates) -> np.ndarray:
    """Each sample's (file, record) among the candidate files, checked: no path twice, none unfound."""
    paths = [path for path, _ in samples]
    if len(set(paths)) != len(paths):
        raise ValueError(f"{_first_repeated(paths)!r} is listed twice in the new samples")
    rows = np.fromiter(map(where.row.get, paths, itertools.repeat(-1)), dtype=np.int64, count=len(paths))
    unfound = np.flatnonzero(rows < 0)
    if unfound.size:
        path = paths[int(unfound[0])]
        raise ValueError(f"{path!r} is in no data file: neither a sample of the split nor a record of an added file")
    order = np.zeros(len(paths), ORDER_DTYPE)
    order["file"], order["record"] = where.files[rows], where.records[rows]
    return order


def _objects(strings: Sequence[str]) -> np.ndarray:
    return np.asarray(strings, dtype=object)


def _labels(samples: Sequence[tuple[str, int]], classes: list[str]) -> np.ndarray:
    """Each sample's class index, each checked to name one of ``classes``."""
    labels = np.array([label for _, label in samples], dtype=np.int64)
    outside = np.flatnonzero((labels < 0) | (labels >= len(classes)))
    if outside.size:
        path, label = samples[int(outside[0])]
        raise ValueError(f"{path!r} has label {label}, outside 0..{len(classes) - 1} ({len(classes)} classes)")
    return labels.astype(np.int32)


def _first_repeated(paths: list[str]) -> str | None:
    seen: set[str] = set()
    for path in paths:
        if path in seen:
            return path
        seen.add(path)
    return None


def _keys(order: np.ndarray) -> np.ndarray:
    """One number per (file, record) pair, to compare pairs as numbers."""
    return (order["file"].astype(np.uint64) << np.uint64(32)) | order["record"].astype(np.uint64)


def _removed(parent: Revision, parent_metas: Sequence[Meta], order: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """The parent's records the new order no longer holds, each with its CRC-32, and the files they lie in."""
    gone = np.flatnonzero(~np.isin(_keys(parent.order), _keys(order)))
    gone_files, gone_records = parent.order["file"][gone], parent.order["record"][gone]
    files = np.unique(gone_files)
    removed = np.zeros(len(gone), REMOVED_DTYPE)
    removed["file"], removed["record"] = np.searchsorted(files, gone_files), gone_records
    for file in files.tolist():
        mask = gone_files == file
        removed["crc32"][mask] = parent_metas[file].crc32[gone_records[mask].astype(np.int64)]
    return removed, [parent.files[file].id for file in files.tolist()]


def _changes(
    parent: Revision,
    parent_paths: list[str],
    order: np.ndarray,
    labels: np.ndarray,
    classes: list[str],
    paths: list[str],
    removed: int,
) -> dict[str, int]:
    """Against the parent: samples from files it did not read, records gone, kept ones relabelled or moved."""
    parent_keys, keys = _keys(parent.order), _keys(order)
    sorter = np.argsort(parent_keys)
    found = np.searchsorted(parent_keys, keys, sorter=sorter)
    found = np.minimum(found, max(len(parent_keys) - 1, 0))
    kept = (parent_keys[sorter[found]] == keys) if len(parent_keys) else np.zeros(len(keys), bool)
    kept_at = np.flatnonzero(kept)
    before = sorter[found][kept_at]
    # a class index of the parent's -> the new one of the same name (-1: a class gone): renumbering is no relabelling
    new_index = {name: index for index, name in enumerate(classes)}
    renamed = np.array([new_index.get(name, -1) for name in parent.classes], dtype=np.int64)
    relabelled = int((renamed[parent.labels[before]] != labels[kept_at]).sum()) if kept_at.size else 0
    moved = int((_objects(parent_paths)[before] != _objects(paths)[kept_at]).sum())
    return {"added": int((~kept).sum()), "removed": removed, "relabelled": relabelled, "moved": moved}


def _document(
    parent: Revision,
    revision: Revision,
    meta: Meta,
    lengths: Mapping[str, np.ndarray],
    given: Mapping[str, Any],
    created: str,
) -> dict[str, Any]:
    """The meta/json of the file the revision flattens to: the parent's entries, the ``given`` ones over
    them (the conversion that made the change), the class list and the counts of the revision's records."""
    document = {key: value for key, value in parent.document.items() if key not in ("checksums", "locations")}
    document |= {key: value for key, value in given.items() if key != "stats"}
    classes = list(meta.document["classes"])
    document |= {"classes": classes, "class_to_idx": {name: index for index, name in enumerate(classes)}}
    if "class_words" not in given:
        document.pop("class_words", None)
        words = _class_words(parent.document, classes)
        document |= {"class_words": words} if words else {}
    stats = {**document.get("stats", {}), **given.get("stats", {})}
    skipped = list(stats.get("skipped", []))
    document |= {
        "version": _version(meta),
        "length": revision.length,
        "created": created,
        "stats": {
            **stats,
            "source_bytes": int(meta.source_bytes.sum()),
            "stored_bytes": _stored_bytes(revision, lengths),
            "storage": storage_counts(meta.storage.tolist()),
            "skipped": skipped,
        },
        "source": {**document.get("source", {}), "images": revision.length + len(skipped), "classes": len(classes)},
    }
    return checked(document)


def _class_words(parent: Mapping[str, Any], classes: list[str]) -> list[str] | None:
    """The words of each class where the parent had words for every one of them (ImageNet WNIDs); the
    convert side passes ``class_words`` for a class new to the split."""
    words = parent.get("class_words")
    if not isinstance(words, list) or len(words) != len(parent["classes"]):
        return None
    known = dict(zip(parent["classes"], words, strict=True))
    return [known[name] for name in classes] if all(name in known for name in classes) else None


def _version(meta: Meta) -> int:
    """The version of the file the revision flattens to: the oldest that holds its records and names."""
    version = format_version_of(meta.storage.tolist())
    try:
        "".join(meta.paths).encode("utf-8")
    except UnicodeEncodeError:
        version = max(version, NAMES_AS_BYTES_VERSION)
    return version


def _stored_bytes(revision: Revision, lengths: Mapping[str, np.ndarray]) -> int:
    """The stored bytes of the revision's records (each data file's record lengths, ``record_lengths``)."""
    total = 0
    for index, file in enumerate(revision.files):
        records = revision.order["record"][revision.order["file"] == index].astype(np.int64)
        total += int(lengths[file.id][records].sum())
    return total


def record_lengths(env: lmdb.Environment, meta: Meta) -> np.ndarray:
    """Each record's stored size: from the file's record locations where every record is located (the
    common case: values on overflow pages), else from LMDB (``env``, the file's; sizes only, no copy)."""
    located = meta.locations
    if located is not None and len(located) == meta.length and bool(located["offset"].all()):
        return located["length"].astype(np.int64)
    copied = copied_lengths(env, meta.length)  # a meta copy of a published file: its records are not here
    if copied is not None:
        return copied
    with env.begin(buffers=True) as txn:
        return np.array([len(txn.get(record_key(index)) or b"") for index in range(meta.length)], dtype=np.int64)
