"""Memory for batches: glibc's malloc told to keep a finished batch's memory for the next one."""

from __future__ import annotations

import ctypes
import os

# -- memory for batches ---------------------------------------------------------------------------
# Every batch allocates its values (and Pillow its images) afresh and frees them when it is done.
# With glibc's defaults the freed top of the heap goes back to the kernel and blocks over 128 KB are
# mmap'd, so each batch page-faults all of its memory in again: on a cold cache that time is added
# to the disk's, and batches by offset fell well short of the bare hinted preads (BENCHMARKS.md).

#: glibc's mallopt parameters (malloc.h).
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
#: Freed memory kept for the next batch, at most; blocks up to the second figure come from the heap.
KEEP_FREED_BYTES, HEAP_BLOCKS_UP_TO = 64 << 20, 16 << 20
#: Set to "default" to leave glibc's malloc settings alone in every process that reads.
MALLOC_ENV = "IMAGEFOLDER_LMDB_MALLOC"
#: glibc's environment variables for the same settings (MALLOC_<name>_): a user's choice wins.
_USER_MALLOC_SETTINGS = ("TRIM_THRESHOLD", "MMAP_THRESHOLD", "TOP_PAD", "MMAP_MAX")
_malloc_settled = False  # inherited by forked workers, as the settings are; spawned ones start anew


def keep_freed_memory_for_reuse() -> None:
    """Once per process, before its first batch: let glibc reuse a finished batch's memory for the
    next one instead of handing it back to the kernel. Memory kept stays below KEEP_FREED_BYTES.
    Skipped off glibc, where the user set these limits (MALLOC_*_, GLIBC_TUNABLES) or where
    ``IMAGEFOLDER_LMDB_MALLOC=default``."""
    global _malloc_settled
    if _malloc_settled:
        return
    _malloc_settled = True
    tuned = any(f"MALLOC_{name}_" in os.environ for name in _USER_MALLOC_SETTINGS)
    if tuned or "glibc.malloc" in os.environ.get("GLIBC_TUNABLES", "") or os.environ.get(MALLOC_ENV) == "default":
        return
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):  # not glibc
        return
    mallopt(_M_TRIM_THRESHOLD, KEEP_FREED_BYTES)
    mallopt(_M_MMAP_THRESHOLD, HEAP_BLOCKS_UP_TO)
