"""A split of revisions made one file again (``flatten``), and its data files no kept revision names
removed (``collect_garbage``): ``imagefolder-lmdb flatten`` and ``imagefolder-lmdb gc``."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from typing import Any

from imagefolder_lmdb.reader import record_key
from imagefolder_lmdb.reader.file_checks import LmdbReadTxn
from imagefolder_lmdb.reader.revision_format import data_folder, revision_key
from imagefolder_lmdb.reader.revisions import OpenSettings, open_if_revisions, opened_env
from imagefolder_lmdb.writing.atomic import TMP_SUFFIX, remove_path
from imagefolder_lmdb.writing.lmdb_writer import atomic_lmdb
from imagefolder_lmdb.writing.record_locations import store_meta_and_locations
from imagefolder_lmdb.writing.revisions import locked_split, read_split, write_pointer


class NotRevisionsError(ValueError):
    """The path is a single split file (or no dataset), not a split of revisions."""


@dataclass(frozen=True)
class Flattened:
    """What ``flatten`` wrote: the file, the revision it holds, its records."""

    output: str
    revision: int
    records: int


def flatten(split: str, output: str | None = None, revision: int | None = None) -> Flattened:
    """Revision ``revision`` (None: the current one) of the split written as one file of versions 1 to 4
    at ``output`` (None: over the pointer itself, which then is a single split file again; ``gc`` removes
    the data files after). Records are copied as stored (checked against their CRC-32), never decoded."""
    split = os.path.abspath(split)
    opened = open_if_revisions(split, opened_env(split), OpenSettings(lock=False, max_readers=None), revision)
    if opened is None or opened.meta is None:
        raise NotRevisionsError(f"{split} is a single split file already: nothing to flatten")
    meta, records = opened.meta, opened.records
    target = os.path.abspath(output or split)
    expected = int(meta.document["stats"]["stored_bytes"]) + (64 << 20)
    with locked_split(split) if target == split else contextlib.nullcontext(), atomic_lmdb(target, expected) as writer:
        for index in range(meta.length):
            writer.append(record_key(index), records.get_bytes(index, _no_transaction))
        store_meta_and_locations(writer, meta)
    assert opened.revision is not None
    return Flattened(target, opened.revision, meta.length)


def _no_transaction() -> LmdbReadTxn:
    raise AssertionError("a revision's records open their own data files' transactions")


@dataclass
class Collected:
    """What ``collect_garbage`` did: the revisions dropped from the pointer, the files removed."""

    dropped: list[int] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    kept: list[int] = field(default_factory=list)


def collect_garbage(split: str, keep: int | None = None) -> Collected:
    """Keep the newest ``keep`` revisions of the split (None: every one the pointer keeps; the current
    one always), then remove the data files and leftovers in its folder that no kept revision names.
    A single split file with a folder (after ``flatten`` over its pointer): every data file goes."""
    split = os.path.abspath(split)
    folder = data_folder(split)
    if not os.path.isfile(split):
        raise NotRevisionsError(f"{split}: no such file")
    if not os.path.isdir(folder):
        raise NotRevisionsError(f"{split} has no data folder {folder}: a single split file, nothing to collect")
    if keep is not None and keep < 1:
        raise ValueError(f"--keep {keep}: keep at least the current revision (1)")
    collected = Collected()
    with locked_split(split):
        state = read_split(split)
        named: set[str] = set()
        if not state.single_file:
            entries = sorted(state.entries, key=lambda entry: int(entry["revision"]))
            current = state.current.number
            kept = entries if keep is None else entries[-keep:]
            if all(entry["revision"] != current for entry in kept):  # an earlier revision made current again
                kept = sorted(
                    [*kept, *(e for e in entries if e["revision"] == current)], key=lambda e: int(e["revision"])
                )
            collected.kept = [int(entry["revision"]) for entry in kept]
            collected.dropped = [int(entry["revision"]) for entry in entries if entry not in kept]
            if collected.dropped:
                _rewrite_pointer(split, kept, state.values, current)
            named = {file["id"] for entry in kept for file in entry["files"]}
        collected.removed = _remove_unnamed(folder, named)
    return collected


def _rewrite_pointer(split: str, kept: list[dict[str, Any]], values: dict[bytes, bytes], current: int) -> None:
    """The pointer with only the ``kept`` revisions (their values copied as stored)."""
    prefixes = tuple(revision_key(int(entry["revision"]), "") for entry in kept)
    stored = {key: value for key, value in values.items() if key.startswith(prefixes)}
    write_pointer(split, {int(entry["revision"]): entry for entry in kept}, stored, current)


def _remove_unnamed(folder: str, named: set[str]) -> list[str]:
    """Every data file (and its -lock file, and any leftover of a killed write) not in ``named``."""
    removed = []
    for name in sorted(os.listdir(folder)):
        stem = name.removesuffix(TMP_SUFFIX).removesuffix("-lock").removesuffix(".lmdb")
        if stem in named and not name.endswith(TMP_SUFFIX):
            continue
        path = os.path.join(folder, name)
        remove_path(path)
        removed.append(path)
    if not named:
        with contextlib.suppress(OSError):
            os.rmdir(folder)
    return removed
