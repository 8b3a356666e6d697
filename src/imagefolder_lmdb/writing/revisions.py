"""Writing a change of a split as a new revision (docs/FORMAT.md, "A split of revisions (version 5)").

The caller (the convert side) says what the split is now, as ImageFolder lists the changed tree, and
where the records of images not yet in the split lie::

    planned = current_revision("OUT/train.lmdb")          # None: a single split file, never changed
    ... convert the added images into one split file, e.g. WORK/added.lmdb ...
    new_revision("OUT/train.lmdb", samples=[("cat/1.jpg", 0), ...], classes=["cat", "dog"],
                 added_files=["WORK/added.lmdb"], planned_on=planned)

``new_revision`` finds each sample's record by its path, the newest file first (an added file, then
the current revision; ``moved`` names the old path of an image moved to another class folder), so the
revision's order is exactly the listing's. No data file is ever written into: an added file is moved
into ``OUT/train.lmdb.d/`` under its content id, and the pointer is replaced by a rename while the
folder's lock is held, only if its revision is still the one the change was planned on.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import os
import shutil
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from imagefolder_lmdb.reader import FormatError, Meta, decode_meta
from imagefolder_lmdb.reader.handles import forget_if_replaced, open_env_readonly
from imagefolder_lmdb.reader.identity import content_id
from imagefolder_lmdb.reader.revision_format import (
    ORDER_DTYPE,
    POINTER_JSON,
    DataFile,
    Revision,
    data_file_path,
    data_folder,
    decode_pointer,
    decode_revision,
    encode_pointer,
    encode_revision,
    entry_of,
    is_pointer_document,
)
from imagefolder_lmdb.reader.revisions import opened_env
from imagefolder_lmdb.writing.atomic import fsync_path, publish, temporary_path
from imagefolder_lmdb.writing.lmdb_open import write_lmdb_values
from imagefolder_lmdb.writing.revision_copy import published_copy
from imagefolder_lmdb.writing.revision_plan import planned, record_lengths

#: Keys of a revision's values in the pointer, copied as they are when the pointer is written again.
_REVISION_PREFIX = b"meta/revision/"


class RevisionConflictError(RuntimeError):
    """The split changed since the change was planned (another writer): nothing was written."""


@dataclass(frozen=True)
class RevisionWritten:
    """What ``new_revision`` made: the revision, its parent, what changed, its data files."""

    pointer: str
    revision: int
    parent: int
    changes: dict[str, int]
    data_files: list[str]
    first_change: bool  # the split was a single file until now


@dataclass
class SplitRevisions:
    """What a split holds now: its current revision (a single file is revision 1, not yet written as
    one), the meta of each data file the revision reads, and the pointer's other revisions."""

    path: str
    current: Revision
    metas: list[Meta]  # of current.files, in order
    places: list[str]  # where each of current.files lies now
    entries: list[dict[str, Any]]  # the pointer's revisions entries; [] for a single file
    values: dict[bytes, bytes]  # the pointer's revision keys, copied as they are
    single_file: bool

    @property
    def number(self) -> int | None:
        """The revision a change is planned on: None for a single file."""
        return None if self.single_file else self.current.number


def current_revision(split: str | os.PathLike[str]) -> int | None:
    """The revision ``split`` (``OUT/<name>.lmdb``) is at now: None for a single split file. Pass it to
    ``new_revision(planned_on=...)`` so that a change planned on it is never written over another."""
    return read_split(os.fspath(split)).number


def read_split(split: str, revision: int | None = None) -> SplitRevisions:
    """The split at ``split`` (a single file or a pointer) and its revision ``revision`` (None: current)."""
    with opened_env(split).begin() as txn:
        raw = txn.get(POINTER_JSON)
        document = _json_or_none(raw)
        if not is_pointer_document(document):
            return _single_file_state(split, decode_meta(txn, split))
        pointer = decode_pointer(bytes(raw or b""), split)
        current = decode_revision(txn, entry_of(pointer, revision, split), split)
        values = {bytes(key): bytes(value) for key, value in txn.cursor() if bytes(key).startswith(_REVISION_PREFIX)}
    places = [data_file_path(split, file.id) for file in current.files]
    metas = [_data_file_meta(place, file.id) for place, file in zip(places, current.files, strict=True)]
    return SplitRevisions(split, current, metas, places, list(pointer["revisions"]), values, single_file=False)


