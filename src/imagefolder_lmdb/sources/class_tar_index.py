"""Many tars indexed at once: the class tars of ILSVRC2012_img_train.tar, or a folder of them.

Listing 1.28M member headers is per-member Python (issue 60: extract was ~20 CPU-s at ImageNet's
count, on one core while the others idled). The tars are cut into contiguous runs, one per worker;
each run but the first is listed by a forked child, which writes its listings as JSON (names,
offsets, sizes: no pickle) to a temporary file, while the parent lists the first run itself. A tar
a worker cannot list quickly (a member that is not a plain file, an unsafe name, any damage), or
every tar of a child that failed, is listed again by the parent the slow way, in the tar's turn:
the errors, their order and the index are those of one process. Asked for them (``TarSpan.folder``),
the workers also encode each member's members.jsonl row, so that a tar of plain class tars is indexed
without an object per image (sources/indexed_archive.py ``index_by_rows``).
"""

from __future__ import annotations

import json
import os
import re
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

from tqdm import tqdm

from imagefolder_lmdb.sources.archive_members import (
    TAR_END_MARKER,
    check_tar_complete,
    check_tar_members,
    class_of_tar,
    file_reader,
    list_tar,
    tar_location,
    unsafe_name_reason,
)
from imagefolder_lmdb.sources.tar_headers import PlainMembers, plain_tar_members
from imagefolder_lmdb.work.files import ROW_JSON, Member
from imagefolder_lmdb.work.source_locations import TarLocation, location_to_json

#: A name that may be refused: absolute (``/``, ``\``, a drive) or holding ``..``; found in one
#: regular-expression pass over a tar's names joined by newlines (a name holding a newline only adds
#: a line start: more names checked one by one, never fewer).
MAYBE_UNSAFE = re.compile(r"^(?:[/\\]|[A-Za-z]:)|\.\.", re.MULTILINE)
#: Exit status of a child whose listings are written.
LISTED = 0


@dataclass(frozen=True)
class TarSpan:
    """A tar inside a file (a class tar inside the train tar) or a whole file (``base`` 0)."""

    path: str
    base: int
    size: int
    #: the class folder of its members whose members.jsonl rows the lister writes too (None: no rows)
    folder: str | None = None
    container: int = 0  # the number of ``path`` among the source's containers, for the rows


def checked_listing(span: TarSpan) -> PlainMembers | None:
    """The tar's members where all are plain files with safe names and the tar is complete (the
    checks of index_tar and index_tar_of_tars); None: list it with tarfile, which names the problem."""
    members = plain_tar_members(span.path, span.base, span.size)
    if members is None or members.end() + TAR_END_MARKER > span.size:
        return None  # the end-of-archive zeros at members.end() were read by plain_tar_members
    if MAYBE_UNSAFE.search("\n".join(members.names)) and any(map(unsafe_name_reason, members.names)):
        return None
    return members


def listings(spans: list[TarSpan], workers: int, progress: dict[str, Any] | None = None) -> list[PlainMembers | None]:
    """``checked_listing`` of every span, in order, by up to ``workers`` processes; ``progress``:
    tqdm's arguments (None: no bar)."""
    runs = contiguous_runs(spans, workers)
    children = [(start_child(run), run) for run in runs[1:]]  # forked before the bar starts tqdm's thread
    bar_options = {
        "desc": "index class tars",
        "unit": "tar",
        **(progress if progress is not None else {"disable": True}),
    }
    with tqdm(total=len(spans), **bar_options) as bar:
        found = listed_here(runs[0], bar) if runs else []
        for (pid, stream), run in children:
            found += collected(pid, stream, run, bar)
    return found


