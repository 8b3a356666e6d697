"""The ``shards`` setting: how many encode jobs a split may have. The config check applies it to
``expected_images`` before any job; rule count_check to the images it counted."""

from __future__ import annotations

#: Shards a split may have whatever its size: the schema's default, which a small source gets anyway
#: (an empty shard's job costs a second or so). More than this and more than the images is refused.
SHARDS_ALWAYS_ALLOWED = 16


def shards_allowed(shards: int, images: int) -> bool:
    """Whether ``shards`` encode jobs suit a split of ``images`` images: none of them left with
    nothing to do, beyond the few any small source gets by default."""
    return shards <= max(images, SHARDS_ALWAYS_ALLOWED)
