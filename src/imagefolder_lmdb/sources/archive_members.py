"""The members of tar and zip archives: safety checks, indexes for reading in place, safe extraction.

Reading in place is the default: a plain tar (also a tar of tars, like ILSVRC2012_img_train.tar)
is indexed once, member name -> (offset, size), and the encode jobs then read each image with one
``pread`` from the archive; a zip is read member by member (the readers: sources/indexed_archive.py).
Nothing per image is written to disk.

Every member name is checked first, whichever route is taken: absolute paths, ``..``
components, links and devices are refused with an error naming the archive and the member.
"""

import logging
import os
import posixpath
import re
import stat
import struct
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import PurePosixPath
from typing import Any

from tqdm import tqdm

from imagefolder_lmdb.work.files import Member
from imagefolder_lmdb.work.source_locations import TarLocation, ZipLocation
from imagefolder_lmdb.writing.atomic import atomic_file

log = logging.getLogger("imagefolder_lmdb.sources.archive_members")

WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:")
TAR_BLOCK = 512
#: A complete tar ends with at least two zero blocks after the last member's data.
TAR_END_MARKER = 2 * TAR_BLOCK
PLAIN_TAR_SUFFIXES = (".tar",)
ZIP_SUFFIXES = (".zip",)
#: Finder's "Compress" puts every file's resource fork under this top folder of the zip. macOS's own
#: unzip applies them and leaves no such folder, so it is packing metadata, never part of the tree.
MACOS_METADATA_FOLDER = "__MACOSX"
#: General-purpose flag bit 11: the member name is UTF-8 (otherwise zipfile reads it as cp437).
ZIP_UTF8_NAME_FLAG = 0x800
#: Info-ZIP's "Unicode Path" extra field: the UTF-8 name, for a header name in another encoding.
ZIP_UNICODE_PATH_FIELD = 0x7075
#: "Version made by"'s host system for Unix: the name is the bytes the file system held.
ZIP_MADE_ON_UNIX = 3


class UnsafeArchiveError(ValueError):
    """A member would land outside the extraction folder, or is not a plain file."""


class DamagedArchiveError(ValueError):
    """A truncated or unreadable archive; the message names it."""


def relative_name(path: str) -> str:
    """``./cls/x.jpg`` (``tar -C tree .``) as ``cls/x.jpg``: the path an unpacked copy has under its root."""
    while path.startswith("./"):
        path = path[2:]
    return "" if path == "." else path


def is_macos_metadata(path: str) -> bool:
    """True for ``__MACOSX`` and everything under it (``path`` relative to the archive's root)."""
    return relative_name(path).split("/", 1)[0] == MACOS_METADATA_FOLDER


def zip_member_name(info: zipfile.ZipInfo) -> str:
    """The member's name as ``unzip`` writes it, where zipfile's own reading would garble it.

    Without the UTF-8 flag zipfile decodes a name as cp437, but Info-ZIP's ``zip`` (Linux, macOS)
    stores the system's encoding, UTF-8 today, unflagged, and adds the UTF-8 name in a Unicode
    Path field where the name is not ASCII. Tried in that order: that field, UTF-8, then for a zip
    made on Unix the bytes as the file system gave them (surrogate escapes, as Python lists what
    ``unzip`` writes: a latin-1 ``caf\xe9.jpg``), else cp437 (Windows' tools write their code page).
    """
    if info.flag_bits & ZIP_UTF8_NAME_FLAG:
        return info.filename
    raw = info.filename.encode("cp437")  # cp437 maps every byte: this is the stored name
    unicode_path = zip_unicode_path(info.extra, raw)
    if unicode_path is not None:
        return unicode_path
    try:
        name = raw.decode("utf-8")
    except UnicodeDecodeError:
        if info.create_system == ZIP_MADE_ON_UNIX:
            return raw.decode("utf-8", "surrogateescape")
        return info.filename
    return info.filename if name == info.filename else name  # one string, not two, per ASCII name


