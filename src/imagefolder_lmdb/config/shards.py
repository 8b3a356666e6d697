"""The ``shards`` setting, the one home of the shard count: how many encode jobs a command-line
conversion cuts a split into when ``--shards`` is not given (``choose_shards``), and how many a
split may have (``shards_allowed``), which the config check applies to ``expected_images`` before
any job and rule count_check to the images it counted (``too_many_shards``).

Each job pays an interpreter start and its imports (about a second), so a small split wants few
jobs; a large one wants enough to keep every core busy and to make a rerun after a failure small.
The rule: one shard per 1,000 images, at least one per core where each gets 100 images or more,
at most two per core, and at most one per core without a merge (``merge: false``): there each job
also writes, checks and syncs its data file, which the split then keeps (a job's end waits for its
file to reach the disk, with no other work on that core; every file is one more to open and to
copy), so one wave of jobs, a shard per core, does better than two (BENCHMARKS.md §20).
The image count is the source's kind's estimate (``Source.image_estimate``: a folder's files that
its listing takes as images, or an archive's size over 110 kB, ImageNet's mean JPEG; none for a set
of source files). A config file's splits keep its own value.
"""

from __future__ import annotations

import math
import os
from typing import Any

#: Shards a split may have whatever its size: the schema's default, which a small source gets anyway
#: (an empty shard's job costs a second or so). More than this and more than the images is refused.
SHARDS_ALWAYS_ALLOWED = 16


def shards_allowed(shards: int, images: int) -> bool:
    """Whether ``shards`` encode jobs suit a split of ``images`` images: none of them left with
    nothing to do, beyond the few any small source gets by default."""
    return shards <= max(images, SHARDS_ALWAYS_ALLOWED)


def too_many_shards(split: str, shards: int | None, images: int) -> str | None:
    """More shards than the split holds images, beyond the few any small source gets by default:
    jobs with nothing to do. The shard list is fixed before the images are counted (the DAG holds
    every encode job), so the config is corrected rather than the count cut."""
    if shards is None or not images or shards_allowed(shards, images):
        return None
    return (
        f"config key splits.{split}.shards: {shards} is more than the {images} images the source holds "
        f"({shards - images} encode jobs would have nothing to do); set shards: {images} or fewer"
    )


IMAGES_PER_SHARD = 1000
MIN_IMAGES_PER_CORE = 100
MAX_SHARDS_PER_CORE = 2
MAX_SHARDS_PER_CORE_WITHOUT_MERGE = 1
#: The rule in words, for --help; the note that gives the count chosen gives its numbers only.
RULE_WORDS = "1 per 1,000 images, at least 1 per core, at most 2 per core (1 with --no-merge)"
RULE = "--shards N to choose"


def shards_for(images: int, cores: int, merge: bool = True) -> int:
    """The rule above (``merge``: the config's ``merge``)."""
    count = math.ceil(images / IMAGES_PER_SHARD)
    count = max(count, min(cores, images // MIN_IMAGES_PER_CORE))
    per_core = MAX_SHARDS_PER_CORE if merge else MAX_SHARDS_PER_CORE_WITHOUT_MERGE
    return max(1, min(count, per_core * cores))


def estimated(images: int, split: dict[str, Any]) -> str:
    """Words for an archive's ``images`` (sources.image_estimate's): from its size, not a count (listing a
    large archive would read all of it), so that small images are not taken for a miscount."""
    from imagefolder_lmdb.sources.base import ARCHIVE_BYTES_PER_IMAGE  # the command line's --help needs none of it

    megabytes = os.path.getsize(split["source"]) / 1e6
    whole = " holding every split" if split.get("root") else ""  # one split of an archive holding several
    mean = f"ImageNet's mean {ARCHIVE_BYTES_PER_IMAGE // 1000} kB"
    return f"an archive of {megabytes:,.1f} MB{whole} (~{images:,} images of {mean})"


def cores_of(cores: int | str | None) -> int:
    """``--cores``: a number, or all of this machine's."""
    if isinstance(cores, int) or (isinstance(cores, str) and cores.isdigit()):
        return max(1, int(cores))
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def choose_shards(config: dict[str, Any], cores: int | str | None) -> list[str]:
    """Set ``shards`` of each split that has none; the notes saying what was chosen and why."""
    from imagefolder_lmdb.sources import image_estimate  # the command line's --help needs none of it

    notes = []
    for name, split in config["splits"].items():
        if "shards" in split:
            continue
        images = image_estimate(split)
        if images is None:
            continue
        split["shards"] = shards_for(images, cores_of(cores), bool(config.get("merge", True)))
        counted = f"{images:,} images" if os.path.isdir(split["source"]) else estimated(images, split)
        shards = f"{split['shards']} shard{'s' if split['shards'] > 1 else ''}"
        used = cores_of(cores)
        notes.append(f"{name}: {shards} for {counted} on {used} core{'s' if used != 1 else ''} ({RULE})")
    return notes
