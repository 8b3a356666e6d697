"""The datasets a path names, as ``info`` and ``verify`` take it: a file, a URL, or each ``*.lmdb``
file of a folder (an OUTDIR). Here, below the steps (rule verify's module is also the command), and
not in info.py, which the steps must not import (issue 42).
"""

from __future__ import annotations

import os

from imagefolder_lmdb.reader.urls import is_url


class InfoError(ValueError):
    """Not a dataset, or a folder holding none."""


def datasets_in(path: str) -> list[str]:
    """The datasets ``path`` names: the file (or URL) itself, or every ``*.lmdb`` file of a folder,
    or every ``.lmdb`` object directly under a URL's prefix (``s3://bucket/imagenet``; listing it runs
    obstore in this process: the caller allows it, remote/client.py)."""
    if is_url(path):
        from imagefolder_lmdb.extras import installed, missing_extra

        if not installed("obstore"):  # before any listing or read: one line, not obstore's ImportError
            raise InfoError(missing_extra(f"{path}: reading a URL", "obstore"))
        return datasets_at_url(path)
    if not os.path.isdir(path):
        return [path]
    found = sorted(os.path.join(path, name) for name in os.listdir(path) if name.endswith(".lmdb"))
    files = [name for name in found if os.path.isfile(name)]
    if not files:
        raise InfoError(f"{path}: a folder holding no .lmdb file")
    return files


def datasets_at_url(url: str) -> list[str]:
    """The object ``url`` names, or the ``.lmdb`` objects under the prefix it names. A prefix holding
    none that may still be an object's key (``s3://b/data/train``) is taken as that object."""
    from imagefolder_lmdb.remote.listing import datasets_under, is_prefix

    if not is_prefix(url):
        return [url]
    try:
        found = datasets_under(url)
    except (OSError, ValueError) as exc:
        raise InfoError(str(exc)) from None
    if found:
        return found
    if url.endswith("/") or not url.split("://", 1)[1].strip("/").count("/"):
        raise InfoError(f"{url}: no .lmdb object under this prefix")
    return [url]
