"""``shard_name``'s old home (issue 42 moved it to work/files.py), kept for one release; every file of
a run is named in work/paths.py."""

from imagefolder_lmdb.work.files import shard_name as shard_name
