"""Source kind ``index``: archives read in place, through an index of their members.

A plain ``.tar`` (also ILSVRC's tar of per-class tars) or a ``.zip``, and a folder of per-class
tars (ILSVRC2012_img_train.tar unpacked one level): ``members.jsonl`` lists each file member and
where its bytes are, and the encode jobs read them from the archive (``TarReader``: one ``pread`` per
image; ``ZipReader``: zipfile, a handle per thread). No per-image file is written.
Every member is checked first (absolute paths, ``..``, links, devices are refused, naming the
archive and the member). With a class list, the class tars of other classes are never opened.
"""

from __future__ import annotations

import json
import logging
import lzma
import os
import re
import tarfile
import threading
import zipfile
import zlib
from collections.abc import Callable, Collection
from typing import Any, TypeVar

from imagefolder_lmdb.classes.lists import ClassList
from imagefolder_lmdb.sources.archive_members import (
    DamagedArchiveError,
    class_of_tar,
    class_tars_in,
    index_tar,
    index_zip,
    is_macos_metadata,
    is_plain_tar,
    is_zip,
    relative_name,
)
from imagefolder_lmdb.sources.base import DamagedSampleError, Labels, Listing, Request, SampleReader, Source
from imagefolder_lmdb.sources.class_tar_index import TarSpan, index_tar_of_tars, listings, located
from imagefolder_lmdb.sources.layouts import layout_named
from imagefolder_lmdb.sources.tree import (
    RootFilter,
    check_not_split_folders,
    folder_to_read,
    is_image,
    report_set_aside,
    top_folders,
    tree_members,
    wrapper_prefix,
)
from imagefolder_lmdb.work.files import MEMBERS, ManifestHeader, Member, SourceDescription, write_members
from imagefolder_lmdb.work.source_locations import (
    Location,
    TarLocation,
    ZipLocation,
    location_as,
    location_from_json,
)
from imagefolder_lmdb.writing.atomic import atomic_file

log = logging.getLogger("imagefolder_lmdb.sources")

T = TypeVar("T")


class IndexedArchiveSource(Source):
    """Archives read in place: a tar, a zip, a tar of class tars, a folder of class tars."""

    kind = "index"

    @classmethod
    def claims(cls, request: Request) -> bool:
        if os.path.isdir(request.source):
            return layout_named(request.layout).labelling.class_tars and bool(class_tars(folder_to_read(request)))
        return not request.extract and (is_plain_tar(request.source) or is_zip(request.source))

    def prepare(self, request: Request, building: str, output: str) -> SourceDescription:
        source, layout = request.source, request.layout
        if not os.path.isdir(source):
            select = RootFilter(request.root)
            return index_archives(
                source,
                [source],
                layout,
                building,
                request.progress,
                wanted=request.wanted,
                select=select,
                workers=request.workers,
            )
        folder = folder_to_read(request)
        tars = class_tars(folder)
        check_no_class_folders(folder, tars)
        if request.extract:
            raise ValueError(f"{folder}: extract: true is not supported for a folder of class tars; unpack them")
        description = index_archives(
            folder, tars, layout, building, request.progress, True, request.wanted, workers=request.workers
        )
        description.inside = request.root  # the folder of class tars was source/root
        return description

    def list(
        self, description: SourceDescription, source_dir: str, labels: Labels, progress: dict, wanted: ClassList | None
    ) -> Listing:
        labelling = layout_named(description.layout).labelling
        entries = member_rows(source_dir)
        read = MemberBytes(self, description.containers, entries)
        try:
            listing = labelling.list_members(entries, description.source, description.folders, labels, wanted, read)
        finally:
            read.close()
        listing.containers = description.containers
        listing.outside.unread += description.unread_classes
        return listing

    def reader(self, header: ManifestHeader) -> SampleReader:
        return ZipReader(header.containers) if is_zip(header.containers[0]) else TarReader(header.containers)


#: A member row of a tar member that is not sparse, as work/files.py ``write_members`` writes it, its
#: name without a character JSON escapes (all of ImageNet's 1.28M rows).
TAR_ROW = re.compile(
    r'^\["([^"\\\x00-\x1f]*)", \{"tar": ([0-9]+), "offset": ([0-9]+), "size": ([0-9]+)\}\]$', re.MULTILINE
)
#: Bytes of member rows matched at once.
ROWS_AT_ONCE = 4 << 20


