"""A split of many data files (issue 60, point 3), written here as ``--no-merge`` writes one (a pointer over
data files, writing/first_revision.py): opening it holds no descriptor of its data files, reading holds one
per file read, so it opens and reads under an open-file limit that three per file would exceed; a data file
replaced before its first read is still caught; a read once each file is open looks no path up (issue 58:
as fast as one file's), and after the descriptors are closed (a fork) reads check and open them again."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from imagefolder_lmdb.reader import LMDBReader, close_all_envs, handles
from imagefolder_lmdb.reader.identity import FileChangedError
from imagefolder_lmdb.reader.revision_format import data_folder
from imagefolder_lmdb.writing.first_revision import first_revision
from support.split_files import split_file

FILES = 100


def _value(number: int, record: int) -> bytes:
    return f"{number:04d}/{record}".encode() * 40


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A pointer over ``FILES`` data files of two records each, one class folder per file."""
    folder = tmp_path_factory.mktemp("many")
    classes = [f"c{number:04d}" for number in range(FILES)]
    parts = [
        split_file(
            folder / f"part{number:04d}.lmdb",
            {f"c{number:04d}/{record}.bin": _value(number, record) for record in range(2)},
            classes,
        )
        for number in range(FILES)
    ]
    pointer = folder / "train.lmdb"
    first_revision(str(pointer), [str(part) for part in parts])
    for part in parts:
        part.unlink()  # the split reads its own copies in its data folder
    return pointer


def _held(split: Path) -> int:
    """Descriptors this process holds of files in the split's data folder."""
    folder = os.path.realpath(data_folder(str(split))) + os.sep
    return sum(1 for fd in os.listdir("/proc/self/fd") if _link(fd).startswith(folder))


def _link(fd: str) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:  # the descriptor listdir read the folder with, closed since
        return ""


@contextlib.contextmanager
def _few_open_files() -> Iterator[None]:
    """This process's open-file limit lowered to what it holds now, one per data file and a margin:
    three descriptors per file (today's reader) do not fit."""
    resource = pytest.importorskip("resource")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + FILES + 40, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors in /proc (Linux)")


def test_a_split_of_many_files_opens_holding_none_and_reads_holding_one_per_file(split: Path, fresh_envs: None) -> None:
    with _few_open_files():
        ds = LMDBReader(split, decode="bytes")
        assert _held(split) == 0
        wanted = [2 * FILES - 1, 0, 2 * FILES - 2, 1, 17]  # a batch over several files
        assert [image for image, _ in ds.__getitems__(wanted)] == [_value(i // 2, i % 2) for i in wanted]
        assert [ds[i][0] for i in range(len(ds))] == [_value(i // 2, i % 2) for i in range(2 * FILES)]
        assert _held(split) == FILES
    assert ds.targets[-1] == FILES - 1 and ds.samples[17] == ("c0008/1.bin", 8)


def test_a_data_file_replaced_before_its_first_read_is_refused(split: Path, tmp_path: Path, fresh_envs: None) -> None:
    folder = Path(data_folder(str(split)))
    with _few_open_files():
        ds = LMDBReader(split, decode="bytes")
        assert ds[5][0] == _value(2, 1)
        victim = folder / os.path.basename(ds._records.files[ds._records.files_of.item(7)].path)
        saved = tmp_path / "saved.lmdb"
        os.rename(victim, saved)
        try:
            other = split_file(tmp_path / "other.lmdb", {"c0003/0.bin": b"x" * 80, "c0003/1.bin": b"y" * 80}, ["c0003"])
            os.link(other, victim)  # another file at the name, never read by this process yet
            with pytest.raises(FileChangedError, match=r"holds content .* not .* that revision=1 of .* names"):
                ds[7]
            os.remove(victim)
            os.link(saved, folder / "copy.lmdb")
            os.rename(folder / "copy.lmdb", victim)  # the same content back, this process still holding the other
            assert ds[7][0] == _value(3, 1) and ds[6][0] == _value(3, 0)
        finally:
            if not victim.exists():
                os.rename(saved, victim)


def test_a_read_looks_no_path_up_once_its_file_is_open_and_closed_descriptors_are_not_used(
    split: Path, tmp_path: Path, fresh_envs: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = LMDBReader(split, decode="bytes")
    expected = [_value(i // 2, i % 2) for i in range(2 * FILES)]
    assert [ds[i][0] for i in range(len(ds))] == expected
    with monkeypatch.context() as patched:  # every lookup of the process's table of open files goes by this
        patched.setattr(handles, "_env_key", _no_lookup)
        assert [ds[i][0] for i in range(len(ds))] == expected
        assert [image for image, _ in ds.__getitems__([3, 150, 4])] == [expected[3], expected[150], expected[4]]
        assert ds.get_bytes(199) == expected[199]
    close_all_envs()  # as before a fork: the descriptors are closed, their numbers free for other files
    others = [os.open(tmp_path, os.O_RDONLY) for _ in range(8)]  # take the lowest numbers again
    try:
        assert [ds[i][0] for i in range(len(ds))] == expected
    finally:
        for fd in others:
            os.close(fd)


def _no_lookup(path: str) -> str:
    raise AssertionError(f"a read looked {path} up in the table of open files")
