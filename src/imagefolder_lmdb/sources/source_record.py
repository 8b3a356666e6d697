"""What a source holds, recorded so that a later run can tell whether it changed: for each group of
its images (a class folder, the files beside the class folders, an archive or source file) a digest
of its entries' names, sizes and modification times, and beside it a digest of their inodes and
change times.

The first digest is the same on a copy that keeps names, sizes and times (``rsync -a``, ``cp -a``,
another machine), so such a copy is the same source. The second is a hint valid only on the same
filesystem (the device id is recorded with it): an image edited in place with its size kept and its
time set back (``touch -r``) changes its ctime, which no user tool can set back. A walk costs one
``stat`` per file (~4 s for ImageNet's 1.28M files, warm), the walk a no-op rerun made before.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from imagefolder_lmdb.sources.inputs_read import DIGEST_CHARS
from imagefolder_lmdb.work.folder_listing import LOOSE_FILES as LOOSE_FILES


@dataclass(frozen=True)
class SourceRecord:
    """One source's groups: ``entries`` (names, sizes, times: the same on a faithful copy) and
    ``hints`` (inodes and change times: compared only on ``device``)."""

    entries: dict[str, str]
    hints: dict[str, str]
    device: int | None

    def as_data(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> SourceRecord:
        return cls(dict(data["entries"]), dict(data["hints"]), data.get("device"))

    def changed(self, earlier: SourceRecord) -> list[str]:
        """The groups whose entries differ from ``earlier``'s (added, removed or changed)."""
        names = sorted({*self.entries, *earlier.entries})
        return [name for name in names if self.entries.get(name) != earlier.entries.get(name)]

    def edited_in_place(self, earlier: SourceRecord) -> list[str]:
        """The groups with the same entries whose files were written since ``earlier`` (their inode or
        change time moved), on the same filesystem only: elsewhere every file has a new one."""
        if self.device is None or self.device != earlier.device:
            return []
        return sorted(
            name
            for name, hint in self.hints.items()
            if self.entries.get(name) == earlier.entries.get(name) and earlier.hints.get(name, hint) != hint
        )


def record_folder(folder: str) -> SourceRecord:
    """A folder source: each subfolder (walked as ImageFolder walks it: links followed) is a group,
    and the files beside them one more (``LOOSE_FILES``)."""
    entries: dict[str, str] = {}
    hints: dict[str, str] = {}
    loose: list[tuple[str, os.stat_result | None]] = []
    with os.scandir(folder) as scan:
        children = sorted(scan, key=lambda entry: entry.name)
    for child in children:
        info = entry_stat(child.path)
        if info is not None and stat.S_ISDIR(info.st_mode):
            entries[child.name], hints[child.name] = digests(walk_files(child.path))
        else:
            loose.append((child.name, info))
    if loose:
        entries[LOOSE_FILES], hints[LOOSE_FILES] = digests(iter(loose))
    return SourceRecord(entries, hints, os.stat(folder).st_dev)


def record_files(paths: Sequence[str]) -> SourceRecord:
    """Archives or source files: each file is a group of its own, named by its absolute path."""
    entries: dict[str, str] = {}
    hints: dict[str, str] = {}
    for path in paths:
        name = os.path.abspath(path)
        entries[name], hints[name] = digests(iter([(name, entry_stat(path))]))
    devices = {os.stat(path).st_dev for path in paths if os.path.exists(path)}
    return SourceRecord(entries, hints, devices.pop() if len(devices) == 1 else None)


def walk_files(folder: str) -> Iterator[tuple[str, os.stat_result | None]]:
    """Every file under ``folder`` by its path relative to it, links followed (a folder link that leads
    back up is walked once)."""
    seen: set[tuple[int, int]] = set()
    for where, folders, names in os.walk(folder, followlinks=True):
        info = os.stat(where)
        if (info.st_dev, info.st_ino) in seen:
            folders[:] = []
            continue
        seen.add((info.st_dev, info.st_ino))
        relative = os.path.relpath(where, folder)
        for name in names:
            yield os.path.normpath(os.path.join(relative, name)), entry_stat(os.path.join(where, name))


def entry_stat(path: str) -> os.stat_result | None:
    """The stat of ``path`` with links followed; None for a dangling link or an unreadable entry."""
    try:
        return os.stat(path)
    except OSError:
        return None


def digests(files: Iterator[tuple[str, os.stat_result | None]]) -> tuple[str, str]:
    """The portable digest (name, size, whole seconds of mtime: what a copy keeps) and the hint
    digest (name, inode, ctime in ns) of a group's files."""
    portable, hint = [], []
    for name, info in files:
        if info is None:
            portable.append(f"{name}\0unreadable")
            continue
        portable.append(f"{name}\0{info.st_size}\0{int(info.st_mtime)}")
        hint.append(f"{name}\0{info.st_ino}\0{info.st_ctime_ns}")
    return digest(portable), digest(hint)


def digest(lines: list[str]) -> str:
    text = "\n".join(sorted(lines))
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:20]


def file_digest(path: str) -> str:
    """The content digest of a small input file (a devkit, a labels CSV, a class list): the one a
    job computes of the bytes it parsed (sources/inputs_read.py)."""
    hasher = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            hasher.update(block)
    return hasher.hexdigest()[:DIGEST_CHARS]
