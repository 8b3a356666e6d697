"""A full disk, said before writing where it clearly will not fit, and named when a write fails:
the file, the file system it is on, the space needed and the space free (``DiskFullError``)."""

from __future__ import annotations

import errno
import os
import shutil

from imagefolder_lmdb.writing.atomic import TMP_SUFFIX


class DiskFullError(OSError):
    """No space left while writing an output; names the file and what it needed."""

    def __init__(self, message: str) -> None:
        super().__init__(errno.ENOSPC, message)

    def __str__(self) -> str:
        return str(self.strerror)


def free_bytes(path: str) -> int:
    """Free space on the filesystem that holds ``path`` (which need not exist yet)."""
    return shutil.disk_usage(os.path.dirname(os.path.abspath(path))).free


def mount_point(path: str) -> str:
    """The mount point of the file system that holds ``path`` (which need not exist yet)."""
    folder = os.path.dirname(os.path.abspath(path))
    while not os.path.ismount(folder):
        folder = os.path.dirname(folder)
    return folder


def disk_full_message(path: str, needed_bytes: int) -> str:
    free = free_bytes(path)
    return (
        f"no space left on the device holding {path.removesuffix(TMP_SUFFIX)} (the file system mounted at "
        f"{mount_point(path)}) while writing it: about {megabytes(needed_bytes)} needed there, {megabytes(free)} "
        "free. Free some space (or point `work`/`results` elsewhere) and run the same command again."
    )


def megabytes(count: int) -> str:
    """A size in words: ``8 KB``, ``4.8 MB``, ``12 MB``, ``1,400 MB``."""
    if count < 1e6:
        return f"{count / 1e3:,.0f} KB"
    return f"{count / 1e6:.1f} MB" if count < 1e7 else f"{count / 1e6:,.0f} MB"


def check_free_space(path: str, needed_bytes: int) -> None:
    """Fail early, before any writing, when the disk clearly cannot hold the output."""
    if free_bytes(path) < needed_bytes:
        raise DiskFullError(disk_full_message(path, needed_bytes))
