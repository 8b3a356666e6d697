"""Moved to imagefolder_lmdb.work.folder_listing (issue 42: the shard stamps, below the sources, read
it); this old name re-exports it for one release."""

from imagefolder_lmdb.work.folder_listing import *  # noqa: F403
from imagefolder_lmdb.work.folder_listing import CACHE, SETTLE_SECONDS, folder_entries, listing_stamp

__all__ = ["CACHE", "SETTLE_SECONDS", "folder_entries", "listing_stamp"]
