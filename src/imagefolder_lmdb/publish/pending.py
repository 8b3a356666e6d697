# SPDX-License-Identifier: MIT
"""Pending multipart uploads: none left behind by this tool.

S3 cannot tell whose a pending upload is (any writer may start one on a key), so each upload's id
is recorded in the work folder (``WORK/uploads/<digest of the URL>.json``) once S3 gives it and
before the first part is sent, and removed once the upload completed or was aborted. A process
killed in between (``kill -9``, a power cut, a scheduler's time limit) leaves the record: the next
publish of that URL aborts the recorded upload and says so. Other pending uploads of the key are
named in a note and never aborted (another writer's may be running). Through obstore (no AWS keys
in the environment) an upload can be neither listed nor aborted: a note says what a kill can leave
and the lifecycle rule that cleans it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from imagefolder_lmdb.publish.s3_multipart import S3Multipart, S3RequestError
from imagefolder_lmdb.writing.atomic import write_json_atomic

#: The bucket rule that removes pending uploads (S3; GCS has one of the same name).
LIFECYCLE_RULE = "AbortIncompleteMultipartUpload"


def record_path(work: str | os.PathLike[str], url: str, kind: str = "") -> Path:
    """Where a record of an upload to ``url`` lies in the work folder (``kind``: a prefix of its name, one
    record of each kind per URL)."""
    name = hashlib.sha256(url.encode()).hexdigest()[:16]
    return Path(work) / "uploads" / f"{kind}{name}.json"


@dataclass(frozen=True)
class UploadRecord:
    """Where the id of the upload to ``url`` is kept while it runs."""

    url: str
    path: Path

    @classmethod
    def in_folder(cls, work: str | os.PathLike[str], url: str) -> UploadRecord:
        return cls(url, record_path(work, url))

    def write(self, upload_id: str, file: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(str(self.path), {"url": self.url, "upload_id": upload_id, "file": os.path.abspath(file)})

    def recorded(self) -> str | None:
        """The upload id recorded for this URL (None: none, or a record of something else)."""
        try:
            content = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(content, dict) or content.get("url") != self.url:
            return None
        upload_id = content.get("upload_id")
        return upload_id if isinstance(upload_id, str) else None

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):  # the folder goes with its last record (another may be there)
            self.path.parent.rmdir()


def abort_recorded(record: UploadRecord, upload: S3Multipart) -> list[str]:
    """Abort the upload an interrupted publish of this URL recorded; what was done, in lines."""
    upload_id = record.recorded()
    if upload_id is None:
        return []
    upload.upload_id = upload_id
    try:
        aborted = upload.abort()
    except (S3RequestError, OSError) as exc:
        return [
            f"note: the pending upload {upload_id} to {record.url}, left by an interrupted publish (recorded in "
            f"{record.path}), could not be aborted ({exc}); it is kept for the next publish to try again"
        ]
    record.remove()
    if not aborted:
        return []  # completed before the kill, or removed since (a lifecycle rule): nothing was left
    return [
        f"aborted the pending upload {upload_id} to {record.url} left by an interrupted publish "
        f"(recorded in {record.path}): its parts are removed"
    ]


def others_note(upload: S3Multipart, url: str) -> list[str]:
    """A note naming the other pending uploads of the key (never aborted: they may be another writer's)."""
    try:
        others = [found for found in upload.pending() if found.key == upload.key]
    except (S3RequestError, OSError):
        return []  # listing uploads may be refused (s3:ListBucketMultipartUploads): nothing to say
    if not others:
        return []
    named = ", ".join(f"{found.upload_id} (started {found.initiated or 'at an unknown time'})" for found in others)
    return [
        f"note: {url} has {len(others)} other pending upload{'s' if len(others) > 1 else ''}, not started by this "
        f"work folder and not aborted (another writer's may be running): {named}. If none is running, abort them "
        f"(`aws s3api abort-multipart-upload --bucket {upload.bucket} --key {upload.key} --upload-id ID`) or let "
        f"a lifecycle rule with {LIFECYCLE_RULE} remove them"
    ]


def obstore_note(url: str, size: int, part: int) -> list[str]:
    """What a kill can leave where obstore uploads (it neither lists nor aborts an upload): said only
    where obstore sends the file in parts (larger than one part)."""
    if size <= part:
        return []
    scheme = url.split(":", 1)[0].lower()
    if scheme in ("az", "azure", "abfs", "abfss", "adl"):
        cleans = "Azure discards uncommitted blocks after 7 days"
    else:
        cleans = f"a lifecycle rule with {LIFECYCLE_RULE} removes them (docs/training.md)"
    return [
        f"note: {url} is uploaded through obstore (no AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the "
        "environment), which can neither list nor abort an upload: if this process is killed, the parts sent "
        f"stay as a pending upload, billed until removed; {cleans}"
    ]
