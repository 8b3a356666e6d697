"""The checks of a finished dataset file (``imagefolder-lmdb verify``, rule verify): its pages,
its meta against itself and its records, the record locations against the walk of its B-tree, and
each checked record's bytes (CRC-32, decoding, size).

Run by verify/command.py on a file (the command, and rule verify through it) and by verify/remote.py
on a URL's streamed copy (``--full``).
"""

from __future__ import annotations

import io
import os
import random
import sys
import warnings
from dataclasses import dataclass
from typing import Any

import lmdb
import numpy as np
from PIL import Image
from tqdm import tqdm

from imagefolder_lmdb.reader import (
    KEY_WIDTH,
    META_KEYS,
    STORAGE_REASONS,
    FormatError,
    LMDBReader,
    LocationsWarning,
    Meta,
    check_lmdb_file,
    checksum,
    decode_meta,
    format_version_of,
    lmdb_check,
    lmdb_pages,
    record_key,
    shared_env,
    shared_fd,
)
from imagefolder_lmdb.reader.format import RECOPY_ADVICE, TargetsFormatError
from imagefolder_lmdb.reader.format_unlabelled import UNLABELLED
from imagefolder_lmdb.reader.identity import meta_digest
from imagefolder_lmdb.reader.targets import carried_labels
from imagefolder_lmdb.writing.meta_document import document_problems, storage_counts
from imagefolder_lmdb.writing.record_locations import locations_finding

LISTED_FAILURES = 20
#: meta/json's entries every file the workflow (or convert-legacy) writes holds beside what the reader
#: needs: the report is made of them, so a file without them is named, not a KeyError (issue 57).
STATS_ENTRIES = ("source_bytes", "stored_bytes", "storage", "skipped")
WRITTEN_ENTRIES = (
    "settings",
    "source",
    "source.images",
    "stats",
    *(f"stats.{name}" for name in STATS_ENTRIES),
    "created",
)


def missing_entries_problem(document: dict[str, Any]) -> str | None:
    """The WRITTEN_ENTRIES ``document`` lacks, in words (its entries' types: checked by the reader);
    None where it has them all."""
    missing = []
    for name in WRITTEN_ENTRIES:
        parent, _, child = name.rpartition(".")
        holder = document.get(parent) if parent else document
        if isinstance(holder, dict) and child not in holder:
            missing.append(name)
    if not missing:
        return None
    return (
        f"meta/json lacks {', '.join(missing)}, which every file the workflow writes holds: the file is "
        f"damaged. {RECOPY_ADVICE}"
    )


def structure_problems(ds: LMDBReader) -> list[str]:
    """Disagreements between the meta and the records, found without decoding any image."""
    problems = []
    n = len(ds)
    document = ds.meta_document
    with shared_env(ds.path).begin() as txn:
        meta_keys = sum(txn.get(key) is not None for key in META_KEYS.values())  # older files: fewer
        entries = txn.stat()["entries"]
        if entries != n + meta_keys:
            problems.append(f"{entries - meta_keys} records stored, the meta describes {n}")
        if n and (txn.get(record_key(0)) is None or txn.get(record_key(n - 1)) is None):
            problems.append(f"records 0 or {n - 1} missing: keys are not 0..{n - 1}")
    return problems + label_range_problems(ds) + size_problems(ds) + document_problems(document)


def label_range_problems(ds: LMDBReader) -> list[str]:
    """Labels that name no class (each of a multi-label file's lists too)."""
    if any(not 0 <= label < len(ds.classes) for label in carried_labels(ds.targets, ds.label_kind)):
        return ["labels outside the class range"]
    return []


def size_problems(ds: LMDBReader) -> list[str]:
    """Records larger than the file's own size settings allow (``short_side``, ``max_side``), from
    the meta's image sizes: a copy prepared at a size must hold no image above it."""
    if ds.image_sizes is None or not len(ds):
        return []
    problems = []
    bounds = (
        ("short_side", ds.short_side, ds.image_sizes.min(axis=1)),
        ("max_side", ds.max_side, ds.image_sizes.max(axis=1)),
    )
    for key, bound, sides in bounds:
        over = [] if bound is None else (sides > bound).nonzero()[0]
        if len(over):
            first = int(over[0])
            width, height = (int(v) for v in ds.image_sizes[first])
            problems.append(
                f"{len(over)} records larger than encode.{key}: {bound}, the first record {first} "
                f"({ds.samples[first][0]}) at {width}x{height}"
            )
    return problems