def member_rows(folder: str) -> list[tuple[str, Location]]:
    """The (path, location) of every row of ``members.jsonl``, as work/files.py ``read_members`` reads
    them: a run of rows that are all usual tar rows is matched by one regular expression (a
    ``json.loads`` and a dict per row cost more than the rest of the listing); any other run is
    parsed row by row as JSON."""
    entries: list[tuple[str, Location]] = []
    with open(os.path.join(folder, MEMBERS), encoding="utf-8", errors="surrogateescape") as stream:
        while lines := stream.readlines(ROWS_AT_ONCE):
            found = TAR_ROW.findall("".join(lines))
            if len(found) == len(lines):  # each match is one whole line: every line matched
                entries += [(path, TarLocation(int(tar), int(at), int(size))) for path, tar, at, size in found]
            else:
                entries += [(row[0], location_from_json(row[1])) for row in map(json.loads, lines)]
    return entries


class MemberBytes:
    """A listing's way to read a member by its path (Hugging Face's metadata files inside a zip): the
    archive opened, and its members looked up by path, only once a labelling reads one (most never do,
    and Kaggle's zip has 1.4M members)."""

    def __init__(self, source: Source, containers: list[str], entries: list[tuple[str, Location]]) -> None:
        self.source, self.containers, self.entries = source, containers, entries
        self.opened: tuple[SampleReader, dict[str, Location]] | None = None

    def __call__(self, path: str) -> bytes:
        if self.opened is None:
            reader = self.source.reader(ManifestHeader("", [], 0, self.containers, self.source.kind))
            self.opened = reader, dict(self.entries)
        reader, located = self.opened
        return reader.read(path, located[path])

    def close(self) -> None:
        if self.opened is not None:
            self.opened[0].close()


def within_class_list(items: list[T], class_of: Callable[[T], str], wanted: Collection[str] | None) -> list[T]:
    """The ``items`` (class tars) whose class is in ``wanted`` (all when there is no list)."""
    return [item for item in items if wanted is None or class_of(item) in wanted]


def container_members(
    containers: list[str],
    layout: str,
    progress: dict[str, Any],
    per_class_tars: bool,
    wanted: Collection[str] | None,
    select: RootFilter,
    workers: int = 1,
) -> tuple[list[Member], list[str]]:
    """Every member of the archives under ``select``'s root (paths relative to it), and the classes
    whose tars were left unopened (outside ``wanted``); ``workers``: processes that list class tars."""
    if per_class_tars:
        return class_tar_files_members(containers, workers), []
    members: list[Member] = []
    unread: list[str] = []
    for number, container in enumerate(containers):
        log.info("indexing %s", container)
        if layout_named(layout).labelling.class_tars:
            kept, unread_here = class_tars_under(container, select, wanted)
            unread += unread_here
            members.extend(select.members(index_tar_of_tars(container, kept, number, progress, workers)))
        elif is_zip(container):
            members.extend(select.members(index_zip(container, number, progress)))
        else:
            members.extend(select.members(index_tar(container, number)))
    return members, unread


def class_tar_files_members(containers: list[str], workers: int) -> list[Member]:
    """The members of a folder's ``<class>.tar`` files, each under its class folder, the tars listed
    by ``workers`` processes (one the fast listing leaves out: by index_tar, which names any problem)."""
    log.info("indexing %d class tars", len(containers))
    found = listings([TarSpan(c, 0, os.path.getsize(c)) for c in containers], workers)
    members: list[Member] = []
    for number, (container, plain) in enumerate(zip(containers, found, strict=True)):
        name = tar_class(container)
        members.append(Member(name, None))  # the class folder, even if its tar is empty
        if plain is None:
            members.extend(Member(f"{name}/{m.path}", m.location) for m in index_tar(container, number))
        else:
            members.extend(located(plain, name, number, 0))
    return members


def class_tars_under(
    container: str, select: RootFilter, wanted: Collection[str] | None
) -> tuple[list[tarfile.TarInfo], list[str]]:
    """The class tars of a tar of class tars under ``select``'s root and within ``wanted``, and the
    classes left unread."""
    inner = class_tars_in(container, lambda path: select.see(relative_name(path)) is not None)

    def class_of(member: tarfile.TarInfo) -> str:
        return select.relative(relative_name(class_of_tar(member)))

    kept = within_class_list(inner, class_of, wanted)
    return kept, [class_of(m) for m in inner if m not in kept]


