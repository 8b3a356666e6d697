# SPDX-License-Identifier: MIT
"""``verify`` of a URL: verify/command.py hands URLs here, and publish/upload.py its read-back (the
checks: verify/checks.py).

Without ``--full``: the meta as the remote reader opens it (the same checks as a local open), the
meta's own consistency, and a random sample of records fetched by their locations in one batch,
each checked against its CRC-32, decoded and compared with its recorded size. The B-tree is not
walked (that would be one ranged read per page). With ``--full``: the whole object is streamed
once into a temporary copy (TMPDIR; its size is checked first) and that copy gets the local
``verify --full``: every page, every record, the locations against the tree. The report names the
URL in place of the copy.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from imagefolder_lmdb.reader import FormatError, LMDBReader
from imagefolder_lmdb.reader.format import TargetsFormatError
from imagefolder_lmdb.remote import client
from imagefolder_lmdb.remote.records import RemoteRecords
from imagefolder_lmdb.remote.revisions import RemoteRevisionRecords
from imagefolder_lmdb.remote.urls import RemoteSettings, RemoteURLError
from imagefolder_lmdb.verify import checks as local


def verify_remote(url: str, sample: int, full: bool, seed: int) -> tuple[dict[str, Any], LMDBReader | None, list[int]]:
    """The report of the object at ``url``, the opened dataset (None if none) and the checked indices."""
    if full:
        return _verify_streamed(url, sample, seed)
    report: dict[str, Any] = {"path": url, "ok": False, "problems": []}
    try:
        ds = LMDBReader(url)
    except TargetsFormatError as exc:  # each wrong label list or field on a line of its own
        report["problems"].extend(exc.problems)
        return report, None, []
    except (FormatError, OSError, RemoteURLError) as exc:
        report["problems"].append(str(exc).removeprefix(f"{url}: "))  # the summary line names the URL
        return report, None, []
    missing = local.missing_entries_problem(ds.meta_document)
    if missing is not None:  # the report is made of them
        report["problems"].append(missing)
        return report, None, []
    problems = local.label_range_problems(ds) + local.size_problems(ds) + local.document_problems(ds.meta_document)
    indices = local.sample_indices(len(ds), sample, False, seed)
    records = ds._records
    assert isinstance(records, RemoteRecords | RemoteRevisionRecords)  # a split file, or a revision (issue 58)
    fetched = records.fetch(indices)
    failures = [problem for problem in (local.bytes_problem(ds, i, fetched[i]) for i in indices) if problem]
    problems += failures[: local.LISTED_FAILURES]
    if len(failures) > local.LISTED_FAILURES:
        problems.append(f"... and {len(failures) - local.LISTED_FAILURES} more records with problems")
    facts = local.dataset_facts(ds, url, local.empty_class_warnings(ds))
    checked = {"mode": "sample", "records": len(indices), "failed": len(failures), "seed": seed}
    report.update({"ok": not problems, "problems": problems, **facts, "file_bytes": records.size, "checked": checked})
    return report, ds, indices


def _verify_streamed(url: str, sample: int, seed: int) -> tuple[dict[str, Any], LMDBReader | None, list[int]]:
    """``verify --full`` of a copy streamed once from ``url``; the report names ``url``."""
    with tempfile.TemporaryDirectory(prefix="imagefolder-lmdb-verify-") as folder:
        copy = str(Path(folder) / Path(url.split("?")[0]).name)
        try:
            streamed = client.download(url, copy, RemoteSettings())
        except (OSError, RemoteURLError) as exc:
            return {"path": url, "ok": False, "problems": [str(exc).removeprefix(f"{url}: ")]}, None, []
        report, _, indices = local.verify_file(copy, sample, True, seed)
        report = json.loads(json.dumps(report).replace(json.dumps(copy)[1:-1], url))
    report["streamed"] = {"bytes": streamed.size, "etag": streamed.etag}
    return report, None, indices
