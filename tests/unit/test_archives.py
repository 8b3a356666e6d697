"""Archive members as the workflow lists and names them, without a run: the image extensions
ImageFolder accepts, zip names in any code page."""

from __future__ import annotations

import zipfile
import zlib


def test_archive_listing_accepts_what_imagefolder_accepts() -> None:
    # the sources list archive members with a copy of torchvision's extension list (importing
    # torchvision costs seconds per job): the copy must stay the original.
    from torchvision.datasets.folder import IMG_EXTENSIONS, has_file_allowed_extension

    from sources import tree

    assert tree.IMAGE_EXTENSIONS == IMG_EXTENSIONS
    names = ["a.JPEG", "b.jpg", "c.Png", "d.webp", "e.TIFF", "f.txt", "g.jpeg.bak", "h", ".jpg", "i.gif"]
    assert [tree.is_image(n) for n in names] == [has_file_allowed_extension(n, IMG_EXTENSIONS) for n in names]


def test_zip_unicode_path_field_names_a_non_utf8_member() -> None:
    # Info-ZIP stores a name in the system's code page plus its UTF-8 form in a 0x7075 field.
    from archives import zip_member_name

    stored = "Ölfass.jpg".encode("cp850")
    field = b"\x01" + zlib.crc32(stored).to_bytes(4, "little") + "Ölfass.jpg".encode()
    info = zipfile.ZipInfo(stored.decode("cp437"))
    info.extra = (0x7075).to_bytes(2, "little") + len(field).to_bytes(2, "little") + field
    assert zip_member_name(info) == "Ölfass.jpg"
    info.extra = b""  # no field and not UTF-8: zipfile's cp437 reading stays
    assert zip_member_name(info) == stored.decode("cp437")
