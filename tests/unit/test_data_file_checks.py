"""Without a merge, a data file is checked by the encode job that made it (steps/data_file.py, issue 60):
a file that does not read back as written is removed and named; the split's verify job then opens no data
file of revision 1 as a file again (verify/revisions.py), unless asked to check every record."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from imagefolder_lmdb.reader import close_all_envs
from imagefolder_lmdb.steps.data_file import CHECKED_RECORDS, check_data_file, checked_records
from imagefolder_lmdb.steps.merge import MergeError
from imagefolder_lmdb.verify import revisions
from imagefolder_lmdb.writing.first_revision import first_revision
from support.split_files import split_file


def jpeg(shade: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (1, 1), (shade, 0, 0)).save(buffer, format="JPEG")
    return buffer.getvalue()


def images(names: list[str]) -> dict[str, bytes]:
    """1x1 JPEGs, as split_file's meta sizes them."""
    return {name: jpeg(10 * shade) for shade, name in enumerate(names)}


def test_a_data_file_that_reads_back_is_kept(tmp_path: Path, fresh_envs: None) -> None:
    path = split_file(tmp_path / "00000.lmdb", images(["a/0.jpg", "b/0.jpg"]), ["a", "b"])
    check_data_file(str(path))
    assert path.is_file()


def test_a_data_file_that_does_not_read_back_is_removed_naming_why(tmp_path: Path, fresh_envs: None) -> None:
    samples = images(["a/0.jpg", "b/0.jpg"]) | {"b/1.jpg": b"not a jpeg at all"}  # its CRC-32 right
    path = split_file(tmp_path / "00000.lmdb", samples, ["a", "b"])
    with pytest.raises(MergeError, match=r"00000\.lmdb: the data file just written does not read back") as caught:
        check_data_file(str(path))
    assert "record 2 (b/1.jpg): does not decode" in str(caught.value)
    assert not path.exists()


@pytest.mark.parametrize(("shards", "each"), [(1, 64), (4, 16), (5, 13), (16, 8), (100, 8)])
def test_the_split_s_sample_is_shared_by_its_data_files(shards: int, each: int) -> None:
    """As many records decoded over the split's files as verify decodes of a one-file split (64), and a
    few of every file however many there are."""
    assert CHECKED_RECORDS == 64
    assert checked_records(shards) == each


def test_a_data_file_checks_its_share_of_the_sample(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_envs: None
) -> None:
    from imagefolder_lmdb.verify import checks

    asked: list[int] = []
    verify_file = checks.verify_file

    def counted(path: str, sample: int, *args: Any) -> Any:
        asked.append(sample)
        return verify_file(path, sample, *args)

    monkeypatch.setattr(checks, "verify_file", counted)
    path = split_file(tmp_path / "00000.lmdb", images(["a/0.jpg", "b/0.jpg"]), ["a", "b"])
    check_data_file(str(path), shards=4)
    assert asked == [16]


@pytest.fixture
def split(tmp_path: Path) -> Path:
    """A split of two data files, as write_pointer makes it."""
    files = [
        split_file(tmp_path / "00000.lmdb", images(["a/0.jpg", "a/1.jpg"]), ["a", "b"]),
        split_file(tmp_path / "00001.lmdb", images(["b/0.jpg", "b/1.jpg"]), ["a", "b"]),
    ]
    first_revision(str(tmp_path / "out" / "train.lmdb"), [str(file) for file in files])
    return tmp_path / "out" / "train.lmdb"


@pytest.mark.parametrize(("full", "opened"), [(False, 0), (True, 2)])
def test_verify_opens_no_data_file_its_encode_job_checked(
    split: Path, full: bool, opened: int, monkeypatch: pytest.MonkeyPatch, fresh_envs: None
) -> None:
    checked: list[str] = []

    def verify_file(path: str, *args: Any) -> tuple[dict[str, Any], None, list[int]]:
        checked.append(path)
        return {"problems": []}, None, []

    monkeypatch.setattr(revisions, "verify_file", verify_file)
    report, _, indices = revisions.verify_revisions(str(split), sample=3, full=full, first_files_checked=True)
    close_all_envs()
    assert report["ok"], report["problems"]
    assert len(checked) == opened and len(report["data_files"]) == 2
    assert len(indices) == (4 if full else 3)  # the split's samples read against their CRC-32 either way
    assert report["checked"].get("files_checked_when_made", 0) == 2 - opened
