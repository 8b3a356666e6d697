"""The source files a split's ``source`` names (layouts webdataset and parquet; their publishers call
them shards, a word that here means an encode job).

``source`` is a list of files, a glob (``shards/*.parquet``, sorted), or a brace pattern as
WebDataset writes them (``imagenet1k-train-{0000..1023}.tar``, in the order it expands to); a list
may hold patterns too. The order found here is the order of the records.
"""

from __future__ import annotations

import glob
import os

from braceexpand import braceexpand

from imagefolder_lmdb.sources.missing_paths import missing_folder_hint, missing_path_hint, taken_from

GLOB_CHARACTERS = frozenset("*?[")


class SourceFilesError(ValueError):
    """The source names no file, or a file that is not there (``missing``)."""

    def __init__(self, message: str, missing: bool = False) -> None:
        super().__init__(message)
        self.missing = missing


def source_files(source: str | list[str]) -> list[str]:
    """Every source file ``source`` names, in record order, each once; an error names what is missing
    (how many of the files named, the first and the last)."""
    patterns = [source] if isinstance(source, str) else list(source)
    files: list[str] = []
    for pattern in patterns:
        for expanded in braceexpand(pattern):
            files.extend(files_of(expanded))
    files = list(dict.fromkeys(files))  # a file named twice is read once
    missing = [path for path in files if not os.path.isfile(path)]
    if missing:
        raise SourceFilesError(missing_source_files(missing, files), missing=True)
    return files


def missing_source_files(missing: list[str], named: list[str]) -> str:
    """What is missing, in the users' word: WebDataset's and the hub's files are their shards."""
    where = f"{taken_from(missing[0])}."
    if len(missing) == 1:
        return f"shard {missing[0]!r} does not exist{where}" + missing_path_hint(missing[0], named)
    text = f"{len(missing)} of the {len(named)} shards do not exist, from {missing[0]!r} to {missing[-1]!r}{where}"
    return text + missing_folder_hint(missing[0])  # no one close name answers for several


def files_of(pattern: str) -> list[str]:
    """The files ``pattern`` names: itself if it has no glob characters (checked by the caller),
    else its matches, sorted."""
    if GLOB_CHARACTERS.isdisjoint(pattern):
        if os.path.isdir(pattern):
            raise SourceFilesError(
                f"{pattern!r} is a folder; name its shard files, e.g. with a glob such as "
                f"{os.path.join(pattern, '*.tar')!r} or {os.path.join(pattern, '*.parquet')!r}"
            )
        return [pattern]
    matches = sorted(path for path in glob.glob(pattern) if os.path.isfile(path))
    if not matches:
        where = f"{taken_from(pattern)}."
        hint = "" if GLOB_CHARACTERS.intersection(os.path.dirname(pattern)) else missing_folder_hint(pattern)
        raise SourceFilesError(f"no file matches {pattern!r}{where}" + hint, missing=True)
    return matches
