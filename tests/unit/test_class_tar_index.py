"""sources/class_tar_index.py: class tars listed by several processes as by one, errors included."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from imagefolder_lmdb.sources import class_tar_index, indexed_archive
from imagefolder_lmdb.sources.archive_members import DamagedArchiveError, UnsafeArchiveError, class_tars_in
from imagefolder_lmdb.sources.class_tar_index import TarSpan, contiguous_runs, index_tar_of_tars
from imagefolder_lmdb.sources.indexed_archive import class_tar_files_members, index_archives
from imagefolder_lmdb.work.files import Member

QUIET = {"disable": True}


def tar_bytes(members: list[tuple[str, bytes]], folder: str | None = None) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as tar:
        if folder is not None:
            info = tarfile.TarInfo(folder)
            info.type = tarfile.DIRTYPE
            tar.addfile(info)
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def class_tar(wnid: str, count: int) -> bytes:
    return tar_bytes([(f"{wnid}_{i}.JPEG", wnid.encode() * (i + 1)) for i in range(count)])


def train_tar(path: Path, inner: dict[str, bytes]) -> str:
    """A tar of class tars (ILSVRC2012_img_train.tar's layout)."""
    with tarfile.open(path, "w") as outer:
        for wnid, data in inner.items():
            info = tarfile.TarInfo(f"{wnid}.tar")
            info.size = len(data)
            outer.addfile(info, io.BytesIO(data))
    return str(path)


def classes(count: int) -> dict[str, bytes]:
    return {f"n{number:08d}": class_tar(f"n{number:08d}", 3 + number) for number in range(count)}


def indexed(archive: str, workers: int) -> list[Member]:
    return list(index_tar_of_tars(archive, class_tars_in(archive), 0, QUIET, workers))


def children_started(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the children the listing forks."""
    started: list[int] = []
    start = class_tar_index.start_child

    def counting(run: list[TarSpan]) -> object:
        started.append(len(run))
        return start(run)

    monkeypatch.setattr(class_tar_index, "start_child", counting)
    return started


def test_class_tars_are_listed_by_several_processes_as_by_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    inner = classes(7)
    inner["n00000003"] = tar_bytes([("a.JPEG", b"1")], folder="sub/")  # not all plain files: tarfile lists it
    archive = train_tar(tmp_path / "train.tar", inner)
    one = indexed(archive, 1)
    started = children_started(monkeypatch)
    assert indexed(archive, 3) == one
    assert len(started) == 2 and sum(started) < 7  # the parent lists the first run itself
    assert [m.path for m in one[:3]] == ["n00000000", "n00000000/n00000000_0.JPEG", "n00000000/n00000000_1.JPEG"]


def damaged(data: bytes) -> bytes:
    """``data`` with its second member header's name changed: the checksum no longer holds."""
    changed = bytearray(data)
    changed[512 + 512 + 3] ^= 0xFF  # the first member holds one block of data
    return bytes(changed)


@pytest.mark.parametrize(
    ("last", "error"),
    [
        (damaged(class_tar("n00000005", 4)), DamagedArchiveError),
        (tar_bytes([("fine.JPEG", b"1"), ("../escape.JPEG", b"2")]), UnsafeArchiveError),
        (class_tar("n00000005", 4)[: 4 * 1024 + 512], DamagedArchiveError),  # one end-of-archive block of two
    ],
    ids=["bad-checksum", "unsafe-name", "cut-end"],
)
def test_a_problem_in_a_childs_tar_is_named_as_one_process_names_it(
    tmp_path: Path, last: bytes, error: type[Exception]
) -> None:
    inner = classes(5)
    inner["n00000005"] = last
    archive = train_tar(tmp_path / "train.tar", inner)
    with pytest.raises(error) as alone:
        indexed(archive, 1)
    with pytest.raises(error) as shared:
        indexed(archive, 2)
    assert str(shared.value) == str(alone.value)
    assert "n00000005.tar" in str(alone.value)


def test_a_child_that_dies_has_its_tars_listed_by_the_parent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = train_tar(tmp_path / "train.tar", classes(6))
    one = indexed(archive, 1)
    parent, listing = os.getpid(), class_tar_index.checked_listing

    def dying(span: TarSpan) -> object:
        if os.getpid() != parent:
            os._exit(9)  # as a child killed for its memory
        return listing(span)

    monkeypatch.setattr(class_tar_index, "checked_listing", dying)
    assert indexed(archive, 2) == one


def test_a_folder_of_class_tars_is_listed_by_several_processes_as_by_one(tmp_path: Path) -> None:
    containers = []
    for wnid, data in classes(5).items():
        (tmp_path / f"{wnid}.tar").write_bytes(data)
        containers.append(str(tmp_path / f"{wnid}.tar"))
    (tmp_path / "n00000002.tar").write_bytes(tar_bytes([("x.JPEG", b"1")], folder="sub/"))  # by index_tar
    assert class_tar_files_members(containers, 3) == class_tar_files_members(containers, 1)


def test_runs_are_contiguous_and_of_nearly_equal_size() -> None:
    spans = [TarSpan("t", number, size) for number, size in enumerate([10, 10, 10, 10, 40, 20])]
    runs = contiguous_runs(spans, 3)
    assert [span for run in runs for span in run] == spans
    assert [sum(span.size for span in run) for run in runs] == [40, 40, 20]
    assert contiguous_runs(spans[:1], 4) == [spans[:1]] and contiguous_runs([], 2) == []


def index_both_ways(tmp_path: Path, archive: str, monkeypatch: pytest.MonkeyPatch, **kwargs: object) -> list[object]:
    """Whether the workers' rows were used, then members.jsonl and the description of ``archive``
    indexed that way and the general way."""
    found: list[object] = []
    by_rows = indexed_archive.index_by_rows

    def noting(*args: object, **kw: object) -> object:
        result = by_rows(*args, **kw)  # type: ignore[arg-type]
        found.append(result is not None)
        return result

    monkeypatch.setattr(indexed_archive, "index_by_rows", noting)
    for way in ("rows", "general"):
        if way == "general":
            monkeypatch.setattr(indexed_archive, "index_by_rows", lambda *args, **kw: None)
        building = tmp_path / way
        building.mkdir()
        description = index_archives(archive, [archive], "ilsvrc-train", str(building), QUIET, workers=2, **kwargs)  # type: ignore[arg-type]
        found.append(((building / "members.jsonl").read_bytes(), description))
    return found


@pytest.mark.parametrize(
    "unusual",
    ["none", "folder member", "class tar twice", "__MACOSX class", "./ class", "name twice", "class list"],
)
def test_rows_written_by_the_workers_are_the_general_ways(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unusual: str
) -> None:
    inner = {name: data for name, data in classes(5).items()}
    inner["n00000001"] = tar_bytes([('é "q".JPEG', b"1"), ("notes.txt", b"2"), ("caf\udce9.JPEG", b"3")])
    kwargs: dict[str, object] = {}
    if unusual == "folder member":
        inner["n00000002"] = tar_bytes([("a.JPEG", b"1")], folder="sub/")
    elif unusual == "__MACOSX class":
        inner["__MACOSX"] = class_tar("x", 2)
    elif unusual == "./ class":
        inner = {f"./{name}": data for name, data in inner.items()}
    elif unusual == "name twice":
        inner["n00000003"] = tar_bytes([("a.JPEG", b"1"), ("a.JPEG", b"2")])
    elif unusual == "class list":
        kwargs["wanted"] = frozenset({"n00000001", "n00000004"})
    archive = train_tar(tmp_path / "train.tar", inner)
    if unusual == "class tar twice":  # the same class tar name twice: the later copy is used, as unpacking does
        with tarfile.open(archive, "a") as outer:
            data = class_tar("n00000000", 2)
            info = tarfile.TarInfo("n00000000.tar")
            info.size = len(data)
            outer.addfile(info, io.BytesIO(data))
    used_rows, rows, general = index_both_ways(tmp_path, archive, monkeypatch, **kwargs)
    assert rows == general
    assert used_rows == (unusual in ("none", "class list"))  # anything unusual goes the general way
