# SPDX-License-Identifier: MIT
"""The datasets under a prefix of a bucket, as ``info OUTDIR`` takes a folder's: the ``.lmdb``
objects directly under ``s3://bucket/prefix/`` (not deeper: a folder's ``*.lmdb`` neither), and
whether a bucket can be listed at all (publish/preflight.py asks before a conversion starts).
Runs obstore in this process: call it only where ``client.allow_in_process()`` holds.
"""

from __future__ import annotations

import posixpath
from typing import Any
from urllib.parse import urlsplit

from .engine import store_for
from .obstore_words import says_no_container
from .problems import explain, first_line, no_bucket_error
from .urls import RemoteSettings, check_url


def is_prefix(url: str) -> bool:
    """Whether ``url`` names a prefix to list rather than an object: it ends with ``/``, names a
    bucket alone, or its last part is not a ``.lmdb`` name (``s3://b/imagenet``). http(s) URLs name
    objects only (a web server lists nothing)."""
    if url.lower().startswith(("http://", "https://")):
        return False
    path = urlsplit(url).path
    return path.strip("/") == "" or path.endswith("/") or not path.endswith(".lmdb")


def store_and_prefix(url: str) -> tuple[str, str]:
    """(the store's root URL, the prefix inside it without slashes at its ends): ``s3://b/p/`` -> ``s3://b``, ``p``."""
    parts = urlsplit(url)
    check_url(f"{parts.scheme}://{parts.netloc}/x.lmdb")  # the scheme and the bucket, as an object's URL has them
    return f"{parts.scheme}://{parts.netloc}", parts.path.strip("/")


def listed(url: str, settings: RemoteSettings | None = None) -> list[str]:
    """The keys directly under ``url``'s prefix; the store's error as one message naming its fix
    (a missing bucket, credentials refused, nothing answering)."""
    import obstore

    settings = settings or RemoteSettings()
    store_url, prefix = store_and_prefix(url)
    store = store_for(store_url, settings, url)
    try:
        found = obstore.list_with_delimiter(store, prefix or None)
    except Exception as exc:  # noqa: BLE001 - obstore's errors, each named with its fix
        raise _listing_problem(exc, url, store, prefix) from None
    return [entry["path"] for entry in found["objects"]]


def _listing_problem(exc: BaseException, url: str, store: Any, prefix: str) -> BaseException:
    text = str(exc)
    if says_no_container(text):
        return no_bucket_error(url)
    key = posixpath.join(prefix, "x.lmdb")  # explain() speaks of an object; a listing is of one beside it
    return explain(exc, url, store, key) or OSError(f"{url}: the listing failed: {first_line(exc)}")


def datasets_under(url: str, settings: RemoteSettings | None = None) -> list[str]:
    """The URLs of the ``.lmdb`` objects directly under ``url``'s prefix, sorted."""
    store_url, _ = store_and_prefix(url)
    return sorted(f"{store_url}/{key}" for key in listed(url, settings) if key.endswith(".lmdb"))
