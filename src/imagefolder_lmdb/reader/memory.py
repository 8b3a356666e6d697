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
#: Set to "default" to leave glibc's malloc settings alone in every process that reads or writes.
MALLOC_ENV = "IMAGEFOLDER_LMDB_MALLOC"
#: glibc's environment variables for the same settings (MALLOC_<name>_): a user's choice wins.
_USER_MALLOC_SETTINGS = ("TRIM_THRESHOLD", "MMAP_THRESHOLD", "TOP_PAD", "MMAP_MAX")
_malloc_settled = False  # inherited by forked workers, as the settings are; spawned ones start anew
_settled_for = (0, 0)  # the largest (keep_bytes, heap_blocks_up_to) this process decided on


def keep_freed_memory_for_reuse(keep_bytes: int = KEEP_FREED_BYTES, heap_blocks_up_to: int = HEAP_BLOCKS_UP_TO) -> None:
    """Let glibc reuse a finished batch's memory for the next batch instead of handing it back to the
    kernel: the reader calls it before a process's first batch, the LMDB writer before its first
    commit. Once per process and settings: a later call changes nothing unless it asks for more.

    Skipped off glibc, where the user set these limits (MALLOC_*_, GLIBC_TUNABLES) or where
    ``IMAGEFOLDER_LMDB_MALLOC=default``.

    Args:
        keep_bytes: freed memory kept for reuse, at most (glibc's M_TRIM_THRESHOLD).
        heap_blocks_up_to: blocks up to this size come from the heap, not from mmap (M_MMAP_THRESHOLD).
    """
    global _malloc_settled, _settled_for
    decided = _settled_for if _malloc_settled else (0, 0)
    if keep_bytes <= decided[0] and heap_blocks_up_to <= decided[1]:
        return
    _malloc_settled = True
    _settled_for = (max(keep_bytes, decided[0]), max(heap_blocks_up_to, decided[1]))
    tuned = any(f"MALLOC_{name}_" in os.environ for name in _USER_MALLOC_SETTINGS)
    if tuned or "glibc.malloc" in os.environ.get("GLIBC_TUNABLES", "") or os.environ.get(MALLOC_ENV) == "default":
        return
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):  # not glibc
        return
    mallopt(_M_TRIM_THRESHOLD, _settled_for[0])
    mallopt(_M_MMAP_THRESHOLD, _settled_for[1])