def totals_problems(meta: Meta, walk: lmdb_pages.Walk | None) -> list[str]:
    """Disagreements between the per-record arrays and the totals meta/json records of them (the
    checks files written before meta checksums get; the stored sizes come from the walk)."""
    stats, problems = meta.document["stats"], []
    if set(np.unique(meta.storage).tolist()) - set(STORAGE_REASONS):
        problems.append(f"meta/storage holds codes outside {sorted(STORAGE_REASONS)}")
    elif format_version_of(meta.storage.tolist()) > meta.document["version"]:  # a WebP code in a version-1 file
        problems.append(f"meta/storage holds codes of format version {format_version_of(meta.storage.tolist())}")
    elif storage_counts(meta.storage.tolist()) != stats["storage"]:
        problems.append(
            f"meta/storage counts {storage_counts(meta.storage.tolist())}, meta/json says {stats['storage']}"
        )
    if int(meta.source_bytes.sum()) != stats["source_bytes"]:
        problems.append(
            f"meta/source_bytes adds up to {int(meta.source_bytes.sum())}, meta/json says {stats['source_bytes']}"
        )
    if walk is not None:
        stored = int(walk.records.length[walk.records.index < meta.length].astype(np.int64).sum())
        if stored != stats["stored_bytes"]:
            problems.append(f"the records hold {stored} bytes, meta/json says {stats['stored_bytes']}")
    return problems


def pages_problem(path: str, every_value: bool) -> tuple[str | None, lmdb_pages.Walk | None]:
    """Why LMDB must not read the file (cut short, damaged pages), checked with plain reads; and
    the walk of its B-tree when it may. A directory (a legacy LMDB) is left to the reader."""
    if not os.path.isfile(path):
        return None, None
    try:
        check_lmdb_file(path)
        walk = lmdb_check.check(path, KEY_WIDTH, every_value=every_value)
        keys = walk.records.index
        if not np.array_equal(keys, np.arange(len(keys))):
            first = int(np.flatnonzero(keys != np.arange(len(keys)))[0])
            raise ValueError(f"the record keys are not 0..{len(keys) - 1}: key {first} reads {int(keys[first])}")
        return None, walk
    except FormatError as exc:
        return str(exc), None
    except ValueError as exc:
        return (
            f"{path}: its LMDB pages are damaged ({exc}); LMDB would read wrong records or crash on it, so "
            "nothing of it was read. Copy it again from the original, and check the original first with "
            "`imagefolder-lmdb verify ORIGINAL --full`"
        ), None


@dataclass
class LocationTable:
    """The record locations the file holds, where they claim to fit it as it is (else no entries)."""

    offsets: np.ndarray  # uint64 per record, 0 = not located
    lengths: np.ndarray  # uint32 per record


def locations_problems(
    ds: LMDBReader, meta: Meta, walk: lmdb_pages.Walk | None
) -> tuple[list[str], list[str], LocationTable]:
    """(problems, warnings) of the file's record locations against the walk of its B-tree, and the
    locations to compare record by record (none where they do not claim to fit this file)."""
    env = shared_env(ds.path)
    nothing = LocationTable(np.zeros(len(ds), np.uint64), np.zeros(len(ds), np.uint32))
    if walk is None or meta.locations is None:
        return [], [], nothing
    table = LocationTable(meta.locations["offset"], meta.locations["length"])
    if len(meta.locations) != len(ds):
        table = nothing  # a damaged size: no entry can be matched to its record
    finding = locations_finding(env, meta, walk, ds.path)
    if finding is not None and finding.kind in ("missing", "rewritten"):
        return [], [], nothing  # not for this file as it is; the reader's own warning says so if it matters
    if finding is None:
        return [], [], table
    if not finding.damaged:
        text = (
            f"meta/locations: {finding.text}; the reader checks their layout and a few records only; "
            f"`imagefolder-lmdb add-locations {ds.path}` gives them one"
        )
        return [], [text], table
    remedy = f"`imagefolder-lmdb add-locations {ds.path} --force` writes them again"
    used = (
        "the reader reads records at them, so it returns wrong bytes for those records"
        if ds.reads_by_offset
        else "the reader does not use them: it reads every record through LMDB (the same bytes, slower on a cold cache)"
    )
    problem = f"meta/locations is damaged: {finding.text}; {used}; {remedy}"
    return [problem], [], table


