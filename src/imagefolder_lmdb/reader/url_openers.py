"""Who opens a URL for the reader: the openers the package's upper layers register, so the reader
hands a URL over without importing above itself (the layers contract in pyproject.toml has no exception).

``imagefolder_lmdb.remote`` (the ``[remote]`` extra) registers its opener as the entry point
``remote`` of the group ``imagefolder-lmdb.url-openers`` (pyproject.toml). An entry point, not a
call at import time: it is found however the reader was reached (``imagefolder_lmdb.LMDBDataset``,
``imagefolder_lmdb.reader``, ``scripts/dataset.py``, a dataset unpickled in a spawned worker), and
importing the package still imports no numpy. ``register`` adds one in-process (a test's fake store).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: The entry-point group an opener is registered under.
GROUP = "imagefolder-lmdb.url-openers"

#: An opener: (url, max_in_flight, cache_dir, cache_bytes) to the reader's ``Opened``.
UrlOpener = Callable[..., Any]

_registered: list[UrlOpener] = []


def entry_points(group: str) -> Any:
    """The installed entry points of ``group``; importlib.metadata (a twentieth of a second) is imported
    only when a URL is opened, not by every process that imports the reader."""
    from importlib import metadata

    return metadata.entry_points(group=group)


def register(opener: UrlOpener) -> None:
    """Use ``opener`` for URLs in this process, before any entry point."""
    _registered.insert(0, opener)


def url_opener(url: str) -> UrlOpener:
    """The opener of ``url``: the one registered last in-process, else the installed entry point."""
    if _registered:
        return _registered[0]
    for point in entry_points(group=GROUP):
        opener: UrlOpener = point.load()
        register(opener)  # looked up once per process
        return opener
    raise ImportError(
        f"cannot read {url}: no URL opener is installed (entry point group {GROUP}); install the "
        "package with its [remote] extra: pip install 'imagefolder-lmdb[remote]'"
    )
