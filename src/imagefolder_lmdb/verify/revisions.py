"""``verify`` and ``info`` of a split of revisions (docs/FORMAT.md, version 5): the revision opened as a
reader opens it (the pointer's CRC-32s, each data file by its content id), each data file checked as
``verify`` checks a file, the records the revision removed against their CRC-32, a sample of its samples."""

from __future__ import annotations

import os
import random
from typing import Any

import numpy as np

from imagefolder_lmdb.reader import DamagedRecordError, FormatError, LMDBReader, decode_meta
from imagefolder_lmdb.reader.document import read_document
from imagefolder_lmdb.reader.revision_format import (
    data_file_path,
    data_folder,
    decode_pointer,
    decode_revision,
    entry_of,
    is_pointer_document,
)
from imagefolder_lmdb.reader.revisions import RevisionRecords, opened_env
from imagefolder_lmdb.verify.checks import dataset_facts, verify_file
from imagefolder_lmdb.verify.datasets import InfoError


def is_split_of_revisions(path: str) -> bool:
    """Whether ``path`` is the pointer of a split of revisions (a single file or anything else: False)."""
    return os.path.isfile(path) and is_pointer_document(read_document(path))


def verify_revisions(
    path: str,
    sample: int = 64,
    full: bool = False,
    seed: int = 0,
    revision: int | None = None,
    since: int | None = None,
    first_files_checked: bool = False,
) -> tuple[dict[str, Any], LMDBReader | None, list[int]]:
    """The report of revision ``revision`` (None: the current one) of the split at ``path``, its reader
    and the indices checked, as verify/checks.py's ``verify_file`` gives them for a file. With ``since``
    (``verify --since N``, and a change's own report), only what came after revision ``since``: the data
    files it does not name and a sample of the samples read from them; the pointer's own checks (each
    value's CRC-32, each data file's content id) as ever. No record of an earlier data file is read.
    ``first_files_checked`` (the verify job of ``merge: false``): revision 1's data files were checked by
    the jobs that made them (steps/data_file.py): none is checked as a file again, unless ``full``."""
    report: dict[str, Any] = {"path": os.path.abspath(path), "ok": False, "problems": []}
    try:
        ds = LMDBReader(path, decode="bytes", revision=revision)
        earlier = set() if since is None else files_of_revision(path, since)
        made_checked = files_of_revision(path, 1) if first_files_checked and not full else set()
    except Exception as exc:  # noqa: BLE001 - for a checker, every failure is a finding
        report["problems"].append(f"{type(exc).__name__}: {exc}")
        return report, None, []
    files = [file for file in _data_files(ds) if _content_of(file) not in earlier]
    unchecked = [file for file in files if _content_of(file) not in made_checked]
    report["problems"] += files_problems(unchecked, sample, full, seed)
    report["problems"] += removed_problems(path, ds.revision)
    indices = checked_indices(ds, earlier, sample, full, seed)
    report["problems"] += records_problems(ds, indices)
    stats = ds.meta_document.get("stats", {})  # below: as a file's report has them, for the workflow's reports
    report |= dataset_facts(ds, path, [])
    mode = "full" if full else "sample"
    report |= {
        "ok": not report["problems"],
        "revision": ds.revision,
        "data_files": files,
        "images": len(ds),
        "classes": len(ds.classes),
        "stored_bytes": int(stats.get("stored_bytes", 0)),
        "skipped": list(stats.get("skipped", [])),
        "checked": {"records": len(indices), "mode": mode, **({} if since is None else {"since": since})},
    }
    if made_checked:
        report["checked"]["files_checked_when_made"] = len(made_checked)
    return report, ds, indices


def records_problems(ds: LMDBReader, indices: list[int]) -> list[str]:
    """Each record of ``indices`` that does not read back against its CRC-32, in words."""
    problems = []
    for index in indices:
        try:
            ds.get_bytes(index)
        except DamagedRecordError as exc:
            problems.append(str(exc))
    return problems


def files_problems(files: list[str], sample: int, full: bool, seed: int) -> list[str]:
    """Each data file of ``files`` checked as ``verify`` checks a file: its problems, each naming it."""
    problems = []
    for file in files:
        problems += [f"{file}: {problem}" for problem in verify_file(file, sample, full, seed)[0]["problems"]]
    return problems


def files_of_revision(path: str, number: int) -> set[str]:
    """The content ids of the data files revision ``number`` of the pointer at ``path`` names (its
    entry alone: no data file opened); FormatError where the pointer no longer keeps it."""
    with opened_env(path).begin() as txn:
        pointer = decode_pointer(bytes(txn.get(b"meta/json") or b""), path)
    return {str(file["id"]) for file in entry_of(pointer, number, path)["files"]}


