"""The listing stamp of a folder source, a param of rule extract: a file added to or removed from a
class folder changes it, so Snakemake lists the source again. Snakemake itself compares a folder
input by the folder's own modification time, which such a change leaves alone.

A class folder is listed when its modification time differs from the one cached in ``.snakemake/``,
so a run stats ~1,000 folders rather than 1.28M files. That listing records each file's name, inode,
size and modification time: a file replaced under the same name (``mv new.jpg cls/old.jpg``, or a
copy into the folder) changes the folder's time and the file's inode, so the stamp changes and the
same command lists the split again. The same per-folder digests go into the shard stamps
(src/imagefolder_lmdb/work/shard_stamps.py), so only the shards holding that folder's images are
encoded again. An edit in place that leaves the folder's time alone is not seen: ``touch`` the
class folder.

It lies in work/, below the sources, because the shard stamps read
it and the sources import work/: the arrow points down (issue 42).
"""

import contextlib
import hashlib
import json
import os
import stat
import time
from typing import Any

from imagefolder_lmdb.writing.atomic import atomic_file

#: The group of the files that lie beside the class folders (ILSVRC val's flat folder holds only these).
LOOSE_FILES = "."

CACHE = os.path.join(".snakemake", "imagefolder-lmdb.listing-stamps.json")
#: A folder changed this recently may change again within its time's resolution (1-2 s on some
#: filesystems) without its time moving: such a listing is used but not cached.
SETTLE_SECONDS = 2.0


def listing_stamp(source: str, cache_path: str = CACHE) -> str:
    """A digest of the names in each class folder of ``source`` and of the files beside them
    (with size and time: a class tar replaced under its name is a different source)."""
    entries = folder_entries(source, cache_path)
    return digest(json.dumps([[name, *value] for name, value in entries.items()], ensure_ascii=False))


def folder_entries(source: str, cache_path: str = CACHE) -> dict[str, list[Any]]:
    """Each entry of ``source`` by name, sorted: ``[digest]`` for a folder (cached by the folder's
    time), ``[size, mtime_ns]`` for a file, ``["unreadable"]`` for a dangling link."""
    cache = read_cache(cache_path)
    entries: dict[str, list[Any]] = {}
    cached_any = False
    with os.scandir(source) as scan:
        for entry in sorted(scan, key=lambda e: e.name):
            try:
                info = entry.stat()
            except OSError:  # a dangling link: the listing names it
                entries[entry.name] = ["unreadable"]
                continue
            if not stat.S_ISDIR(info.st_mode):
                entries[entry.name] = [info.st_size, info.st_mtime_ns]
                continue
            key = os.path.abspath(entry.path)
            cached = cache.get(key)
            if cached is not None and cached[0] == info.st_mtime_ns:
                names = cached[1]
            else:
                names = names_digest(entry.path)
                if time.time() - info.st_mtime > SETTLE_SECONDS:
                    cache[key] = [info.st_mtime_ns, names]
                    cached_any = True
            entries[entry.name] = [names]
    if cached_any:
        write_cache(cache_path, cache)
    return entries


def names_digest(folder: str) -> str:
    """A digest of what ``folder`` holds: each entry's name, and for each file (links followed) its
    inode, size and modification time; a subfolder by its name only."""
    with os.scandir(folder) as scan:
        return digest("\n".join(sorted(entry_line(entry) for entry in scan)))


def entry_line(entry: os.DirEntry) -> str:
    try:
        info = entry.stat()
    except OSError:  # a dangling link: the listing names it
        return f"{entry.name}\0unreadable"
    if stat.S_ISDIR(info.st_mode):
        return entry.name
    return f"{entry.name}\0{info.st_ino}\0{info.st_size}\0{info.st_mtime_ns}"


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def read_cache(path: str) -> dict[str, list[Any]]:
    try:
        with open(path, encoding="utf-8") as stream:
            cache = json.load(stream)
    except (OSError, ValueError):
        return {}
    return cache if isinstance(cache, dict) else {}


def write_cache(path: str, cache: dict[str, list[Any]]) -> None:
    """Replace the cache whole; losing it (a race with another process, a full disk) only costs a listing."""
    with contextlib.suppress(OSError), atomic_file(path, encoding="utf-8") as stream:
        json.dump(cache, stream)  # ASCII: a folder name that is not UTF-8 is kept as its escapes
