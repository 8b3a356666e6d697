"""The shard files a split's ``source`` names (layouts webdataset and parquet).

``source`` is a list of files, a glob (``shards/*.parquet``, sorted), or a brace pattern as
WebDataset writes them (``imagenet1k-train-{0000..1023}.tar``, in the order it expands to); a list
may hold patterns too. The order found here is the order of the records.
"""

from __future__ import annotations

import glob
import os

from braceexpand import braceexpand

GLOB_CHARACTERS = frozenset("*?[")


class ShardFilesError(ValueError):
    """The source names no shard, or a shard that is not there."""


def shard_files(source: str | list[str]) -> list[str]:
    """Every shard ``source`` names, in record order, each once; an error names what is missing."""
    patterns = [source] if isinstance(source, str) else list(source)
    files: list[str] = []
    for pattern in patterns:
        for expanded in braceexpand(pattern):
            files.extend(files_of(expanded))
    return list(dict.fromkeys(files))  # a shard named twice is read once


def files_of(pattern: str) -> list[str]:
    if GLOB_CHARACTERS.isdisjoint(pattern):
        if os.path.isdir(pattern):
            raise ShardFilesError(
                f"{pattern!r} is a folder; name its shard files, e.g. with a glob such as "
                f"{os.path.join(pattern, '*.tar')!r} or {os.path.join(pattern, '*.parquet')!r}"
            )
        if not os.path.isfile(pattern):
            raise ShardFilesError(f"shard {pattern!r} does not exist (relative paths are taken from {os.getcwd()})")
        return [pattern]
    matches = sorted(path for path in glob.glob(pattern) if os.path.isfile(path))
    if not matches:
        raise ShardFilesError(f"no file matches {pattern!r} (relative paths are taken from {os.getcwd()})")
    return matches
