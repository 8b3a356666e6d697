"""Faults of sources, function by function (issue 21; tests/workflow/test_risky_sources.py meets them
through the workflow): where a JPEG's image ends whatever follows it, read errors of the file system
told from damaged images, images too large for JPEG, the format version such files get, folder
links that lead back, Parquet files whose footers say they hold no image bytes."""

from __future__ import annotations

import errno
import io
import json
import os
from pathlib import Path

import pytest
from PIL import Image

from imagefolder_lmdb.board.summary import split_summary
from imagefolder_lmdb.reader import STORAGE_CODES, format_version_of
from imagefolder_lmdb.sources.folder import FileReader
from imagefolder_lmdb.sources.parquet import ParquetColumns, ParquetSourceError, check_has_image_bytes, file_info
from imagefolder_lmdb.sources.tree import FolderLinkError, scan_folder
from imagefolder_lmdb.steps.encode_shard import SourceReadError, read_and_encode
from imagefolder_lmdb.work.files import Sample
from imagefolder_lmdb.work.paths import RunPaths
from imagefolder_lmdb.writing.reencode import BadImageError, encode_image, jpeg_end
from support.images import jpeg_bytes
from support.parquet import Row, write_hf_parquet
from support.settings import encode_settings


def jpeg_with(**options: object) -> bytes:
    buffer = io.BytesIO()
    Image.open(io.BytesIO(jpeg_bytes(5, (96, 64)))).save(buffer, format="JPEG", **options)
    return buffer.getvalue()


# -- where a JPEG ends --------------------------------------------------------------------------------


