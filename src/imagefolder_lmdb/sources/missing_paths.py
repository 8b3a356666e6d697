"""What a "does not exist" message adds for the user: the close name that does exist beside it (a
typo), or the first folder of the path that is already missing (a wrong mount, a wrong root)."""

from __future__ import annotations

import difflib
import itertools
import os
from collections.abc import Collection

#: Beyond this many entries a folder is not listed for a close name (a listing must stay quick).
LISTED_ENTRIES = 10_000


def taken_from(path: str) -> str:
    """Where a relative ``path`` is taken from, for a "does not exist" line ("" for an absolute one)."""
    return "" if os.path.isabs(path) else f" (relative paths are taken from {os.getcwd()})"


def missing_path_hint(path: str, named: Collection[str] = ()) -> str:
    """A sentence to append to "``path`` does not exist", starting with a space; "" if none helps.
    A close name among ``named`` (the other files of a set of source files) is no suggestion."""
    given_folder, name = os.path.split(path.rstrip(os.sep) or path)
    folder = given_folder or "."
    if os.path.isdir(folder):
        close = close_name(folder, name, {os.path.normpath(other) for other in named})
        return f" Did you mean {os.path.join(given_folder, close)!r}?" if close else ""
    return missing_folder_hint(path)


def missing_folder_hint(path: str) -> str:
    """The first folder of ``path`` that is missing, as a sentence to append ("" if its folder exists)."""
    folder = os.path.dirname(path.rstrip(os.sep) or path)
    if not folder or os.path.isdir(folder):
        return ""
    return f" The first folder of it that does not exist: {first_missing(folder)!r}."


def close_name(folder: str, name: str, named: set[str]) -> str | None:
    """The entry of ``folder`` closest to ``name`` (difflib's ratio at least 0.6), if any, and if
    not one of ``named``."""
    try:
        with os.scandir(folder) as entries:
            names = [entry.name for entry in itertools.islice(entries, LISTED_ENTRIES)]
    except OSError:
        return None
    close = difflib.get_close_matches(name, sorted(names), n=1, cutoff=0.6)
    return close[0] if close and os.path.normpath(os.path.join(folder, close[0])) not in named else None


def first_missing(folder: str) -> str:
    """The shortest leading part of ``folder`` (written as given) that does not exist."""
    parts = folder.split(os.sep)
    for length in range(1, len(parts) + 1):
        prefix = os.sep.join(parts[:length]) or os.sep
        if not os.path.isdir(prefix):
            return prefix
    return folder