def _content_of(file: str) -> str:
    return os.path.basename(file).removesuffix(".lmdb")


def checked_indices(ds: LMDBReader, earlier: set[str], sample: int, full: bool, seed: int) -> list[int]:
    """The samples to read: a random ``sample`` (every one with ``full``) of those whose record lies in
    a data file not among ``earlier`` (empty: every sample)."""
    candidates = list(range(len(ds)))
    records = ds._records
    if earlier and isinstance(records, RevisionRecords):
        new = [index for index, file in enumerate(records.files) if file.id not in earlier]
        candidates = np.flatnonzero(np.isin(records.files_of, new)).tolist()
    if full:
        return candidates
    return sorted(random.Random(seed).sample(candidates, min(sample, len(candidates))))


def _data_files(ds: LMDBReader) -> list[str]:
    """The data files the revision ``ds`` reads."""
    return [file.path for file in getattr(ds._records, "files", [])]


def removed_problems(path: str, revision: int | None) -> list[str]:
    """The records the revision lists as removed whose data file is still there, each against its CRC-32."""
    with opened_env(path).begin() as txn:  # the pointer alone: only the files with removed records are opened
        pointer = decode_pointer(bytes(txn.get(b"meta/json") or b""), path)
        current = decode_revision(txn, entry_of(pointer, revision, path), path)
    problems = []
    for index, content in enumerate(current.removed_from):
        file = data_file_path(path, content)
        if not os.path.isfile(file):
            continue  # collected since: nothing to hold the list against
        with opened_env(file).begin() as txn:
            crc32 = decode_meta(txn, file).crc32
        listed = current.removed[current.removed["file"] == index]
        if listed.size and not np.array_equal(crc32[listed["record"].astype(np.int64)], listed["crc32"]):
            problems.append(f"{file}: a record revision {current.number} lists as removed has another CRC-32 there")
    return problems


def revisions_info(path: str) -> dict[str, Any]:
    """``info``'s description of a split of revisions: its current revision as a file's, and its revisions."""
    try:  # a pointer copied without its data files, a damaged one: one line, as for a file
        ds = LMDBReader(path, decode="bytes")
    except (FormatError, OSError, ValueError) as exc:
        raise InfoError(str(exc)) from None
    document = {key: value for key, value in ds.meta_document.items() if key != "checksums"}
    counts = np.bincount(np.asarray(ds.targets, dtype=np.int64), minlength=len(ds.classes))
    with opened_env(path).begin() as txn:
        pointer = decode_pointer(bytes(txn.get(b"meta/json") or b""), path)
    return {
        "file": os.path.abspath(path),
        "file_bytes": os.path.getsize(path) + sum(os.path.getsize(file) for file in _data_files(ds)),
        "images_per_class": {name: int(n) for name, n in zip(ds.classes, counts, strict=False)},
        "image_sizes": _sizes(ds.image_sizes),
        **document,
        "revision": ds.revision,
        "pointer_version": pointer["version"],  # the path's own format version; "version": its revision's meta
        "data_folder": data_folder(os.path.abspath(path)),
        "revisions": pointer["revisions"],
    }


def _sizes(sizes: np.ndarray | None) -> dict[str, Any]:
    if sizes is None or not sizes.size:
        return {}
    return {
        axis: {"min": int(column.min()), "median": int(np.median(column)), "max": int(column.max())}
        for axis, column in (("width", sizes[:, 0]), ("height", sizes[:, 1]))
    }


def revision_lines(info: dict[str, Any]) -> list[str]:
    """The revisions of a split, one line each, newest last (``info``'s text)."""
    lines = [
        f"  a split of revisions: revision {info['revision']} of {len(info['revisions'])} kept; its data files in "
        f"{info['data_folder']}/ (copy it with the pointer, or `imagefolder-lmdb flatten` for one file)"
    ]
    for entry in info["revisions"]:
        changes = entry.get("changes", {})
        changed = ", ".join(f"{n:,} {what}" for what, n in changes.items())
        current = " (current)" if entry["revision"] == info["revision"] else ""
        lines.append(
            f"    revision {entry['revision']}{current}: {entry['length']:,} images in {len(entry['files'])} "
            f"{'file' if len(entry['files']) == 1 else 'files'}, "
            f"{entry.get('created')}; {changed or 'as converted'}"
        )
    return lines
