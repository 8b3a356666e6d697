"""Starting the disk writes of a file early, so that its final flush waits only for the tail.

A writer that flushes once at the end leaves the disk idle while it computes and then waits for
every byte (the merge of a large split: seconds). Linux's ``sync_file_range`` asks the kernel to
start writing a file's dirty pages and returns at once; the final ``fdatasync`` stays the one
guarantee. Elsewhere this does nothing and the final flush writes everything, as before.
"""

from __future__ import annotations

import ctypes
import functools
import sys
from collections.abc import Callable

#: ``SYNC_FILE_RANGE_WRITE``: start writing dirty pages, do not wait for them.
_START_WRITING = 2


@functools.cache
def _sync_file_range() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        function = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (OSError, AttributeError):
        return None
    function.argtypes = (ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint)
    function.restype = ctypes.c_int
    return function


def start_writeback(fd: int) -> bool:
    """Ask the kernel to start writing ``fd``'s dirty pages to disk now, without waiting.
    Only a hint: False where it cannot (another system, a file system that refuses); an I/O
    error comes again from the final flush, which is what callers check."""
    function = _sync_file_range()
    return function is not None and function(fd, 0, 0, _START_WRITING) == 0