@pytest.mark.parametrize("options", [{}, {"progressive": True}, {"exif": b"Exif\0\0" + b"\xff\xd9" * 4}])
def test_the_end_of_a_jpeg_is_found_past_any_trailer_and_never_in_a_cut_one(options: dict) -> None:
    data = jpeg_with(**options)  # the last: an EXIF block holding end markers, as thumbnails do
    trailer = bytes(5000) + b"\xff\xd9" + bytes(3000)  # a trailer that holds one too
    assert jpeg_end(data) == len(data) == jpeg_end(data + trailer)
    assert all(jpeg_end(data[:cut]) is None for cut in range(2, len(data) - 1, 97))
    header = encode_settings(check="header")
    assert encode_image(data + bytes(6000), header).value == data + bytes(6000)
    with pytest.raises(OSError, match="JPEG has no end-of-image marker: the file is truncated"):
        encode_image(data[: len(data) * 3 // 4], header)


# -- read errors of the file system -------------------------------------------------------------------


class FailingReader(FileReader):
    """Reads nothing: every read fails as the file system would fail it."""

    def __init__(self, error: OSError) -> None:
        super().__init__("/data/train")
        self.error = error

    def read(self, path: str, location: object) -> bytes:
        raise self.error


@pytest.mark.parametrize(
    ("code", "name"), [(errno.EACCES, "EACCES"), (errno.EIO, "EIO"), (errno.ESTALE, "ESTALE"), (errno.ENOENT, "ENOENT")]
)
@pytest.mark.parametrize("on_error", ["fail", "skip"])
def test_a_read_error_is_never_a_bad_image(code: int, name: str, on_error: str) -> None:
    error = OSError(code, os.strerror(code))
    sample = Sample(3, 0, "n01/x.JPEG")
    with pytest.raises(SourceReadError) as raised:
        read_and_encode(FailingReader(error), sample, encode_settings(on_error=on_error))
    message = str(raised.value)
    assert message.startswith(f"/data/train/n01/x.JPEG: cannot be read: {error.strerror} (errno {code}, {name}).")
    assert "never skipped as one, whatever encode.on_error says" in message
    assert ("--forcerun extract" in message) == (code == errno.ENOENT)
    assert not isinstance(raised.value, BadImageError)


def test_a_decode_error_is_a_bad_image(tmp_path: Path) -> None:
    (tmp_path / "n01").mkdir()
    (tmp_path / "n01" / "x.JPEG").write_bytes(jpeg_bytes(1)[:900])
    with pytest.raises(BadImageError, match=r"x\.JPEG: OSError: image file is truncated"):
        read_and_encode(FileReader(str(tmp_path)), Sample(0, 0, "n01/x.JPEG"), encode_settings())


# -- images too large for JPEG, and the format version of files that hold them -----------------------


def test_an_image_too_large_for_jpeg_becomes_a_png_and_its_file_version_2() -> None:
    for size in [(70000, 1), (1, 65501)]:
        buffer = io.BytesIO()
        Image.new("L", size, 200).save(buffer, format="TIFF")  # not a JPEG, so it is re-encoded
        encoded = encode_image(buffer.getvalue(), encode_settings())
        assert encoded.storage == STORAGE_CODES["reencoded:png-too-large-for-jpeg"]
        assert (encoded.width, encoded.height) == size
        stored = Image.open(io.BytesIO(encoded.value))
        assert stored.format == "PNG" and stored.mode == "RGB" and stored.getpixel((0, 0)) == (200, 200, 200)
    widest = io.BytesIO()
    Image.new("RGB", (65500, 1), (9, 90, 200)).save(widest, format="JPEG")
    at_limit = encode_image(widest.getvalue(), encode_settings(reencode="always"))
    assert at_limit.storage == STORAGE_CODES["reencoded:always"], "65,500 still fits a JPEG"
    assert format_version_of([0, 1, 8]) == 1 and format_version_of([]) == 1
    assert format_version_of([0, STORAGE_CODES["reencoded:png-too-large-for-jpeg"]]) == 2


# -- folder links that lead back ----------------------------------------------------------------------


def test_a_class_folder_linked_to_another_is_refused_naming_it(tmp_path: Path) -> None:
    for name in ("a", "c"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "x.jpg").write_bytes(jpeg_bytes(0))
    (tmp_path / "b").symlink_to("a")  # the same images under a second class
    with pytest.raises(FolderLinkError) as raised:
        scan_folder(str(tmp_path), {})
    assert f"  {tmp_path}/b -> a: leads to {tmp_path}/a, already read\n" in str(raised.value)
    (tmp_path / "b").unlink()
    (tmp_path / "b").symlink_to(tmp_path / "c" / "..")  # ... or into the tree above it: the same fault
    with pytest.raises(FolderLinkError, match="folder link"):
        scan_folder(str(tmp_path), {})
    (tmp_path / "b").unlink()
    (tmp_path / "A").symlink_to("c")  # walked before c (upper case sorts first): still the link is named
    with pytest.raises(FolderLinkError) as raised:
        scan_folder(str(tmp_path), {})
    assert f"  {tmp_path}/A -> c: leads to {tmp_path}/c, already read\n" in str(raised.value)
    (tmp_path / "A").unlink()


def test_links_to_folders_walked_once_are_kept(tmp_path: Path) -> None:
    elsewhere = tmp_path / "store" / "a"
    elsewhere.mkdir(parents=True)
    (elsewhere / "x.jpg").write_bytes(jpeg_bytes(0))
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "a").symlink_to(elsewhere)  # a subset made of links, as many trees are
    assert [sample.path for sample in scan_folder(str(tmp_path / "tree"), {}).samples] == ["a/x.jpg"]


# -- Parquet files without image bytes -----------------------------------------------------------------


def test_parquet_footers_tell_files_of_paths_only(tmp_path: Path) -> None:
    rows = [Row(None, f"/photos/{i}.jpg", 0) for i in range(5)]
    paths_only = write_hf_parquet(tmp_path / "a.parquet", rows, ["x"], row_group_size=2)
    some = write_hf_parquet(tmp_path / "b.parquet", [*rows, Row(jpeg_bytes(0), "5.jpg", 0)], ["x"], 2)
    columns = ParquetColumns()
    infos = [file_info(str(path), columns) for path in (paths_only, some)]
    assert [info.null_images for info in infos] == [5, 5]
    with pytest.raises(ParquetSourceError) as raised:
        check_has_image_bytes(infos, columns)
    assert (
        f"1 of the 2 Parquet files hold no image bytes in any row, in column 'image':\n  {paths_only}: all 5 rows "
        "hold a file path only (the first: '/photos/0.jpg'), not the image's bytes\n"
    ) in str(raised.value)
    check_has_image_bytes(infos[1:], columns)  # some rows with bytes: the shards name the others


# -- the summary ---------------------------------------------------------------------------------------


def test_the_summary_never_prints_an_unknown_ratio(tmp_path: Path) -> None:
    paths = RunPaths(str(tmp_path / "results"), str(tmp_path / "work"))
    (tmp_path / "results").mkdir()
    report = {
        "images": 1, "classes": 1, "ok": True, "checked": {"records": 1}, "stored_bytes": 10, "source_bytes": 0,
        "stored_to_source_ratio": None, "storage": {"passthrough": 1}, "skipped": [], "source": {},
    }  # fmt: skip
    Path(paths.verify_report("train")).write_text(json.dumps(report))
    lines = split_summary("train", paths)
    assert lines[1] == "  bytes: 0.0 MB stored from 0.0 MB source"
    assert not any("None" in line for line in lines)