def index_archives(
    source: str,
    containers: list[str],
    layout: str,
    building: str,
    progress: dict[str, Any],
    per_class_tars: bool = False,
    wanted: Collection[str] | None = None,
    select: RootFilter | None = None,
    workers: int = 1,
) -> SourceDescription:
    """Index archive members in place; writes ``members.jsonl`` into ``building``.

    ``per_class_tars``: the containers are ``<class>.tar`` files whose members are that class's
    images (ILSVRC2012_img_train.tar unpacked one level). ``wanted``: the configured class list;
    class tars of other classes are never opened, and are listed as unread. ``select``: the folder
    inside the archive to read (splits.<name>.root); members elsewhere are not part of the source.
    ``workers``: the processes that list class tars (the rule's threads).
    """
    select = select or RootFilter("")
    one_tar = not per_class_tars and len(containers) == 1 and not select.root
    if one_tar and (by_rows := index_by_rows(source, layout, building, progress, wanted, select, workers)):
        return by_rows
    unread: list[str] = []
    if per_class_tars:
        kept = within_class_list(containers, tar_class, wanted)
        unread, containers = [tar_class(c) for c in containers if c not in kept], kept
    members, unread_inside = container_members(containers, layout, progress, per_class_tars, wanted, select, workers)
    select.check_found(source)
    unread += unread_inside
    members, set_aside = tree_members(members)
    files, strip, beside = image_tree_files(members, layout, source, select.root)
    set_aside += beside
    count = write_members(building, files, strip)
    log.info("indexed %d file members in %d archive(s); nothing extracted", count, len(containers))
    if unread:
        log.info("%d class tars outside the class list left unread, e.g. %s", len(unread), unread[0])
    report_set_aside(set_aside)
    return SourceDescription(
        "index",
        os.path.abspath(source),
        layout,
        containers=[os.path.abspath(c) for c in containers],
        members=count,
        strip=strip,
        folders=top_folders([m.path for m in members if m.is_folder], strip),
        set_aside=set_aside,
        unread_classes=sorted(unread),
        inside=select.root,
    )


def index_by_rows(
    source: str,
    layout: str,
    building: str,
    progress: dict[str, Any],
    wanted: Collection[str] | None,
    select: RootFilter,
    workers: int,
) -> SourceDescription | None:
    """``index_archives`` of a tar of class tars (ILSVRC2012_img_train.tar) whose members are all
    plain files at distinct paths that no tree check moves or sets aside: members.jsonl is written
    from the rows the workers encode, without an object per image; None: any other tar, which the
    general way indexes (and names the problems of)."""
    if not layout_named(layout).labelling.class_tars:
        return None
    log.info("indexing %s", source)
    kept, unread = class_tars_under(source, select, wanted)
    folders = [class_of_tar(inner) for inner in kept]
    spans = [
        TarSpan(source, inner.offset_data, inner.size, folder) for inner, folder in zip(kept, folders, strict=True)
    ]
    found = listings(spans, workers, {"desc": f"index {os.path.basename(source)}", **progress})
    listed = [members for members in found if members is not None and members.rows is not None]
    if len(listed) != len(found):
        return None  # a tar the workers could not list
    paths = [f"{folder}/{name}" for folder, members in zip(folders, listed, strict=True) for name in members.names]
    if not stays_as_listed(folders, paths):
        return None
    images = [path for path in paths if is_image(path)]
    check_not_split_folders(source, select.root, images)
    if layout_named(layout).labelling.strips_wrapper and wrapper_prefix(images):
        return None
    with atomic_file(os.path.join(building, MEMBERS), encoding="utf-8", errors="surrogateescape") as stream:
        stream.writelines(members.rows or "" for members in listed)
    log.info("indexed %d file members in %d archive(s); nothing extracted", len(paths), 1)
    if unread:
        log.info("%d class tars outside the class list left unread, e.g. %s", len(unread), unread[0])
    return SourceDescription(
        "index",
        os.path.abspath(source),
        layout,
        containers=[os.path.abspath(source)],
        members=len(paths),
        strip="",
        folders=top_folders(folders, ""),
        set_aside=[],
        unread_classes=sorted(unread),
        inside=select.root,
    )


def stays_as_listed(folders: list[str], paths: list[str]) -> bool:
    """Whether the tree checks keep every class folder and file where it is (tree_members,
    RootFilter.members): no ``./`` to drop, no ``__MACOSX``, no path twice."""
    renamed = any(relative_name(folder) != folder or is_macos_metadata(folder) for folder in folders)
    return not renamed and len({*folders, *paths}) == len(folders) + len(paths)


def image_tree_files(members: list[Member], layout: str, source: str, root: str) -> tuple[list[Member], str, list[str]]:
    """The file members of the image tree, the wrapper folders to strip from their paths, and the
    files beside that tree (set aside); a tree whose top folders are train/val/test stops here."""
    files = [m for m in members if not m.is_folder]
    images = [m.path for m in files if is_image(m.path)]
    check_not_split_folders(source, root, images)
    strip = wrapper_prefix(images) if layout_named(layout).labelling.strips_wrapper else ""
    beside = [f"{m.path} (beside the image tree {strip})" for m in files if not m.path.startswith(strip)]
    return [m for m in files if m.path.startswith(strip)], strip, beside


def tar_class(path: str) -> str:
    """The class of a ``<class>.tar`` file in a folder of class tars."""
    return os.path.basename(path).removesuffix(".tar")