def zip_unicode_path(extra: bytes, raw_name: bytes) -> str | None:
    """The UTF-8 name of a Unicode Path extra field, if there is one written for ``raw_name``."""
    position = 0
    while position + 4 <= len(extra):
        tag, size = struct.unpack_from("<HH", extra, position)
        body = extra[position + 4 : position + 4 + size]
        position += 4 + size
        # version 1, then the CRC-32 of the header name it stands for (a stale field is ignored)
        if (
            tag == ZIP_UNICODE_PATH_FIELD
            and len(body) > 5
            and body[0] == 1
            and struct.unpack_from("<I", body, 1)[0] == zlib.crc32(raw_name)
        ):
            try:
                return body[5:].decode("utf-8")
            except UnicodeDecodeError:
                return None
    return None


def is_absolute(name: str) -> bool:
    """A path from the root of some file system: ``/x``, ``\\x`` or ``C:x``."""
    return name.startswith(("/", "\\")) or WINDOWS_DRIVE.match(name) is not None


def unsafe_name_reason(name: str) -> str | None:
    """Why a member name is refused, or None if it stays inside the extraction folder."""
    if is_absolute(name):
        return "absolute path"
    # the parts only where ".." occurs at all: 1.28M names for ImageNet, a PurePosixPath each
    if ".." in name and ".." in PurePosixPath(name.replace("\\", "/")).parts:
        return "'..' in path"
    return None


#: How to pack a tree so that no member is a link: GNU tar's -h follows symbolic links and
#: --hard-dereference stores a file with several names (or several links to it) once per name.
PACK_WITHOUT_LINKS = "pack it again with `tar -h --hard-dereference` (each link stored as its file's bytes)"


def tar_member_problem(member: tarfile.TarInfo, links_allowed: bool) -> str | None:
    """Why a tar member is refused; links are only acceptable when extracting (and inside)."""
    reason = unsafe_name_reason(member.name)
    if reason is None and (member.issym() or member.islnk()):
        if link_target(member) is None:
            reason = f"link pointing outside the archive ({member.linkname}); {PACK_WITHOUT_LINKS}"
        elif not links_allowed:
            reason = (
                f"link ({member.linkname}): archives are read in place, links cannot be followed; "
                f"{PACK_WITHOUT_LINKS}, or set extract: true for this split"
            )
    if reason is None and not (member.isfile() or member.isdir() or member.issym() or member.islnk()):
        reason = "device, fifo or other special file"
    return reason


def link_target(member: tarfile.TarInfo) -> str | None:
    """The archive path a link member leads to (a symbolic link's target is relative to its own
    folder, a hard link's to the archive's top), or None where it leads outside the archive."""
    if is_absolute(member.linkname):
        return None
    folder = posixpath.dirname(member.name) if member.issym() else ""
    target = posixpath.normpath(posixpath.join(folder, member.linkname.replace("\\", "/")))
    return None if target == ".." or target.startswith("../") else target


def refuse(archive: str, member: str, reason: str) -> UnsafeArchiveError:
    return UnsafeArchiveError(f"{archive}: refused member {member!r}: {reason}. Nothing was extracted.")


def check_tar_members(archive: str, members: list[tarfile.TarInfo], links_allowed: bool) -> None:
    for member in members:
        reason = tar_member_problem(member, links_allowed)
        if reason is not None:
            raise refuse(archive, member.name, reason)


def check_zip_members(archive: str, infos: list[zipfile.ZipInfo]) -> None:
    for info in infos:
        reason = unsafe_name_reason(info.filename) or unsafe_name_reason(zip_member_name(info))
        file_type = stat.S_IFMT(info.external_attr >> 16)  # 0 when the zip did not record one
        if reason is None and file_type == stat.S_IFLNK:
            reason = "symbolic link (stored by `zip -y`): zip it again without -y, so each link is stored as its file"
        if reason is None and file_type not in (0, stat.S_IFREG, stat.S_IFDIR):
            reason = "device, fifo or other special file"
        if reason is not None:
            raise refuse(archive, info.filename, reason)
        check_zip_readable(archive, info)


