# SPDX-License-Identifier: MIT
"""How many encode jobs a command-line conversion cuts a split into when ``--shards`` is not given.

Each job pays an interpreter start and its imports (about a second), so a small split wants few
jobs; a large one wants enough to keep every core busy and to make a rerun after a failure small.
The rule: one shard per 1,000 images, at least one per core where each gets 100 images or more,
at most two per core. The image count is the folder's files (class folders one level down), or for
an archive its size over 110 kB (ImageNet's mean JPEG). A config file's splits keep its own value.
"""

from __future__ import annotations

import math
import os
from typing import Any

IMAGES_PER_SHARD = 1000
MIN_IMAGES_PER_CORE = 100
MAX_SHARDS_PER_CORE = 2
ARCHIVE_BYTES_PER_IMAGE = 110_000
#: The rule in words, for --help; the note that gives the count chosen gives its numbers only.
RULE_WORDS = "1 per 1,000 images, at least 1 per core, at most 2 per core"
RULE = "--shards N to choose"


def shards_for(images: int, cores: int) -> int:
    """The rule above."""
    count = math.ceil(images / IMAGES_PER_SHARD)
    count = max(count, min(cores, images // MIN_IMAGES_PER_CORE))
    return max(1, min(count, MAX_SHARDS_PER_CORE * cores))


def image_estimate(split: dict[str, Any]) -> int | None:
    """The split's images, counted (a folder) or estimated (an archive); None for shard sources."""
    source = split["source"]
    if not isinstance(source, str) or split.get("layout", "imagefolder") in ("webdataset", "parquet"):
        return None
    if os.path.isfile(source):
        return max(1, os.path.getsize(source) // ARCHIVE_BYTES_PER_IMAGE)
    folder = os.path.join(source, split["root"]) if split.get("root") else source
    if not os.path.isdir(folder):
        return None
    total = 0
    for entry in os.scandir(folder):
        if entry.is_dir():
            total += sum(1 for item in os.scandir(entry.path) if item.is_file())
        elif entry.is_file():
            total += 1  # a flat val folder
    return total


def estimated(images: int, split: dict[str, Any]) -> str:
    """Words for an archive's ``images`` (image_estimate's): from its size, not a count (listing a
    large archive would read all of it), so that small images are not taken for a miscount."""
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
    notes = []
    for name, split in config["splits"].items():
        if "shards" in split:
            continue
        images = image_estimate(split)
        if images is None:
            continue
        split["shards"] = shards_for(images, cores_of(cores))
        counted = f"{images:,} images" if os.path.isdir(split["source"]) else estimated(images, split)
        shards = f"{split['shards']} shard{'s' if split['shards'] > 1 else ''}"
        notes.append(f"{name}: {shards} for {counted} on {cores_of(cores)} cores ({RULE})")
    return notes
