# SPDX-License-Identifier: MIT
"""SOURCE and OUTDIR never mix: checked before ``convert SOURCE OUTDIR`` writes anything.

- OUTDIR (or ``--work``) inside SOURCE is refused with the fix: what the run writes there (contact
  sheets, parts, logs) would be read as images by the next run of the same command.
- A SOURCE that holds this tool's outputs (``*.lmdb``, the results lock), or an OUTDIR that already
  holds folders of images, is refused as a likely swap of the two arguments, before the run writes
  its work folder into the user's images.
- A URL OUTDIR (``s3://...``) holds no folders to look at, and cannot lie inside a local SOURCE.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Sequence

from imagefolder_lmdb.run.lock import LOCK_NAME
from imagefolder_lmdb.sources.tree import IMAGE_EXTENSIONS

#: Entries looked at per folder when searching OUTDIR for images (a check must stay quick).
LOOKED_AT = 200
SWAP = "did you swap SOURCE and OUTDIR? The images come first: imagefolder-lmdb convert SOURCE OUTDIR"


def is_url(path: str) -> bool:
    return "://" in path


def inside(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or lies under it, links resolved (it need not exist yet)."""
    real, container = os.path.realpath(path), os.path.realpath(folder)
    return os.path.commonpath([real, container]) == container


def mixed_places(source: str | Sequence[str], outdir: str, work: str | None, cli: bool = True) -> str | None:
    """The line refusing SOURCE, OUTDIR and the work folder as given, or None where they are apart."""
    if not isinstance(source, str) or is_url(source) or not os.path.isdir(source):
        return None  # an archive, source files or a missing SOURCE: nothing can be inside it
    work_flag = "--work" if cli else "work="
    if not is_url(outdir) and inside(outdir, source):
        return (
            f"OUTDIR {outdir} is inside SOURCE {source}: what a run writes there would be read as images by "
            f"the next one. Name an OUTDIR outside {source}, e.g. {beside(source)}"
        )
    if work is not None and inside(work, source):
        return (
            f"{work_flag} {work} is inside SOURCE {source}: what a run writes there would be read as images "
            f"by the next one. Name a work folder outside {source} (the default is OUTDIR/work)"
        )
    output = tool_output(source)
    if output:
        return f"SOURCE {source} holds {output}, which this tool writes into an OUTDIR: {SWAP}"
    if not is_url(outdir):
        images = folder_of_images(outdir, work)
        if images:
            return (
                f"OUTDIR {outdir} already holds a folder of images ({images}): {SWAP}. "
                "Or name a new or empty folder as OUTDIR"
            )
    return None


def beside(source: str) -> str:
    """A folder next to SOURCE for the datasets, written as SOURCE is: ``data`` -> ``data-lmdb``,
    ``.`` -> ``../NAME-lmdb``."""
    absolute = os.path.abspath(source)
    folder = os.path.join(os.path.dirname(absolute), f"{os.path.basename(absolute)}-lmdb")
    return folder if os.path.isabs(source) else os.path.relpath(folder)


def tool_output(folder: str) -> str | None:
    """``train.lmdb`` or the results lock where ``folder`` holds one at its top."""
    if os.path.exists(os.path.join(folder, LOCK_NAME)):
        return LOCK_NAME
    with os.scandir(folder) as entries:
        for entry in itertools.islice(entries, LOOKED_AT * 10):
            if entry.name.endswith(".lmdb") and entry.is_file():
                return entry.name
    return None


def folder_of_images(outdir: str, work: str | None) -> str | None:
    """A folder of OUTDIR (not the work folder) holding images, directly or one folder down (a
    class folder, or a split folder of class folders), as ``name/``; None if there is none."""
    if not os.path.isdir(outdir):
        return None
    own_work = os.path.realpath(work if work is not None else os.path.join(outdir, "work"))
    for entry in listed(outdir):
        if entry.is_dir() and os.path.realpath(entry.path) != own_work and image_in(entry.path, depth=2):
            return f"{entry.name}/"
    return None


def image_in(folder: str, depth: int) -> str | None:
    """The first image file within ``depth`` levels of ``folder`` (by ImageFolder's extensions)."""
    folders = []
    for entry in listed(folder):
        if entry.is_file() and entry.name.lower().endswith(IMAGE_EXTENSIONS):
            return entry.path
        if entry.is_dir():
            folders.append(entry.path)
    if depth > 1:
        for sub in folders[:LOOKED_AT]:
            found = image_in(sub, depth - 1)
            if found:
                return found
    return None


def listed(folder: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as entries:
            return sorted(itertools.islice(entries, LOOKED_AT), key=lambda entry: entry.name)
    except OSError:
        return []
