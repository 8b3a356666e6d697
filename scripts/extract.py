"""Rule extract: make a split's source readable by the shards.

A folder is used where it is: the output only records its absolute path. A .tar, .tar.gz, .tgz or
.zip holding an ImageFolder tree is unpacked into the output folder, after every member name has
been checked: absolute paths, ``..`` components, links pointing outside, devices and other special
files are refused with an error naming the archive and the member. Nothing is written outside the
output folder, and the unpacked tree only gets its final name when it is whole.
"""

import logging
import os
import re
import stat
import tarfile
import zipfile
from pathlib import PurePosixPath
from typing import Any, TextIO

from workflow_io import hold_point, publish, remove_path, run_rule, temporary_path, write_json_atomic

log = logging.getLogger("imagefolder_lmdb.extract")

TREE = "tree"
DESCRIPTION = "source.json"
WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:")


class UnsafeArchiveError(ValueError):
    """An archive member would land outside the extraction folder, or is not a plain file."""


def unsafe_name_reason(name: str) -> str | None:
    """Why a member name is refused, or None if it stays inside the extraction folder."""
    if name.startswith(("/", "\\")) or WINDOWS_DRIVE.match(name):
        return "absolute path"
    if ".." in PurePosixPath(name.replace("\\", "/")).parts:
        return "'..' in path"
    return None


def check_tar_members(archive: str, members: list[tarfile.TarInfo]) -> None:
    for member in members:
        reason = unsafe_name_reason(member.name)
        if reason is None and (member.issym() or member.islnk()):
            target = member.linkname
            if unsafe_name_reason(target) is not None:
                reason = f"link pointing outside the archive ({target})"
        if reason is None and not (member.isfile() or member.isdir() or member.issym() or member.islnk()):
            reason = "device, fifo or other special file"
        if reason is not None:
            raise UnsafeArchiveError(f"{archive}: refused member {member.name!r}: {reason}. Nothing was extracted.")


def extract_tar(archive: str, destination: str) -> int:
    """Unpack a (possibly compressed) tar into ``destination``; returns the number of members."""
    with tarfile.open(archive, mode="r:*") as tar:
        members = tar.getmembers()
        check_tar_members(archive, members)
        # filter="data" is the second line of defence: it refuses anything our check missed
        # (links resolving outside, absolute link targets) and drops unsafe permission bits.
        try:
            tar.extractall(destination, members=members, filter="data")
        except tarfile.FilterError as exc:
            raise UnsafeArchiveError(f"{archive}: refused member: {exc}. Nothing usable was extracted.") from exc
    return len(members)


def check_zip_members(archive: str, infos: list[zipfile.ZipInfo]) -> None:
    for info in infos:
        reason = unsafe_name_reason(info.filename)
        file_type = stat.S_IFMT(info.external_attr >> 16)  # 0 when the zip did not record one
        if reason is None and file_type == stat.S_IFLNK:
            reason = "symbolic link"
        if reason is None and file_type not in (0, stat.S_IFREG, stat.S_IFDIR):
            reason = "device, fifo or other special file"
        if reason is not None:
            raise UnsafeArchiveError(f"{archive}: refused member {info.filename!r}: {reason}. Nothing was extracted.")


def extract_zip(archive: str, destination: str) -> int:
    with zipfile.ZipFile(archive) as zf:
        infos = zf.infolist()
        check_zip_members(archive, infos)
        zf.extractall(destination)
    return len(infos)


def tree_root(extracted: str) -> str:
    """Archives often wrap the tree in one top folder (``train/cls/x.jpg``): descend into it."""
    root = extracted
    while True:
        entries = [e for e in os.scandir(root) if not e.name.startswith(".")]
        if len(entries) == 1 and entries[0].is_dir() and not _has_files(entries[0].path):
            root = entries[0].path
        else:
            return root


def _has_files(folder: str) -> bool:
    return any(entry.is_file() for entry in os.scandir(folder))


def describe_folder(source: str) -> dict[str, Any]:
    log.info("source %s is a folder: used in place, nothing to extract", source)
    return {"kind": "folder", "root": os.path.abspath(source), "source": os.path.abspath(source)}


def unpack_archive(source: str, building: str, output: str) -> dict[str, Any]:
    """Unpack ``source`` into ``building/tree``; paths in the description are the final ones."""
    log.info("extracting %s", source)
    unpack = extract_zip if source.lower().endswith(".zip") else extract_tar
    members = unpack(source, os.path.join(building, TREE))
    root = os.path.join(output, os.path.relpath(tree_root(os.path.join(building, TREE)), building))
    log.info("extracted %d members; the image tree will be at %s", members, root)
    return {"kind": "extracted", "root": os.path.abspath(root), "source": os.path.abspath(source), "members": members}


def extract(source: str, output: str) -> dict[str, Any]:
    """Build ``output`` (the description, plus the unpacked tree for an archive) under a
    temporary name and rename it into place when whole."""
    building = temporary_path(output)
    remove_path(building)
    os.makedirs(building)
    description = describe_folder(source) if os.path.isdir(source) else unpack_archive(source, building, output)
    write_json_atomic(os.path.join(building, DESCRIPTION), description)
    hold_point("extract")
    remove_path(output)
    publish(building, output)
    return description


def main(smk: Any, stream: TextIO) -> None:
    extract(smk.input.source, smk.output[0])


if __name__ == "__main__":
    run_rule(main, snakemake)  # type: ignore[name-defined]  # noqa: F821