def _json_or_none(raw: Any) -> Any:
    try:
        return None if raw is None else json.loads(bytes(raw))
    except ValueError:
        return None


def _single_file_state(split: str, meta: Meta) -> SplitRevisions:
    """A single split file as revision 1: every record in its order, under its labels."""
    _refuse_targets(meta, split)
    order = np.zeros(meta.length, ORDER_DTYPE)
    order["record"] = np.arange(meta.length)
    document = {key: value for key, value in meta.document.items() if key not in ("checksums", "locations")}
    created = str(meta.document.get("created") or _now())
    copied = published_copy(split)  # a meta copy (writing/revision_copy.py): the published file's size
    files = [DataFile(content_id(meta), meta.length, os.path.getsize(split) if copied is None else copied.size)]
    revision = Revision(1, None, created, files, document, order, np.asarray(meta.labels, np.int32))
    return SplitRevisions(split, revision, [meta], [split], [], {}, single_file=True)


def _refuse_targets(meta: Meta, where: str) -> None:
    if meta.label_lists is not None or meta.fields or meta.unlabelled:
        raise FormatError(
            f"{where}: a multi-label, field or unlabelled file cannot be a data file of a split of revisions yet"
        )


def _data_file_meta(path: str, expected: str | None = None) -> Meta:
    """A data file's meta, checked as the reader checks it (and against its content id, when named by one)."""
    with opened_env(path).begin() as txn:
        meta = decode_meta(txn, path)
    _refuse_targets(meta, path)
    if expected is not None and content_id(meta) != expected:
        raise FormatError(f"{path}: holds other content than its name says; copy the split's folder again")
    return meta


def _at(revision: int | None) -> str:
    return "a single file (never changed)" if revision is None else f"revision {revision}"


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


@contextlib.contextmanager
def locked_split(split: str) -> Iterator[None]:
    """The split's data folder locked (flock, exclusive) for the block: one writer of its pointer at a time."""
    folder = data_folder(split)
    os.makedirs(folder, exist_ok=True)
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def new_revision(
    split: str | os.PathLike[str],
    samples: Sequence[tuple[str, int]],
    classes: Sequence[str],
    added_files: Sequence[str | os.PathLike[str]] = (),
    *,
    planned_on: int | None,
    moved: Mapping[str, str] | None = None,
    document: Mapping[str, Any] | None = None,
    created: str | None = None,
) -> RevisionWritten:
    """Write the split's next revision: ``samples`` in their order, from the current revision's
    records and ``added_files``'.

    Args:
        split: ``OUT/<name>.lmdb``, a single split file or a pointer.
        samples: the whole new listing, ``(relative path, class index)`` in ImageFolder's order.
        classes: the class names the indices refer to, sorted as ImageFolder sorts them.
        added_files: split files (versions 1 to 4, one label each) holding the records of the images
            not in the current revision (added, or replaced at the same path); linked into the split's
            data folder (the caller removes its own copy after). A path found in several: the last given.
        planned_on: ``current_revision(split)`` when the change was planned (None: a single file).
        moved: ``{new path: old path}`` of images moved to another class folder: the old record is kept.
        document: meta/json entries of the conversion that made the change (``source``, ``made_from``,
            ``settings``, ``class_words``, ``class_list``, ``stats.skipped``), over the parent revision's.
        created: the revision's date, ISO 8601 (default: now, in whole seconds); the convert side gives
            the time it listed the source, to the microsecond (run/change.py: what a later change trusts).

    Returns:
        RevisionWritten: the revision written and what changed.

    Raises:
        RevisionConflictError: the split is no longer at ``planned_on``.
        ValueError: a sample found in no file, a path listed twice, a label outside ``classes``.
        FormatError: a damaged split or data file, or a multi-label or field file.
    """
    path = os.path.abspath(os.fspath(split))
    added = [os.path.abspath(os.fspath(file)) for file in added_files]
    files = [added_file(file) for file in added]
    with locked_split(path):
        state = read_split(path)
        _check_planned_on(state, planned_on)
        revision = plan_revision(state, files, samples, list(classes), moved or {}, document or {}, created)
        _place_files(state, files)
        _write_revision(state, revision)
    # the single file's name now holds the pointer: forgotten, so that a reader here opens the file (an
    # inode LMDB opens once per process) by its name in the data folder
    forget_if_replaced(os.path.realpath(path))
    places = [data_file_path(path, file.id) for file in revision.files]
    return RevisionWritten(path, revision.number, state.current.number, revision.changes, places, state.single_file)