def contiguous_runs(spans: list[TarSpan], workers: int) -> list[list[TarSpan]]:
    """``spans`` cut into at most ``workers`` runs of nearly equal total size, in order."""
    total = sum(span.size for span in spans) or 1
    runs: list[list[TarSpan]] = [[] for _ in range(max(1, min(workers, len(spans))))]
    done = 0
    for span in spans:
        runs[min(len(runs) - 1, done * len(runs) // total)].append(span)
        done += span.size
    return [run for run in runs if run]


def listed_here(run: list[TarSpan], bar: Any = None) -> list[PlainMembers | None]:
    found = []
    for span in run:
        members = checked_listing(span)
        if members is not None and span.folder is not None:
            members.rows = member_rows_text(members, span)
        found.append(members)
        if bar is not None:
            bar.update(1)
    return found


def start_child(run: list[TarSpan]) -> tuple[int, IO[bytes]]:
    """A forked child listing ``run`` into a temporary file; it leaves by ``os._exit`` (no parent's
    atexit, buffers or logging)."""
    stream = tempfile.TemporaryFile()  # noqa: SIM115 (closed by collected, after the child is done)
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child: coverage is not collected there)
        status = 1
        try:
            stream.write(json.dumps([as_data(found) for found in listed_here(run)]).encode("ascii"))
            stream.flush()
            status = LISTED
        finally:
            os._exit(status)
    return pid, stream


def collected(pid: int, stream: IO[bytes], run: list[TarSpan], bar: Any = None) -> list[PlainMembers | None]:
    """A child's listings; a child that did not finish (killed, out of memory) is redone here."""
    with stream:
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) != LISTED:
            return listed_here(run, bar)
        stream.seek(0)
        found = [from_data(item) for item in json.load(stream)]
    if bar is not None:
        bar.update(len(run))
    return found


def member_rows_text(members: PlainMembers, span: TarSpan) -> str:
    """The members.jsonl rows of the tar's members under ``span.folder``, as work/files.py
    ``write_members`` writes them (its encoder, the same location object)."""
    return "".join(
        ROW_JSON.encode([f"{span.folder}/{name}", location_to_json(TarLocation(span.container, span.base + at, size))])
        + "\n"
        for name, at, size in zip(members.names, members.offsets, members.sizes, strict=True)
    )


def as_data(found: PlainMembers | None) -> list[Any] | None:
    return None if found is None else [found.names, found.offsets, found.sizes, found.rows]


def from_data(item: list[Any] | None) -> PlainMembers | None:
    return None if item is None else PlainMembers(*item)


def index_tar_of_tars(
    archive: str,
    inner_tars: list[tarfile.TarInfo],
    container: int = 0,
    progress: dict[str, Any] | None = None,
    workers: int = 1,
) -> Iterator[Member]:
    """File members of the class tars ``inner_tars`` of ``archive``, located in the outer file.

    ILSVRC2012_img_train.tar holds one uncompressed tar per class: an inner member's bytes sit at
    (inner tar's data offset + member's offset inside it) of the outer file. Only the tars given
    are opened (a class subset reads only its own); ``workers`` processes list them.
    """
    spans = [TarSpan(archive, inner.offset_data, inner.size) for inner in inner_tars]
    found = listings(spans, workers, {"desc": f"index {os.path.basename(archive)}", **(progress or {})})
    for inner, members in zip(inner_tars, found, strict=True):
        name = class_of_tar(inner)
        yield Member(name, None)  # the class folder, even if its tar is empty
        if members is None:
            yield from slow_class_tar(archive, inner, container)
        else:
            yield from located(members, name, container, inner.offset_data)


def located(members: PlainMembers, folder: str, container: int, base: int) -> Iterator[Member]:
    """``members`` as members of ``folder``, each located at ``base`` + its offset in ``container``."""
    for name, offset, size in zip(members.names, members.offsets, members.sizes, strict=True):
        yield Member(f"{folder}/{name}", TarLocation(container, base + offset, size))


def slow_class_tar(archive: str, inner: tarfile.TarInfo, container: int) -> Iterator[Member]:
    """A class tar listed by tarfile, with every check: what names a damaged or unusual one."""
    where = f" (member {inner.name})"
    with tarfile.open(archive, mode="r:") as outer:
        members = list_tar(f"{archive}:{inner.name}", fileobj=outer.extractfile(inner))
    check_tar_members(f"{archive}:{inner.name}", members, links_allowed=False)
    check_tar_complete(archive, members, inner.size, file_reader(archive, inner.offset_data), where)
    for member in members:
        if member.isfile():
            path = f"{class_of_tar(inner)}/{member.name}"  # the class folder
            yield Member(path, tar_location(f"{archive}:{inner.name}", container, member, inner.offset_data))
