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
  every record checked against its CRC-32), and ``cache``: the records fetched, kept on local disk;
- ``revisions``: a split of revisions (docs/FORMAT.md, version 5): its pointer read once, the revision's
  data files opened by content id and read as above (issue 58).
"""

from __future__ import annotations

# Defined in the reader, which asks it before it hands a path here (issue 42: remote imports the reader,
# never the other way but for that one hand-over, reader/dataset.py).
from imagefolder_lmdb.reader.urls import is_url

__all__ = ["is_url"]
