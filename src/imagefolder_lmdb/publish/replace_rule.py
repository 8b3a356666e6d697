# SPDX-License-Identifier: MIT
"""The replace rule of a publish, the local one (run/existing.py): an object made from another
source or with other settings is replaced only with ``--overwrite``; one made from the same source
with the same settings is replaced (its source's images changed: the local rule rebuilds it too).

"Made from" is the recipe each dataset records (run/made_from.py: the source's path, root, layout,
class list, label files, columns and encode settings), read from the object's meta by ranged reads
as the remote reader reads it; an object or file written before datasets recorded it is compared by
its source (path and folder inside) and encode settings, as ``legacy_differences`` does locally.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from imagefolder_lmdb.remote.urls import RemoteSettings, store_and_key
from imagefolder_lmdb.run.existing import Existing, legacy_differences, on_error_difference
from imagefolder_lmdb.run.made_from import KEY as MADE_FROM
from imagefolder_lmdb.run.made_from import VERSION as MADE_FROM_VERSION
from imagefolder_lmdb.run.made_from import recipe_differences

#: What a running job does when the object it reads is replaced (said wherever one is).
STOPS = "jobs reading it stop with the object-changed error"


class PublishError(RuntimeError):
    """A publish refused or failed; the message names the object and what to do."""


@dataclass(frozen=True)
class Found:
    """An object already at the URL: its size, time, ETag and, if ours, the meta document."""

    size: int
    modified: datetime | None
    etag: str | None
    document: dict[str, Any] | None  # None: not an imagefolder-lmdb dataset

    def describe(self) -> str:
        when = self.modified.strftime("%Y-%m-%d %H:%M UTC") if self.modified else "time unknown"
        return f"{self.size:,} bytes, {when}"


def head(url: str) -> dict[str, Any] | None:
    """The object's HEAD (size, last_modified, e_tag), None if there is none; other errors named."""
    import obstore
    from obstore.exceptions import NotFoundError

    from imagefolder_lmdb.remote.engine import store_for

    store_url, key = store_and_key(url)
    try:
        return dict(obstore.head(store_for(store_url, RemoteSettings(), url), key))
    except (NotFoundError, FileNotFoundError):
        return None
    except Exception as exc:  # noqa: BLE001 - named with its fix
        from imagefolder_lmdb.remote.problems import explain

        raise explain(exc, url, store_for(store_url, RemoteSettings(), url), key) or PublishError(
            f"{url}: {exc}"
        ) from None


def existing(url: str) -> Found | None:
    """What is at ``url`` now (None: nothing), its meta read by ranged reads if it is ours (with or
    without record locations)."""
    from imagefolder_lmdb.reader import FormatError

    found = head(url)
    if found is None:
        return None
    try:
        document: dict[str, Any] | None = _published_document(url)
    except (FormatError, ValueError, OSError):
        document = None
    return Found(int(found["size"]), found.get("last_modified"), found.get("e_tag"), document)


def _published_document(url: str) -> dict[str, Any]:
    """The meta document of the dataset at ``url``: a split file's, or a pointer's current revision's."""
    from imagefolder_lmdb.reader.format import decode_meta
    from imagefolder_lmdb.reader.revision_format import decode_revision, entry_of
    from imagefolder_lmdb.remote.opening import read_values
    from imagefolder_lmdb.remote.revisions import pointer_of

    values = read_values(url, RemoteSettings())
    pointer = pointer_of(values)
    if pointer is None:
        return decode_meta(values, url).document
    return decode_revision(values, entry_of(pointer, None, url), url).document


def recorded_recipe(document: dict[str, Any]) -> dict[str, Any] | None:
    """The recipe a dataset records (None: made before datasets recorded one)."""
    made_from = document.get(MADE_FROM)
    if isinstance(made_from, dict) and made_from.get("version") == MADE_FROM_VERSION:
        recipe = made_from.get("recipe")
        return recipe if isinstance(recipe, dict) else None
    return None


def differences(remote: dict[str, Any], local: dict[str, Any]) -> list[str]:
    """How the object's dataset (``remote``, its meta document) was made unlike the local file's, in
    words that follow "made": ``from /a, not /b``, ``with encode short_side None, not 64``."""
    before = Existing("", remote)
    encode = dict(local.get("settings", {}).get("encode", {}))
    old, new = recorded_recipe(remote), recorded_recipe(local)
    if old is not None and new is not None:
        return recipe_differences(old, new, remote.get("classes")) + on_error_difference(before, encode)
    source = local.get("source", {})
    split = {"source": source.get("path"), "root": source.get("inside")}
    return legacy_differences(before, split, encode)


def replace_problem(url: str, found: Found, local: dict[str, Any]) -> str | None:
    """Why ``found`` may not be replaced by the file whose meta is ``local`` without --overwrite."""
    if found.document is None:
        what = "an object not made by imagefolder-lmdb"
    else:
        found_differences = differences(found.document, local)
        if not found_differences:
            return None
        what = "a dataset made " + "; ".join(found_differences)
    return f"{url} holds {what} ({found.describe()}): not replaced. Give --overwrite to replace it ({STOPS})"
