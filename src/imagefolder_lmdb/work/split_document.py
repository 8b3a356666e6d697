"""The meta document a workflow step judges a split by: a single file's own, or, for a split of
revisions (docs/FORMAT.md, version 5), its current revision's, which holds the ``made_from``,
``classes``, ``settings`` and ``stats`` of the file the revision flattens to. ``read_document`` alone
gives a pointer's own document, which names none of them (issue 58)."""

from __future__ import annotations

import os
from typing import Any

from imagefolder_lmdb.reader.document import read_document


def split_document(path: str) -> dict[str, Any] | None:
    """The document of the dataset at ``path`` as a conversion judges it (None: no readable dataset)."""
    document = own_document(path)
    return current_revision_document(path) if pointer_document(document) else document


def is_pointer(path: str) -> bool:
    """Whether ``path`` holds a split of revisions' pointer."""
    return pointer_document(own_document(path))


def pointer_document(document: dict[str, Any] | None) -> bool:
    from imagefolder_lmdb.reader.revision_format import is_pointer_document

    return document is not None and is_pointer_document(document)


def own_document(path: str) -> dict[str, Any] | None:
    """The meta document the file at ``path`` holds itself (a pointer's own, for a pointer)."""
    document = read_document(path)
    if document is None and os.path.isfile(path):
        document = shared_document(path)  # a file this process holds open (a change just written): LMDB opens it once
    return document


def shared_document(path: str) -> dict[str, Any] | None:
    """The meta document of ``path`` read through this process's shared environment of it."""
    import lmdb

    from imagefolder_lmdb.reader import META_KEYS
    from imagefolder_lmdb.reader.meta_checks import parse_document
    from imagefolder_lmdb.reader.revisions import opened_env

    try:
        with opened_env(path).begin() as txn:
            raw = txn.get(META_KEYS["json"])
            return None if raw is None else parse_document(bytes(raw))
    except (OSError, ValueError, lmdb.Error):
        return None


def current_revision_document(pointer: str) -> dict[str, Any] | None:
    """The current revision's document of the pointer at ``pointer`` (None where it cannot be read),
    read in an environment of its own, closed after (the shared one where this process holds it open):
    a shared environment left open would make ``read_document`` fail on it later in this process."""
    import lmdb

    from imagefolder_lmdb.reader import FormatError
    from imagefolder_lmdb.reader.handles import open_env_readonly
    from imagefolder_lmdb.reader.revisions import opened_env

    try:
        env = open_env_readonly(pointer)
    except (lmdb.Error, OSError, ValueError):  # already open in this process (LMDB opens a file once)
        env = None
    try:
        return revision_document(env or opened_env(pointer), pointer)
    except (OSError, ValueError, FormatError, lmdb.Error):
        return None
    finally:
        if env is not None:
            env.close()


def revision_document(env: Any, pointer: str) -> dict[str, Any]:
    from imagefolder_lmdb.reader.revision_format import POINTER_JSON, decode_pointer, decode_revision, entry_of

    with env.begin() as txn:
        pointer_document = decode_pointer(bytes(txn.get(POINTER_JSON) or b""), pointer)
        return dict(decode_revision(txn, entry_of(pointer_document, None, pointer), pointer).document)
