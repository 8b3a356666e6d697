"""sources/indexed_archive.py member_rows: members.jsonl read as work/files.py read_members reads it."""

from __future__ import annotations

from pathlib import Path

import pytest

from imagefolder_lmdb.sources import indexed_archive
from imagefolder_lmdb.sources.indexed_archive import member_rows
from imagefolder_lmdb.work.files import Member, read_members, write_members
from imagefolder_lmdb.work.source_locations import TarLocation, ZipLocation


def members() -> list[Member]:
    usual = [Member(f"n0144/n0144_{i}.JPEG", TarLocation(i % 3, 1024 + 1536 * i, 649 + i)) for i in range(40)]
    unusual = [
        Member('quote"d.JPEG', TarLocation(0, 10, 2)),  # escaped in JSON
        Member("tab\there.JPEG", TarLocation(0, 20, 2)),
        Member("back\\slash.JPEG", TarLocation(0, 30, 2)),
        Member("café/é.JPEG", TarLocation(1, 40, 2)),  # written as UTF-8, unescaped
        Member("latin1/caf\udce9.JPEG", TarLocation(1, 50, 2)),  # a surrogate-escaped byte
        Member("sparse.JPEG", TarLocation(2, 60, 9, ((0, 3), (6, 3)))),
        Member("in/a.zip.JPEG", ZipLocation(0, "in/a.zip.JPEG", 5)),
        Member("labelled.JPEG", TarLocation(0, 70, 2), 4),
    ]
    return usual[:20] + unusual + usual[20:]


@pytest.mark.parametrize("at_once", [1 << 20, 200])  # all rows in one run, or runs of a few rows
def test_rows_read_as_read_members_reads_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, at_once: int) -> None:
    monkeypatch.setattr(indexed_archive, "ROWS_AT_ONCE", at_once)
    write_members(str(tmp_path), members())
    assert member_rows(str(tmp_path)) == read_members(str(tmp_path))
    assert len(member_rows(str(tmp_path))) == 48


def test_a_row_that_is_not_json_is_refused_as_before(tmp_path: Path) -> None:
    write_members(str(tmp_path), members()[:3])
    with open(tmp_path / "members.jsonl", "a") as stream:
        stream.write('["cut.JPEG", {"tar": 0, "offset": 1\n')
    with pytest.raises(ValueError):
        member_rows(str(tmp_path))
