# SPDX-License-Identifier: MIT
"""Publishing a split of revisions (issue 58, point 7): only what the published pointer lacks.

The local pointer (``OUT/train.lmdb``, docs/FORMAT.md version 5) is set against the object at the
URL, read by ranged reads (its ETag learnt on the way):
- a pointer holding the local pointer's bytes: up to date, nothing sent;
- a pointer whose current revision the local one holds too (publish/sync.py took it down before the
  conversion): each data file a kept local revision names and ``URL.d/`` lacks is uploaded, then
  the pointer;
- a single split file (the split's first conversion, published before it changed) whose content id
  the local revision 1 names: moved beside the pointer by a server-side copy
  (``URL.d/<content id>.lmdb``; no bytes through this machine, one request, time on the server in
  proportion to the file), then as above;
- nothing: every data file, then the pointer.
A data file that is a meta copy (writing/revision_copy.py: a change computed on a published single
file without its records) is never uploaded: it is the published file, moved by the copy above.
The pointer is replaced last, by a conditional write: If-Match on the ETag read (created with
If-None-Match where there was none), so of two publishers that read the same pointer one wins and
the other stops in one line, its data files left unnamed (``gc`` removes them). A server that ignores
the condition is caught where it can be: the ETag is read again just before the write, and the
pointer read back after it must be this one.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from imagefolder_lmdb.publish.replace_rule import PublishError, head
from imagefolder_lmdb.reader.identity import content_id
from imagefolder_lmdb.reader.revision_format import POINTER_JSON, data_file_path
from imagefolder_lmdb.remote.urls import RemoteSettings, store_and_key
from imagefolder_lmdb.writing.hold_points import hold_point

#: What the loser of two publishers is told to do.
RERUN = "run the same command again: it takes the published revision and applies this change on it"


@dataclass(frozen=True)
class RevisionsPublished:
    """What a publish of a split of revisions sent: the data files uploaded, copied, and the pointer's ETag."""

    url: str
    revision: int
    uploaded: list[str]
    copied: list[str]
    sent_bytes: int
    etag: str

    def summary(self) -> str:
        moved = f", {len(self.copied)} moved beside it by a server-side copy" if self.copied else ""
        return (
            f"{self.url}: revision {self.revision} published: the pointer and {len(self.uploaded)} data file(s) "
            f"uploaded ({self.sent_bytes / 1e6:,.1f} MB){moved}; ETag {self.etag}"
        )


@dataclass(frozen=True)
class PublishedState:
    """The object at the URL: its ETag (and version, where the store keeps one) and, if a pointer, its meta/json."""

    etag: str | None
    version: str | None
    pointer: dict[str, Any] | None
    pointer_json: bytes | None
    single_file_id: str | None  # the content id of a single split file published there


def local_pointer(path: str) -> tuple[dict[str, Any], bytes] | None:
    """The local pointer's meta/json, decoded and as stored; None if ``path`` is a single split file."""
    from imagefolder_lmdb.reader.revisions import opened_env, pointer_document

    env = opened_env(path)
    document = pointer_document(path, env, lock=False)
    if document is None:
        return None
    with env.begin() as txn:
        return document, bytes(txn.get(POINTER_JSON) or b"")


def published_state(url: str) -> PublishedState | None:
    """What is published at ``url`` (None: nothing), read by ranged reads."""
    from imagefolder_lmdb.reader.format import FormatError, decode_meta
    from imagefolder_lmdb.remote.opening import read_values
    from imagefolder_lmdb.remote.revisions import pointer_of

    found = head(url)
    if found is None:
        return None
    try:
        values = read_values(url, RemoteSettings())
    except (FormatError, ValueError, OSError):  # not an LMDB (a short object too): not a dataset of ours
        return PublishedState(found.get("e_tag"), found.get("version"), None, None, None)
    pointer = pointer_of(values)
    if pointer is not None:
        return PublishedState(values.etag, found.get("version"), pointer, values.values[POINTER_JSON], None)
    try:
        single = content_id(decode_meta(values, url))
    except (FormatError, ValueError):
        single = None
    return PublishedState(values.etag, found.get("version"), None, None, single)


def holds_published(local: dict[str, Any], published: dict[str, Any]) -> bool:
    """Whether the local pointer keeps the published current revision as it was published (same entry)."""
    current = published["revision"]
    theirs = [entry for entry in published["revisions"] if entry["revision"] == current]
    return any(entry == theirs[0] for entry in local["revisions"]) if theirs else False


def first_file(local: dict[str, Any]) -> str | None:
    """The content id of revision 1's one data file (the split's first conversion), if revision 1 is kept."""
    first = [entry for entry in local["revisions"] if entry["revision"] == 1]
    return str(first[0]["files"][0]["id"]) if first and len(first[0]["files"]) == 1 else None


def named_files(local: dict[str, Any]) -> list[str]:
    """Every content id a kept revision names, once each, oldest first."""
    return list(dict.fromkeys(str(file["id"]) for entry in local["revisions"] for file in entry["files"]))


