"""Moved to imagefolder_lmdb.reader.lmdb_pages (the walk) and imagefolder_lmdb.reader.lmdb_check (``check``):
the reader owns LMDB's page layout, and remote, verify and add_locations import it from below (issue 42).
This old name re-exports both for one release."""

from imagefolder_lmdb.reader.lmdb_check import check, check_fd
from imagefolder_lmdb.reader.lmdb_pages import *  # noqa: F403
from imagefolder_lmdb.reader.lmdb_pages import LeafEntry, MetaPage, Nodes, Walk, walk, walk_fd

__all__ = ["LeafEntry", "MetaPage", "Nodes", "Walk", "check", "check_fd", "walk", "walk_fd"]