#: Compression methods Python's zipfile reads (stored, deflate, bzip2, lzma).
ZIP_METHODS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA)
#: General-purpose flag bit 0: the member is encrypted.
ZIP_ENCRYPTED_FLAG = 0x1
ZIP_FIX = (
    "Zip it again without a password with a tool that writes deflate (`zip -r`, or Python's shutil.make_archive), "
    "or unpack it with a tool that reads it (7-Zip: `7z x`) and give the unpacked folder as splits.<name>.source"
)


def check_zip_readable(archive: str, info: zipfile.ZipInfo) -> None:
    """Refuse, when the archive is indexed, a member Python's zipfile cannot read: an encrypted one,
    or one compressed by a method it lacks (deflate64: what Windows Explorer writes for large zips)."""
    if info.is_dir():
        return
    if info.flag_bits & ZIP_ENCRYPTED_FLAG:
        raise DamagedArchiveError(f"{archive}: member {info.filename!r} is encrypted (password-protected). {ZIP_FIX}.")
    if info.compress_type not in ZIP_METHODS:
        method = getattr(zipfile, "compressor_names", {}).get(info.compress_type, "unknown")
        raise DamagedArchiveError(
            f"{archive}: member {info.filename!r} is compressed with method {info.compress_type} ({method}), "
            f"which Python's zipfile cannot read. {ZIP_FIX}."
        )


# --------------------------------------------------------------------------------------------------
# Indexes: where each file member's bytes are.
# --------------------------------------------------------------------------------------------------


def list_tar(archive: str, fileobj: Any = None) -> list[tarfile.TarInfo]:
    """All members of an uncompressed tar, with a clear error when it is damaged."""
    try:
        with tarfile.open(archive if fileobj is None else None, mode="r:", fileobj=fileobj) as tar:
            return tar.getmembers()
    except tarfile.ReadError as exc:
        # a cut inside a member's data ends tarfile's listing with "unexpected end of data"
        raise DamagedArchiveError(
            f"{archive}: cannot be read as an uncompressed tar ({exc}): it is truncated or damaged. "
            "Download or copy it again."
        ) from exc


def tar_location(archive: str, container: int, member: tarfile.TarInfo, base: int = 0) -> TarLocation:
    """Where a file member's bytes are (``base``: the offset of its tar inside the file read). A sparse
    member (``tar --sparse``) keeps its map, so that it is read as ``tar -x`` writes it."""
    if not member.sparse:
        return TarLocation(container, base + member.offset_data, member.size)
    sparse: list[tuple[int, int]] = member.sparse  # type: ignore[assignment]  # typeshed: int
    runs = tuple((at, length) for at, length in sparse if length)
    if any(at < 0 or at + length > member.size for at, length in runs):
        raise DamagedArchiveError(
            f"{archive}: the sparse member {member.name!r} has a map running past its size ({member.size:,} bytes): "
            "it cannot be read in place. Set extract: true for this split (tar unpacks it) or pack the archive "
            "again without --sparse."
        )
    return TarLocation(container, base + member.offset_data, member.size, runs)


