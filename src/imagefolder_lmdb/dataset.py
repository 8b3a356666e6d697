"""``imagefolder_lmdb.dataset``: the reader's public names, where they were before the reader became
the subpackage ``imagefolder_lmdb.reader`` (src/imagefolder_lmdb/reader/); no code of its own."""

from imagefolder_lmdb.reader import *  # noqa: F403
from imagefolder_lmdb.reader import __all__, __getattr__  # noqa: F401  # LMDBDataset on first access