def _stale(url: str, local: dict[str, Any], state: PublishedState) -> str | None:
    """Why the local pointer cannot replace the published object (None: it can)."""
    if state.pointer is not None and not holds_published(local, state.pointer):
        return (
            f"{url} is at revision {state.pointer['revision']}, which the local pointer does not hold (published "
            f"from elsewhere since this folder took it): not replaced; {RERUN}"
        )
    if state.pointer is None and state.single_file_id != first_file(local):
        return (
            f"{url} holds another dataset file than revision 1 of the local split of revisions: not replaced; "
            "give --overwrite to replace it with this split (jobs reading it stop with the object-changed error)"
        )
    return None


def publish_revisions(
    path: str, url: str, upload_file: Callable[[str, str], object], overwrite: bool = False
) -> RevisionsPublished | None:
    """Publish the local pointer ``path`` and the data files the object at ``url`` lacks, each sent by
    ``upload_file(file, url)`` (publish/upload.py's ``publish``: multipart, checked after); None if up to date."""
    from imagefolder_lmdb.remote.revisions import data_file_url

    found = local_pointer(path)
    assert found is not None, path
    local, raw = found
    state = published_state(url)
    if state is not None and state.pointer_json == raw:
        return None
    problem = None if state is None else _stale(url, local, state)
    if problem is not None and not (overwrite and state is not None and state.pointer is None):
        raise PublishError(problem)
    uploaded, copied, sent = [], [], 0
    for content in named_files(local):
        target = data_file_url(url, content)
        if head(target) is not None:
            continue  # named by its content id: the object there holds these bytes (its reader checks them)
        if state is not None and state.single_file_id == content:
            _copy(url, target)
            hold_point("publish-copied")  # the single file beside the pointer, the pointer not yet written
            copied.append(content)
            continue
        _check_uploadable(data_file_path(path, content), target)
        upload_file(data_file_path(path, content), target)
        sent += os.path.getsize(data_file_path(path, content))
        uploaded.append(content)
    hold_point("publish-sent")  # every data file there, the pointer not yet replaced
    etag = _replace_pointer(path, url, raw, state)
    return RevisionsPublished(url, int(local["revision"]), uploaded, copied, sent + len(raw), etag)


def _check_uploadable(file: str, target: str) -> None:
    """PublishError where ``file`` is a meta copy (its records are only in the published file it copies,
    which is gone from ``url`` and not at ``target``): nothing of it is uploaded."""
    from imagefolder_lmdb.writing.revision_copy import published_copy

    copied = published_copy(file)
    if copied is not None:
        raise PublishError(
            f"{target}: missing, and {file} holds only the meta of {copied.url} (gone since); nothing "
            f"replaced. Remove {os.path.dirname(file)} and the pointer beside it, then convert again"
        )


def _store(url: str) -> tuple[Any, str]:
    from imagefolder_lmdb.remote.engine import store_for

    store_url, key = store_and_key(url)
    return store_for(store_url, RemoteSettings(), url), key


def _copy(source: str, target: str) -> None:
    """``source`` copied to ``target`` by the server (S3 CopyObject: at most 5 GB in one request)."""
    import obstore

    store, key = _store(source)
    try:
        obstore.copy(store, key, store_and_key(target)[1])
    except Exception as exc:  # noqa: BLE001 - one line with its fix
        from imagefolder_lmdb.remote.problems import first_line

        raise PublishError(
            f"{source}: the server-side copy to {target} failed ({first_line(exc)}); copy it there yourself "
            "(e.g. `aws s3 cp`), then run the same command again"
        ) from None


def _replace_pointer(path: str, url: str, raw: bytes, state: PublishedState | None) -> str:
    """The pointer file written to ``url`` if the object there is still the one read (If-Match), else
    PublishError in one line; the new ETag."""
    now = head(url)
    if (now is None) != (state is None) or (now is not None and state is not None and now.get("e_tag") != state.etag):
        raise _lost(url)
    with open(path, "rb") as file:
        result = put_if_unchanged(url, file.read(), state)
    hold_point("publish-pointer")  # the pointer written, not yet read back
    after = published_state(url)
    if after is None or after.pointer_json != raw:
        raise _lost(url)  # a server that ignored If-Match let another write over ours
    return str(result.get("e_tag") or after.etag or "")


def put_if_unchanged(url: str, data: bytes, state: PublishedState | None) -> dict[str, Any]:
    """``data`` written at ``url`` only if the object there is still the one ``state`` read (If-Match on
    its ETag, and on its generation for gs://), or, for None, if there is none (If-None-Match: *); else
    PublishError in one line. What the server answered (its new ETag)."""
    import obstore
    from obstore.exceptions import AlreadyExistsError, PreconditionError

    store, key = _store(url)
    mode: Any = "create" if state is None else {"e_tag": state.etag}
    if state is not None and state.version is not None:
        mode["version"] = state.version  # gs:// conditions on its generation
    try:
        return dict(obstore.put(store, key, data, mode=mode))
    except (PreconditionError, AlreadyExistsError):
        raise _lost(url) from None


def _lost(url: str) -> PublishError:
    """What the loser of two publishers of one split is told."""
    now = head(url)
    at = "removed" if now is None else f"now ETag {now.get('e_tag')}"
    return PublishError(
        f"{url}: another publisher replaced it while this one ran ({at}); not replaced. The data files sent stay "
        f"unnamed beside it (`imagefolder-lmdb gc` removes them); {RERUN}"
    )
