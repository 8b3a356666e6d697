# SPDX-License-Identifier: MIT
"""The data objects a live upload (publish/live_helper.py) sent and no pointer names yet, kept in the work
folder (``WORK/uploads/live-<digest of the split's URL>.json``), each content id written before its upload
starts: a kill at any moment leaves them named here. Once the split's pointer is published (publish/upload.py
``publish_any``), those the published pointer does not name are removed from the bucket (a rerun whose source
changed made other data files) and the record goes: the rerun reuses or removes what a killed run sent."""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from imagefolder_lmdb.publish.pending import record_path
from imagefolder_lmdb.writing.atomic import write_json_atomic


@dataclass(frozen=True)
class LiveRecord:
    """Where the content ids a live upload sent under ``url``'s data folder are kept until its pointer is published."""

    url: str
    path: Path

    @classmethod
    def in_folder(cls, work: str | os.PathLike[str], url: str) -> LiveRecord:
        return cls(url, record_path(work, url, "live-"))

    def sent(self) -> list[str]:
        """The content ids recorded (none for a record of another URL, or none at all)."""
        try:
            content = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return []
        if not isinstance(content, dict) or content.get("url") != self.url:
            return []
        return [str(item) for item in content.get("sent", []) if isinstance(item, str)]

    def add(self, content: str) -> None:
        """``content`` recorded, before its upload starts."""
        sent = self.sent()
        if content in sent:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(str(self.path), {"url": self.url, "sent": [*sent, content]})

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):  # the folder goes with its last record (another may be there)
            self.path.parent.rmdir()


def remove_unnamed(url: str, work: str) -> list[str]:
    """After ``url``'s pointer is published: the data objects a live upload recorded and no revision of the
    published pointer names, removed (with any upload of theirs a kill left pending); what was done, in lines."""
    from imagefolder_lmdb.publish.revisions import named_files, published_state

    record = LiveRecord.in_folder(work, url)
    sent = record.sent()
    if not sent:
        return []
    state = published_state(url)
    if state is None or state.pointer is None:
        return []  # no pointer there (replaced by a single file since): nothing tells what is named
    named = set(named_files(state.pointer))
    unnamed = [content for content in sent if content not in named]
    for content in unnamed:
        remove_object(url, content, work)
    record.remove()
    if not unnamed:
        return []
    return [
        f"{url}: removed {len(unnamed)} data object(s) under {url}.d/ that an interrupted run had sent and no "
        "revision names"
    ]


def remove_object(url: str, content: str, work: str) -> None:
    """The data object ``content`` of ``url``'s data folder deleted, and an upload of it a kill left, aborted."""
    import obstore
    from obstore.exceptions import NotFoundError

    from imagefolder_lmdb.publish.pending import UploadRecord, abort_recorded
    from imagefolder_lmdb.publish.s3_multipart import Credentials, S3Multipart
    from imagefolder_lmdb.remote.engine import store_for
    from imagefolder_lmdb.remote.revisions import data_file_url
    from imagefolder_lmdb.remote.urls import RemoteSettings, store_and_key

    target = data_file_url(url, content)
    store_url, key = store_and_key(target)
    with contextlib.suppress(NotFoundError, FileNotFoundError):  # gone already: what was asked
        obstore.delete(store_for(store_url, RemoteSettings(), target), key)
    credentials = Credentials.from_environment() if target.lower().startswith(("s3://", "s3a://")) else None
    if credentials is not None:
        bucket, object_key = target.split("://", 1)[1].split("/", 1)
        abort_recorded(UploadRecord.in_folder(work, target), S3Multipart(bucket, object_key, credentials))
