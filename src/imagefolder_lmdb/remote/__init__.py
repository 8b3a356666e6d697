# SPDX-License-Identifier: MIT
"""Reading a dataset in place from object storage or an HTTP server (``pip install
imagefolder-lmdb[remote]``): ``LMDBDataset("s3://bucket/train.lmdb")``.

Every file the workflow writes records where each record's bytes lie (meta/locations), so a record
is one ranged GET, never a walk of LMDB's B-tree. The modules:

- ``urls``: which paths are URLs, and the obstore store that reads one;
- ``engine``: ranged GETs with obstore in this process, many in flight, each pinned to the ETag
  seen at open (If-Match), retried where that is right;
- ``client``: where a process's reads run: in this process in DataLoader workers (and processes
  that say they will not fork), else in a helper process, since obstore's runtime does not survive
  a fork (a forked child of a process that used it hangs on its first request);
- ``opening``: the meta and the record locations, fetched with the few ranged reads the path from
  LMDB's root to the meta keys takes;
- ``records``: the record source of a remote dataset (a batch's ranges merged and fetched at once,
  every record checked against its CRC-32), and ``cache``: the records fetched, kept on local disk.
"""

from __future__ import annotations

import os
import re

#: Anything that starts as a URL does (``s4://``, ``gcs://``, ``s3:/`` with one slash): a scheme of two
#: letters or more (``C:/`` is a drive) and a colon and a slash. Such a path is never a file of ours:
#: it is read as a URL, and a scheme the reader does not know is named as such (urls.check_url).
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:/")


def is_url(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names an object (``s3://``, ``gs://``, ``az://``, ``http(s)://``, or a mistyped
    scheme, refused by name when opened) rather than a file."""
    return isinstance(path, str) and _URL.match(path) is not None