def _check_planned_on(state: SplitRevisions, planned_on: int | None) -> None:
    """RevisionConflictError unless the split is still at the revision the change was planned on."""
    if state.number != planned_on:
        raise RevisionConflictError(
            f"{state.path}: the split is at {_at(state.number)}, not at {_at(planned_on)} that the change was "
            "planned on: another change was written meanwhile. Plan it again on the split as it is now."
        )


def _write_revision(state: SplitRevisions, revision: Revision) -> None:
    """The pointer of the split's revisions and ``revision``, the current one (a single file: revision 1 too)."""
    entries, values = {int(entry["revision"]): entry for entry in state.entries}, dict(state.values)
    for written in [state.current, revision] if state.single_file else [revision]:
        entries[written.number], written_values = encode_revision(written)
        values |= written_values
    write_pointer(state.path, entries, values, revision.number)


@dataclass(frozen=True)
class AddedFile:
    """A split file whose records a change adds: where it lies, its meta and each record's stored size."""

    path: str
    meta: Meta
    lengths: np.ndarray


def added_file(path: str) -> AddedFile:
    """An added file read in an environment of its own, closed after: it is linked into the data folder
    later, and LMDB opens an inode once per process, so this process's readers must not hold it by this name."""
    env = open_env_readonly(path)
    try:
        with env.begin() as txn:
            meta = decode_meta(txn, path)
        _refuse_targets(meta, path)
        return AddedFile(path, meta, record_lengths(env, meta))
    finally:
        env.close()


def plan_revision(
    state: SplitRevisions,
    added: Sequence[AddedFile],
    samples: Sequence[tuple[str, int]],
    classes: list[str],
    moved: Mapping[str, str],
    document: Mapping[str, Any],
    created: str | None = None,
) -> Revision:
    """The next revision of ``state``: each sample's record found, what changed against the current one."""
    lengths = {
        file.id: record_lengths(opened_env(place), meta)
        for file, place, meta in zip(state.current.files, state.places, state.metas, strict=True)
    }
    lengths |= {content_id(file.meta): file.lengths for file in added}
    metas = [file.meta for file in added]
    return planned(state.current, state.metas, metas, samples, classes, moved, document, created or _now(), lengths)


def _place_files(state: SplitRevisions, added: Sequence[AddedFile]) -> None:
    """The single file (a first change) and the added files linked into the data folder under their
    content ids (a copy where the file system has no hard links). The added files given stay where they
    are, for a rerun after a kill; the caller removes them once the revision is written."""
    if state.single_file:
        _link_or_copy(state.path, data_file_path(state.path, state.current.files[0].id))
    for file in added:
        _link_or_copy(file.path, data_file_path(state.path, content_id(file.meta)))
    fsync_path(data_folder(state.path))


def _link_or_copy(source: str, target: str) -> None:
    """``target`` the same file as ``source`` (a hard link: its inode and bytes kept; a copy where the
    file system has no hard links), so the pointer can take ``source``'s name in one rename."""
    if os.path.exists(target):
        return
    try:
        os.link(source, target)
    except OSError:
        _copy_into_place(source, target)


def _copy_into_place(source: str, target: str) -> None:
    temporary = temporary_path(target)
    shutil.copyfile(source, temporary)
    publish(temporary, target)


def write_pointer(path: str, entries: dict[int, dict[str, Any]], values: dict[bytes, bytes], current: int) -> None:
    """The pointer of revisions ``entries`` (their keys and ``values``), ``current`` the current one,
    written whole under a temporary name and renamed over ``path``."""
    write_lmdb_values(path, {**values, POINTER_JSON: encode_pointer(current, list(entries.values()))})