def check_no_class_folders(source: str, tars: list[str]) -> None:
    """Class tars and class folders side by side: an unpacking that stopped halfway. Read as tars
    only, the unpacked classes would be lost; read as a tree, the packed ones."""
    folders = sorted(e.name for e in os.scandir(source) if e.is_dir() and not e.name.startswith("."))
    if folders:
        raise ValueError(
            f"{source} holds {len(tars)} class tars and {len(folders)} class folders ({folders[0]}, ...): "
            "an unpacking that stopped halfway? Unpack the remaining tars into folders of their names "
            "(then it is an ImageFolder tree: layout imagefolder), or give ILSVRC2012_img_train.tar itself."
        )


def class_tars(folder: str) -> list[str]:
    return sorted(e.path for e in os.scandir(folder) if e.is_file() and e.name.endswith(".tar"))


# --------------------------------------------------------------------------------------------------
# Rules encode_shard and merge: image bytes by location.
# --------------------------------------------------------------------------------------------------


class TarReader(SampleReader):
    """Reads byte ranges of uncompressed tars: one ``os.pread`` per image on a descriptor per tar,
    shared by the threads."""

    remedy = "Pack the archive again without the members named (or with them fixed)"

    def __init__(self, containers: list[str]) -> None:
        self.containers = containers
        self._fds: dict[int, int] = {}
        self._opening = threading.Lock()

    def read(self, path: str, location: Location) -> bytes:
        at = location_as(TarLocation, path, location)
        stored = at.stored_size()
        data = os.pread(self._fd(at.tar), stored, at.offset)
        if len(data) != stored:
            raise DamagedArchiveError(
                f"{self.containers[at.tar]}: {stored} bytes expected at offset {at.offset}, {len(data)} read; "
                "the archive is truncated or changed since it was indexed"
            )
        return data if at.sparse is None else expand_sparse(data, at.sparse, at.size)

    def describe(self, path: str, location: Location) -> str:
        return f"{self.containers[location_as(TarLocation, path, location).tar]} member {path}"

    def source_size(self, path: str, location: Location) -> int:
        return location_as(TarLocation, path, location).size

    def _fd(self, container: int) -> int:
        fd = self._fds.get(container)
        if fd is None:
            with self._opening:
                fd = self._fds.get(container)
                if fd is None:
                    fd = self._fds[container] = os.open(self.containers[container], os.O_RDONLY)
        return fd

    def close(self) -> None:
        with self._opening:
            for fd in self._fds.values():
                os.close(fd)
            self._fds.clear()


def expand_sparse(stored: bytes, runs: tuple[tuple[int, int], ...], size: int) -> bytes:
    """A sparse member as ``tar -x`` writes it: each stored run at its place, zeros between."""
    member = bytearray(size)
    position = 0
    for at, length in runs:
        member[at : at + length] = stored[position : position + length]
        position += length
    return bytes(member)


#: What zipfile raises for a member whose stored bytes are damaged (bad CRC-32, corrupt compressed data,
#: cut short; bz2's OSError has no errno); the archive's own table was read when it was indexed.
ZIP_MEMBER_DAMAGE = (zipfile.BadZipFile, zlib.error, EOFError, lzma.LZMAError, OSError)


class ZipReader(SampleReader):
    """Reads zip members; each thread gets its own handle on a zip (a ZipFile is not thread-safe)."""

    remedy = TarReader.remedy

    def __init__(self, containers: list[str]) -> None:
        self.containers = containers
        self._zips: dict[tuple[int, int], zipfile.ZipFile] = {}  # (thread, container)
        self._opening = threading.Lock()

    def read(self, path: str, location: Location) -> bytes:
        at = location_as(ZipLocation, path, location)
        try:
            return self._zip(at.zip).read(at.member)
        except ZIP_MEMBER_DAMAGE as exc:
            if isinstance(exc, OSError) and exc.errno is not None:
                raise  # the file system's (EIO, ...), not the member's: never skipped
            raise DamagedSampleError(f"{self.describe(path, location)}: a damaged zip member ({exc})") from exc

    def describe(self, path: str, location: Location) -> str:
        return f"{self.containers[location_as(ZipLocation, path, location).zip]} member {path}"

    def source_size(self, path: str, location: Location) -> int:
        return location_as(ZipLocation, path, location).size

    def _zip(self, container: int) -> zipfile.ZipFile:
        key = (threading.get_ident(), container)
        zf = self._zips.get(key)
        if zf is None:
            with self._opening:
                zf = self._zips[key] = zipfile.ZipFile(self.containers[container])
        return zf

    def close(self) -> None:
        with self._opening:
            for zf in self._zips.values():
                zf.close()
            self._zips.clear()
