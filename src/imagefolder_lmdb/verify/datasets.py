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
    """The datasets ``path`` names: the file (or URL) itself, or every ``*.lmdb`` file of a folder."""
    if is_url(path) or not os.path.isdir(path):
        return [path]
    found = sorted(os.path.join(path, name) for name in os.listdir(path) if name.endswith(".lmdb"))
    files = [name for name in found if os.path.isfile(name)]
    if not files:
        raise InfoError(f"{path}: a folder holding no .lmdb file")
    return files