def _own_bytes(ds: LMDBReader, index: int) -> bytes:
    """Record ``index`` as LMDB itself returns it (the reader may read it by offset instead)."""
    with shared_env(ds.path).begin() as txn:
        value = txn.get(record_key(index))
    if value is None:
        raise FormatError(f"{ds.path}: record {index} is missing; the file is damaged")
    return bytes(value)


def location_problem(ds: LMDBReader, index: int, own: bytes, located: LocationTable) -> str | None:
    """Whether record ``index``'s recorded location holds LMDB's own bytes of it (None if so, or
    if it is not located)."""
    offset, length = int(located.offsets[index]), int(located.lengths[index])
    if not offset:
        return None
    if os.pread(shared_fd(ds.path)[0], length, offset) == own:
        return None
    assert ds.checksums is not None
    intact = "intact" if checksum(own) == int(ds.checksums[index]) else "changed too (checksum mismatch)"
    return (
        f"record {index} ({ds.samples[index][0]}): its recorded location is wrong: offset {offset:,}, length "
        f"{length:,} (meta/locations) do not hold the record LMDB holds; LMDB's own bytes of it are {intact}"
    )


def check_record(ds: LMDBReader, index: int, located: LocationTable) -> str | None:
    """Problem with record ``index`` (its location, checksum, decoding, size), or None."""
    assert ds.checksums is not None and ds.image_sizes is not None
    try:
        data = _own_bytes(ds, index)
        wrong_place = location_problem(ds, index, data, located)
    except (lmdb.Error, FormatError) as exc:
        return f"record {index} ({ds.samples[index][0]}): cannot be read: {exc}"
    if wrong_place is not None:
        return wrong_place
    return bytes_problem(ds, index, data)


def bytes_problem(ds: LMDBReader, index: int, data: bytes) -> str | None:
    """Problem with record ``index``'s stored bytes ``data`` (checksum, decoding, size), or None."""
    assert ds.checksums is not None and ds.image_sizes is not None
    if checksum(data) != int(ds.checksums[index]):
        return f"record {index} ({ds.samples[index][0]}): checksum mismatch, the stored bytes changed"
    try:
        image = Image.open(io.BytesIO(data)).convert("RGB")
    except Exception as exc:  # noqa: BLE001 - any decoder failure is a finding, not a crash
        return f"record {index} ({ds.samples[index][0]}): does not decode: {exc}"
    width, height = (int(v) for v in ds.image_sizes[index])
    if image.size != (width, height):
        return f"record {index} ({ds.samples[index][0]}): decoded {image.size}, meta says {(width, height)}"
    return None


