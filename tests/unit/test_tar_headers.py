"""sources/tar_headers.py: a tar of plain files listed as tarfile lists it; anything else left to tarfile."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from imagefolder_lmdb.sources.tar_headers import plain_tar_members


def write_tar(path: Path, members: list[tuple[str, bytes]], fmt: int = tarfile.GNU_FORMAT, head: bytes = b"") -> int:
    """``head`` bytes, then a tar of ``members`` (name, data); returns where the tar starts."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=fmt) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    path.write_bytes(head + buffer.getvalue())
    return len(head)


def described(members: list[tarfile.TarInfo]) -> tuple[list[str], list[int], list[int]]:
    """What the fast listing keeps of tarfile's: the names, the data offsets, the sizes (all plain files)."""
    assert all(m.isreg() and not m.sparse for m in members)
    return [m.name for m in members], [m.offset_data for m in members], [m.size for m in members]


@pytest.mark.parametrize("fmt", [tarfile.GNU_FORMAT, tarfile.USTAR_FORMAT])
def test_plain_files_are_listed_as_tarfile_lists_them(tmp_path: Path, fmt: int) -> None:
    files = [(f"n0144_{i}.JPEG", b"\xff\xd8" + bytes(i * 37) + b"\xff\xd9") for i in range(30)] + [("é.JPEG", b"x")]
    base = write_tar(tmp_path / "a.tar", files, fmt, head=b"\0" * 1024)  # as a class tar inside the train tar
    size = (tmp_path / "a.tar").stat().st_size - base
    with tarfile.open(tmp_path / "a.tar", "r:", fileobj=io.BytesIO((tmp_path / "a.tar").read_bytes()[base:])) as tar:
        expected = tar.getmembers()
    found = plain_tar_members(str(tmp_path / "a.tar"), base, size)
    assert found is not None
    assert (found.names, found.offsets, found.sizes) == described(expected)
    assert found.end() == expected[-1].offset_data + 512  # the last member's data, padded to a block


@pytest.mark.parametrize(
    "member",
    [
        tarfile.TarInfo("folder/"),  # a folder
        tarfile.TarInfo("a" * 150 + ".JPEG"),  # a long name: a GNU long-name record
    ],
)
def test_anything_but_plain_files_is_left_to_tarfile(tmp_path: Path, member: tarfile.TarInfo) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as tar:
        tar.addfile(tarfile.TarInfo("first.JPEG"), io.BytesIO(b""))
        if member.name.endswith("/"):
            member.type = tarfile.DIRTYPE
        tar.addfile(member, io.BytesIO(b""))
    (tmp_path / "b.tar").write_bytes(buffer.getvalue())
    assert plain_tar_members(str(tmp_path / "b.tar"), 0, len(buffer.getvalue())) is None


def test_a_damaged_header_or_a_cut_is_left_to_tarfile(tmp_path: Path) -> None:
    write_tar(tmp_path / "c.tar", [("a.JPEG", b"1" * 600), ("b.JPEG", b"2" * 10)])
    data = bytearray((tmp_path / "c.tar").read_bytes())
    damaged = data.copy()
    damaged[1536 + 3] ^= 0xFF  # the second header's name: its checksum no longer holds
    (tmp_path / "d.tar").write_bytes(damaged)
    assert plain_tar_members(str(tmp_path / "d.tar"), 0, len(damaged)) is None
    (tmp_path / "e.tar").write_bytes(data[:1024])  # the first member's data cut short
    assert plain_tar_members(str(tmp_path / "e.tar"), 0, 1024) is None
    (tmp_path / "f.tar").write_bytes(data[:1536])  # the file ends before the size the outer tar gives
    assert plain_tar_members(str(tmp_path / "f.tar"), 0, len(data)) is None