def stored_end(member: tarfile.TarInfo) -> int:
    """Where a member's data ends in its tar, padded to a block: a sparse member stores only its runs."""
    sparse: list[tuple[int, int]] | None = member.sparse  # type: ignore[assignment]  # typeshed: int
    stored = sum(length for _, length in sparse) if sparse else member.size
    return member.offset_data + -(-stored // TAR_BLOCK) * TAR_BLOCK


def check_tar_complete(
    archive: str, members: list[tarfile.TarInfo], size: int, read_at: Callable[[int, int], bytes], where: str = ""
) -> None:
    """Python's tarfile stops quietly at a truncation, and at a damaged header after the first: compare
    the members with the file size, and see that the end-of-archive zeros follow the last member
    (``read_at(offset, length)``: the tar's bytes)."""
    end = max((stored_end(m) for m in members), default=0)
    last = max(members, key=lambda m: m.offset_data).name if members else "(none)"
    if end + TAR_END_MARKER > size:
        raise DamagedArchiveError(
            f"{archive}{where} is truncated: its members need {end + TAR_END_MARKER:,} bytes, the file has "
            f"{size:,} (last member {last!r}). Download or copy it again."
        )
    if read_at(end, TAR_BLOCK).strip(b"\0"):
        raise DamagedArchiveError(
            f"{archive}{where} is damaged: the member header at offset {end:,} (after {last!r}) is unreadable "
            "(bad checksum), so the members after it cannot be listed. Download or copy it again."
        )


def file_reader(path: str, base: int = 0) -> Callable[[int, int], bytes]:
    """``read_at(offset, length)`` on the file ``path``, offsets counted from ``base``."""

    def read_at(offset: int, length: int) -> bytes:
        with open(path, "rb") as stream:
            stream.seek(base + offset)
            return stream.read(length)

    return read_at


def index_tar(archive: str, container: int = 0) -> Iterator[Member]:
    """File members of a plain tar, with their byte ranges, and its folders."""
    members = list_tar(archive)
    check_tar_members(archive, members, links_allowed=False)
    check_tar_complete(archive, members, os.path.getsize(archive), file_reader(archive))
    for member in members:
        if member.isfile():
            yield Member(member.name, tar_location(archive, container, member))
        elif member.isdir():
            yield Member(member.name.rstrip("/"), None)


def class_tars_in(archive: str, keep: Callable[[str], bool] = lambda name: True) -> list[tarfile.TarInfo]:
    """The per-class ``*.tar`` members of a tar of class tars (ILSVRC2012_img_train.tar), checked;
    ``keep``: which member names are part of the source (splits.<name>.root)."""
    outer_members = list_tar(archive)
    check_tar_members(archive, outer_members, links_allowed=False)
    check_tar_complete(archive, outer_members, os.path.getsize(archive), file_reader(archive))
    inner_tars = [m for m in outer_members if m.isfile() and keep(m.name)]
    for inner in inner_tars:
        if not inner.name.endswith(".tar"):
            raise DamagedArchiveError(
                f"{archive}: member {inner.name!r} is not a .tar; a tar of per-class tars "
                "(ILSVRC2012_img_train.tar) is expected for layout ilsvrc-train"
            )
    return inner_tars


def class_of_tar(member: tarfile.TarInfo) -> str:
    """The class folder a class tar unpacks to: its name without ``.tar``."""
    return member.name.removesuffix(".tar")


def zip_infos(archive: str) -> list[zipfile.ZipInfo]:
    """Every entry of a zip, the ZipFile itself already dropped (its name -> info dict is a second
    table of them: ~0.7 KB per entry together, ~1 GB for Kaggle's 1.43M)."""
    try:
        with zipfile.ZipFile(archive) as zf:
            return zf.infolist()
    except zipfile.BadZipFile as exc:
        raise DamagedArchiveError(f"{archive}: not a readable zip ({exc}); download or copy it again") from exc


#: Entries between two updates of a zip's indexing progress bar (an update per entry costs more).
PROGRESS_STEP = 10_000


def index_zip(archive: str, container: int = 0, progress: dict[str, Any] | None = None) -> Iterator[Member]:
    infos = zip_infos(archive)
    check_zip_members(archive, infos)
    infos.reverse()
    total = len(infos)
    with tqdm(total=total, desc=f"index {os.path.basename(archive)}", unit="entry", **(progress or {})) as bar:
        while infos:  # each ZipInfo is freed as its Member is made: the index never holds both tables
            info = infos.pop()
            name = zip_member_name(info)
            if info.is_dir():
                yield Member(name.rstrip("/"), None)
            else:  # read back by zipfile's name for it
                yield Member(name, ZipLocation(container, info.filename, info.file_size))
            if len(infos) % PROGRESS_STEP == 0:
                bar.update(total - len(infos) - bar.n)  # tqdm's own interval decides what is shown


# --------------------------------------------------------------------------------------------------
# Extraction (the route for compressed tars, or on request).
# --------------------------------------------------------------------------------------------------


def extract_tar(
    archive: str, destination: str, whole: bool = False, keep: Callable[[str], bool] = lambda name: True
) -> tuple[int, list[str]]:
    """Unpack a (possibly compressed) tar into ``destination``; returns the number of members
    unpacked and the ``__MACOSX`` ones left out (none if ``whole``: a class tar, whose members
    are all inside its class). ``keep``: which member names to unpack (splits.<name>.root)."""
    with tarfile.open(archive, mode="r:*") as tar:
        members = tar.getmembers()
        check_tar_members(archive, members, links_allowed=True)
        members = [m for m in members if keep(relative_name(m.name))]
        left_out = [] if whole else [m.name for m in members if is_macos_metadata(m.name)]
        members = [m for m in members if whole or not is_macos_metadata(m.name)]
        # filter="data" is the second line of defence: it refuses anything the check missed
        # (links resolving outside, absolute link targets) and drops unsafe permission bits.
        try:
            tar.extractall(destination, members=members, filter="data")
        except tarfile.FilterError as exc:
            raise UnsafeArchiveError(f"{archive}: refused member: {exc}. Nothing usable was extracted.") from exc
    return len(members), left_out


def extract_zip(
    archive: str, destination: str, keep: Callable[[str], bool] = lambda name: True
) -> tuple[int, list[str]]:
    """Unpack a zip into ``destination`` under the names ``unzip`` gives; returns the number of
    members unpacked and the ``__MACOSX`` ones left out. ``keep``: which names to unpack."""
    with zipfile.ZipFile(archive) as zf:
        infos = zf.infolist()
        check_zip_members(archive, infos)
        for info in infos:
            info.filename = zip_member_name(info)  # zipfile checks the stored name, orig_filename
        infos = [info for info in infos if keep(info.filename)]
        members = [info for info in infos if not is_macos_metadata(info.filename)]
        zf.extractall(destination, members=members)
    return len(members), [info.filename for info in infos if is_macos_metadata(info.filename)]


def copy_member(archive: str, name: str, destination: str) -> None:
    """Copy the one member ``name`` of a tar or zip (e.g. Kaggle's LOC_val_solution.csv) to the file
    ``destination``; a missing member is named with the archive."""
    wanted = relative_name(name.strip("/"))
    if is_zip(archive):
        with zipfile.ZipFile(archive) as zf:
            found = next((i for i in zf.infolist() if relative_name(zip_member_name(i)) == wanted), None)
            data = None if found is None or found.is_dir() else zf.read(found)
    else:
        with tarfile.open(archive, mode="r:*") as tar:
            member = next((m for m in tar if relative_name(m.name) == wanted and m.isfile()), None)
            stream = tar.extractfile(member) if member is not None else None
            data = stream.read() if stream is not None else None
    if data is None:
        raise FileNotFoundError(
            f"{archive}: no member {name!r} (splits.<name>.val_labels is neither a file nor a member of this "
            "archive). Give the path of the CSV, or its path inside the archive as `unzip -l` shows it."
        )
    with atomic_file(destination, "wb") as stream:
        stream.write(data)


def extract_nested_tars(destination: str) -> None:
    """Unpack every ``*.tar`` directly inside ``destination`` into a folder of its name."""
    for entry in sorted(os.scandir(destination), key=lambda e: e.name):
        if entry.is_file() and entry.name.endswith(".tar"):
            extract_tar(entry.path, os.path.join(destination, entry.name[: -len(".tar")]), whole=True)
            os.remove(entry.path)


def is_plain_tar(path: str) -> bool:
    return path.lower().endswith(PLAIN_TAR_SUFFIXES)


def is_zip(path: str) -> bool:
    return path.lower().endswith(ZIP_SUFFIXES)
