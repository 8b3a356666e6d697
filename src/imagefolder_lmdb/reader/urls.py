"""Which paths name an object rather than a file: the reader hands those to imagefolder_lmdb.remote
(the [remote] extra). Here, in the reader, because the reader asks first; remote re-exports it.
"""

from __future__ import annotations

import os
import re

#: Anything that starts as a URL does (``s4://``, ``gcs://``, ``s3:/`` with one slash): a scheme of two
#: letters or more (``C:/`` is a drive) and a colon and a slash. Such a path is never a file of ours:
#: it is read as a URL, and a scheme the reader does not know is named as such (remote/urls.py: check_url).
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:/")


def is_url(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names an object (``s3://``, ``gs://``, ``az://``, ``http(s)://``, or a mistyped
    scheme, refused by name when opened) rather than a file."""
    return isinstance(path, str) and _URL.match(path) is not None
