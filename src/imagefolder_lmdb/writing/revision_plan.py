"""The next revision of a split, planned (writing/revisions.py writes it): each sample of the new
listing found in a data file by its path, the newest file first; the records of the parent no longer
held; what changed; the meta document of the file the revision flattens to."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import lmdb
import numpy as np

from imagefolder_lmdb.reader import Meta, format_version_of, record_key
from imagefolder_lmdb.reader.format import NAMES_AS_BYTES_VERSION
from imagefolder_lmdb.reader.identity import content_id
from imagefolder_lmdb.reader.revision_format import ORDER_DTYPE, REMOVED_DTYPE, DataFile, Revision
from imagefolder_lmdb.reader.revisions import composed_meta
from imagefolder_lmdb.writing.meta_document import checked, storage_counts

#: Where a path's record lies while planning: (index into the planned files, record index).
Location = tuple[int, int]


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
        order, labels = _order(samples, classes, where)
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
    revision.moved = {
        position: path for position, (path, own) in enumerate(zip(paths, composed.paths, strict=True)) if path != own
    }
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


def _locations(
    parent: Revision, parent_paths: list[str], metas: Sequence[Meta], first_added: int, moved: Mapping[str, str]
) -> dict[str, Location]:
    """Each path's record: the parent's, then a moved image's old record, then the added files' (the last wins)."""
    where: dict[str, Location] = {
        path: (int(f), int(r)) for path, (f, r) in zip(parent_paths, parent.order.tolist(), strict=True)
    }
    for new, old in moved.items():
        if old not in where:
            raise ValueError(f"moved: {old!r} (now {new!r}) is not a sample of revision {parent.number}")
        where[new] = where[old]
    for index in range(first_added, len(metas)):
        where |= {path: (index, record) for record, path in enumerate(metas[index].paths)}
    return where


def _order(
    samples: Sequence[tuple[str, int]], classes: list[str], where: Mapping[str, Location]
) -> tuple[np.ndarray, np.ndarray]:
    """Each sample's (file, record) among the candidate files, and its label, checked."""
    paths = [path for path, _ in samples]
    if len(set(paths)) != len(paths):
        raise ValueError(f"{_first_repeated(paths)!r} is listed twice in the new samples")
    located = [where.get(path) for path in paths]
    if None in located:
        path = paths[located.index(None)]
        raise ValueError(f"{path!r} is in no data file: neither a sample of the split nor a record of an added file")
    return np.array(located, dtype=ORDER_DTYPE).reshape(len(samples)), _labels(samples, classes)


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
    files = sorted({int(parent.order["file"][position]) for position in gone})
    index_of = {file: index for index, file in enumerate(files)}
    removed = np.zeros(len(gone), REMOVED_DTYPE)
    for slot, position in enumerate(gone.tolist()):
        file, record = int(parent.order["file"][position]), int(parent.order["record"][position])
        removed[slot] = (index_of[file], record, parent_metas[file].crc32[record])
    return removed, [parent.files[file].id for file in files]


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
    moved = sum(parent_paths[b] != paths[p] for b, p in zip(before.tolist(), kept_at.tolist(), strict=True))
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
    with env.begin(buffers=True) as txn:
        return np.array([len(txn.get(record_key(index)) or b"") for index in range(meta.length)], dtype=np.int64)
