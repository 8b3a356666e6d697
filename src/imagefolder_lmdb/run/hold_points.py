"""Moved to imagefolder_lmdb.writing.hold_points (issue 42: the steps, run and remote all reach it, so it
lies low); this old name re-exports it for one release."""

from imagefolder_lmdb.writing.hold_points import *  # noqa: F403
from imagefolder_lmdb.writing.hold_points import HOLD_ENV, HOLD_MARKER_ENV, hold_point

__all__ = ["HOLD_ENV", "HOLD_MARKER_ENV", "hold_point"]