def open_reader(path: str) -> tuple[LMDBReader, list[str]]:
    """The reader on ``path`` (without torch's Dataset base: no 2 s torch import), and the warnings
    it gave while opening (record locations that do not fit the file), for the report."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", LocationsWarning)
        ds = LMDBReader(path)
    for warning in caught:
        if not issubclass(warning.category, LocationsWarning):
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    return ds, [str(w.message) for w in caught if issubclass(w.category, LocationsWarning)]


def meta_problems(ds: LMDBReader, walk: lmdb_pages.Walk | None) -> tuple[list[str], LocationTable, list[str]]:
    """What disagrees in the meta (with itself, the records, the walk of the B-tree), the record
    locations to compare record by record, and the warnings about them."""
    with shared_env(ds.path).begin() as txn:
        meta = decode_meta(txn, ds.path)
    problems = structure_problems(ds) + totals_problems(meta, walk)
    location_problems, location_warnings, located = locations_problems(ds, meta, walk)
    return problems + location_problems, located, location_warnings


def sample_indices(n: int, sample: int, full: bool, seed: int) -> list[int]:
    if full:
        return list(range(n))
    return sorted(random.Random(seed).sample(range(n), min(sample, n)))


def record_problems(ds: LMDBReader, indices: list[int], located: LocationTable) -> list[str]:
    """What is wrong with each record of ``indices`` that does not read back as written."""
    # progress on stderr (the rule's log); a sample of 64 is over before the bar would show
    checked = tqdm(indices, desc="verify", unit="img", mininterval=5.0, disable=len(indices) < 1000, file=sys.stderr)
    return [problem for problem in (check_record(ds, i, located) for i in checked) if problem is not None]


def dataset_facts(ds: LMDBReader, path: str, warnings_found: list[str]) -> dict[str, Any]:
    """What the report tells of the file from its meta (and the warnings, in the report's order)."""
    document = ds.meta_document
    stats = document["stats"]
    return {
        "format": f"{document['format']} v{document['version']}",
        "images": len(ds),
        "classes": len(ds.classes),
        "class_counts": class_counts(ds),
        "warnings": warnings_found,
        "file_bytes": os.path.getsize(path) if os.path.isfile(path) else None,
        "source": document["source"],
        "class_list": document.get("class_list"),  # files before class lists shared: none
        "source_bytes": stats["source_bytes"],
        "stored_bytes": stats["stored_bytes"],
        "stored_to_source_ratio": round(stats["stored_bytes"] / stats["source_bytes"], 4)
        if stats["source_bytes"]
        else None,
        "storage": stats["storage"],
        "skipped": stats["skipped"],
        "settings": document["settings"],
        "created": document["created"],
        "dataset_meta_digest": meta_digest(document),  # the file this report describes (run/existing.py)
    }


def class_counts(ds: LMDBReader) -> dict[str, int]:
    """Images per class (multi-label: the images that carry it)."""
    return dict(zip(ds.classes, ds.class_counts().tolist(), strict=True))


def empty_class_warnings(ds: LMDBReader) -> list[str]:
    """Classes without a record: every image skipped as bad, or none in this split's source (a
    class of the shared class list that this split lacks). Their label never occurs. A split without
    labels (label_kind "none") has none to warn of: its class list is the other splits'."""
    if ds.label_kind == UNLABELLED:
        return []
    skipped = {entry["path"].split("/", 1)[0] for entry in ds.meta_document["stats"]["skipped"]}
    origin = ds.meta_document.get("class_list", {}).get("origin", "")
    return [
        f"class {name!r} has no images: all of its files were skipped as bad (see skipped)"
        if name in skipped
        else f"class {name!r} has no images in this split (it is in the class list, {origin})"
        for name, count in class_counts(ds).items()
        if count == 0
    ]


def verify_file(
    path: str, sample: int = 64, full: bool = False, seed: int = 0
) -> tuple[dict[str, Any], LMDBReader | None, list[int]]:
    """The report of the file at ``path``, the opened dataset (None if it could not be opened) and
    the checked indices (verify/command.py: ``verify``, which hands a URL to verify/remote.py)."""
    report: dict[str, Any] = {"path": os.path.abspath(path), "ok": False, "problems": []}
    problem, walk = pages_problem(path, every_value=full) if os.path.exists(path) else (None, None)
    if problem is not None:
        report["problems"].append(problem)
        return report, None, []
    try:
        ds, opening_warnings = open_reader(path)
    except TargetsFormatError as exc:  # each wrong label list or field on a line of its own
        report["problems"].extend(exc.problems)
        return report, None, []
    except (FormatError, FileNotFoundError) as exc:
        report["problems"].append(str(exc))
        return report, None, []
    missing = missing_entries_problem(ds.meta_document)
    if missing is not None:  # the report is made of them
        report["problems"].append(f"{path}: {missing}")
        return report, None, []
    problems, located, warnings_found = meta_problems(ds, walk)
    indices = sample_indices(len(ds), sample, full, seed)
    failures = record_problems(ds, indices, located)
    problems.extend(failures[:LISTED_FAILURES])
    if len(failures) > LISTED_FAILURES:
        problems.append(f"... and {len(failures) - LISTED_FAILURES} more records with problems")
    warnings_found = opening_warnings + warnings_found + empty_class_warnings(ds)
    report.update(
        {
            "ok": not problems,
            "problems": problems,
            **dataset_facts(ds, path, warnings_found),
            "checked": {
                "mode": "all" if full else "sample",
                "records": len(indices),
                "failed": len(failures),
                "seed": seed,
            },
        }
    )
    return report, ds, indices
