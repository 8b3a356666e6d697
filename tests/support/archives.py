"""Archive makers: an ImageFolder tree as a tar, tar.gz or zip, members of any kind (links, devices,
paths that escape), and archives as other tools leave them (macOS metadata, unflagged UTF-8 names,
names in no encoding)."""

from __future__ import annotations

import io
import os
import tarfile
import zipfile
from pathlib import Path

#: What macOS writes for .DS_Store and AppleDouble ("._name") files: not images, whatever their name.
DS_STORE = b"\x00\x00\x00\x01Bud1" + bytes(64)
APPLE_DOUBLE = b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X        " + bytes(64)


def make_tar(tree: Path, path: Path, mode: str = "w") -> Path:
    """``tree`` as a tar (``mode`` "w" or "w:gz"), wrapped in one top folder ``train/``, as
    archives usually are."""
    with tarfile.open(path, mode) as tar:
        tar.add(tree, arcname="train")
    return path


def make_zip(tree: Path, path: Path) -> Path:
    """``tree`` as a zip, with no top folder."""
    with zipfile.ZipFile(path, "w") as zf:
        for file in sorted(tree.rglob("*")):
            zf.write(file, file.relative_to(tree).as_posix())
    return path


def add_member(tar: tarfile.TarFile, name: str, data: bytes = b"\xff\xd8\xff\xd9", **fields: object) -> None:
    """One member ``name`` holding ``data``; ``fields`` set other TarInfo attributes (type, linkname)."""
    info = tarfile.TarInfo(name)
    info.size = len(data)
    for key, value in fields.items():
        setattr(info, key, value)
    tar.addfile(info, io.BytesIO(data) if info.isfile() else None)


def evil_tar(path: Path, name: str, **fields: object) -> Path:
    """A tar of one good image ``cls/good.JPEG`` and the member ``name`` with ``fields``."""
    with tarfile.open(path, "w") as tar:
        add_member(tar, "cls/good.JPEG")
        if fields.get("type") == tarfile.SYMTYPE:
            add_member(tar, name, data=b"", **fields)
        else:
            add_member(tar, name, **fields)
    return path


def pack(tree: Path, archive: Path, wrapper: str = "train", extra: dict[str, bytes] | None = None) -> Path:
    """``tree`` under ``wrapper/`` as a .tar, .tar.gz or .zip (by name), plus ``extra`` members."""
    images = sorted(p for p in tree.rglob("*") if p.is_file())
    files = {f"{wrapper}/{p.relative_to(tree).as_posix()}": p.read_bytes() for p in images}
    files.update(extra or {})
    if archive.suffix == ".zip":
        with zipfile.ZipFile(archive, "w") as zf:
            for name, data in files.items():
                zf.writestr(name, data)
    else:
        with tarfile.open(archive, "w:gz" if archive.name.endswith(".gz") else "w") as tar:
            for name, data in files.items():
                add_member(tar, name, data)
    return archive


def clear_utf8_flags(archive: Path) -> None:
    """Clear the UTF-8 name flag (bit 11) in every local and central header: what Info-ZIP's zip
    writes on Linux, the names' UTF-8 bytes unflagged."""
    data = bytearray(archive.read_bytes())
    with zipfile.ZipFile(archive) as zf:
        local_headers = [info.header_offset for info in zf.infolist()]
        central = zf.start_dir
    for offset in local_headers:
        data[offset + 7] &= ~0x08
    while data[central : central + 4] == b"PK\x01\x02":
        data[central + 9] &= ~0x08
        name, extra, comment = (int.from_bytes(data[central + k : central + k + 2], "little") for k in (28, 30, 32))
        central += 46 + name + extra + comment
    archive.write_bytes(bytes(data))


def zip_with_raw_names(tree: Path, path: Path) -> Path:
    """``tree`` as Info-ZIP's ``zip`` on Linux writes it: each name's bytes as the file system holds
    them (a latin-1 ``caf\\xe9.jpg`` too), unflagged, "made on Unix". zipfile would write such a name
    as UTF-8, so each member is added under an ASCII stand-in of the same length, then renamed in
    its two headers."""
    names = sorted(os.fsencode(file.relative_to(tree)) for file in tree.rglob("*") if file.is_file())
    stand_ins = {name: b"".join(bytes([c]) if c < 0x80 else b"?" for c in name) for name in names}
    with zipfile.ZipFile(path, "w") as zf:
        for name, stand_in in stand_ins.items():
            info = zipfile.ZipInfo(stand_in.decode("ascii"))
            info.create_system = 3
            zf.writestr(info, (tree / os.fsdecode(name)).read_bytes())
    data = path.read_bytes()
    for name, stand_in in stand_ins.items():
        assert data.count(stand_in) == 2, f"{stand_in!r}: not once in each header"
        data = data.replace(stand_in, name)
    path.write_bytes(data)
    return path


def zip_headers(archive: Path, member: str) -> tuple[int, int, zipfile.ZipInfo]:
    """The offsets of ``member``'s local and central headers in ``archive``, and its info."""
    data = archive.read_bytes()
    with zipfile.ZipFile(archive) as zf:
        info, central = zf.getinfo(member), zf.start_dir
    while data[central : central + 4] == b"PK\x01\x02":
        name, extra, comment = (int.from_bytes(data[central + k : central + k + 2], "little") for k in (28, 30, 32))
        if data[central + 46 : central + 46 + name] == member.encode():
            return info.header_offset, central, info
        central += 46 + name + extra + comment
    raise KeyError(member)


def spoil_zip_member(archive: Path, member: str, how: str) -> None:
    """Damage one member as copies and tools leave it: ``crc`` (its CRC-32 wrong in both headers),
    ``data`` (its compressed bytes overwritten), ``deflate64`` (marked as method 9, what Windows
    Explorer writes for large zips) or ``encrypted`` (marked as password-protected)."""
    local, central, info = zip_headers(archive, member)
    data = bytearray(archive.read_bytes())
    if how == "crc":
        data[local + 14] ^= 0xFF
        data[central + 16] ^= 0xFF
    elif how == "data":
        start = local + 30 + int.from_bytes(data[local + 26 : local + 28], "little")
        start += int.from_bytes(data[local + 28 : local + 30], "little")
        data[start + 2 : start + info.compress_size - 2] = bytes(range(256)) * (info.compress_size // 256) + bytes(
            (info.compress_size - 4) % 256
        )
    elif how == "deflate64":
        data[local + 8 : local + 10] = data[central + 10 : central + 12] = (9).to_bytes(2, "little")
    else:
        data[local + 6] |= 0x01
        data[central + 8] |= 0x01
    archive.write_bytes(bytes(data))
