"""The sample readers behind sources/base.py's SampleReader, on their own: each kind's reader reads
the bytes its locations name and says where they lie; a manifest without a recorded kind (an
earlier version's) is read as the kinds of that time read it; a location of another kind, or a kind
this version does not know, stops with a message, never read as a bad image."""

from __future__ import annotations

import tarfile
import zipfile
from pathlib import Path

import pytest

from imagefolder_lmdb.sources import UnknownSourceKindError, open_sample_reader
from imagefolder_lmdb.sources.archive_members import index_tar, index_zip
from imagefolder_lmdb.sources.folder import FileReader
from imagefolder_lmdb.sources.indexed_archive import TarReader, ZipReader
from imagefolder_lmdb.work.files import ManifestHeader
from imagefolder_lmdb.work.source_locations import FileLocation, LocationKindError, TarLocation
from imagefolder_lmdb.writing.reencode import UNUSABLE_IMAGE
from support.images import jpeg_bytes

IMAGES = {"cls/a.JPEG": jpeg_bytes(1), "cls/b.JPEG": jpeg_bytes(2)}


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same two images as a folder, a tar and a zip."""
    folder = tmp_path_factory.mktemp("sources")
    for name, data in IMAGES.items():
        (folder / "tree" / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / "tree" / name).write_bytes(data)
    with tarfile.open(folder / "images.tar", "w") as tar:
        tar.add(folder / "tree" / "cls", arcname="cls")
    with zipfile.ZipFile(folder / "images.zip", "w") as zf:
        for name, data in IMAGES.items():
            zf.writestr(name, data)
    return folder


def header(root: Path, containers: list[Path], kind: str) -> ManifestHeader:
    return ManifestHeader(str(root), ["cls"], len(IMAGES), [str(c) for c in containers], kind)


@pytest.mark.parametrize("kind", ["folder", ""])
def test_files_are_read_under_the_root(sources: Path, kind: str) -> None:
    reader = open_sample_reader(header(sources / "tree", [], kind))
    assert type(reader) is FileReader
    assert reader.read("cls/a.JPEG", None) == IMAGES["cls/a.JPEG"]
    assert reader.read("val/b.JPEG", FileLocation("cls/b.JPEG")) == IMAGES["cls/b.JPEG"]  # a val image
    assert reader.describe("cls/a.JPEG", None) == str(sources / "tree" / "cls" / "a.JPEG")
    assert reader.source_size("cls/a.JPEG", None) == len(IMAGES["cls/a.JPEG"])
    assert reader.source_size("cls/gone.JPEG", None) == 0, "reading it says why"


@pytest.mark.parametrize(
    ("archive", "kind", "reader_type"), [("images.tar", "index", TarReader), ("images.zip", "", ZipReader)]
)
def test_archive_members_are_read_in_place(sources: Path, archive: str, kind: str, reader_type: type) -> None:
    path = sources / archive
    members = index_tar(str(path)) if archive.endswith(".tar") else index_zip(str(path))
    located = {m.path: m.location for m in members if not m.is_folder}
    reader = open_sample_reader(header(sources, [path], kind))
    assert type(reader) is reader_type
    for name, data in IMAGES.items():
        assert reader.read(name, located[name]) == data
        assert reader.source_size(name, located[name]) == len(data)
        assert reader.describe(name, located[name]) == f"{path} member {name}"
    reader.close()


def test_a_location_of_another_kind_is_named_and_is_no_bad_image(sources: Path) -> None:
    reader = open_sample_reader(header(sources, [sources / "images.tar"], "index"))
    with pytest.raises(
        LocationKindError, match=r"cls/a\.JPEG: the split's work folder locates this sample as"
    ) as caught:
        reader.read("cls/a.JPEG", FileLocation("cls/a.JPEG"))
    assert "Delete the split's folder under `work`" in str(caught.value)
    assert not isinstance(caught.value, UNUSABLE_IMAGE), "not skipped as a bad image"
    with pytest.raises(LocationKindError):
        FileReader(str(sources)).read("cls/a.JPEG", TarLocation(0, 0, 1))


def test_a_kind_this_version_does_not_read_is_named(sources: Path) -> None:
    with pytest.raises(UnknownSourceKindError, match="of kind 'hdf5', which this version does not read") as caught:
        open_sample_reader(header(sources, [], "hdf5"))
    assert not isinstance(caught.value, UNUSABLE_IMAGE)
