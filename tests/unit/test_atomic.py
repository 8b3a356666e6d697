"""The one atomic-output helper (src/imagefolder_lmdb/writing/): a file is at its final path whole
or not at all, flushed to disk before the rename and the folder after it; any failure leaves the
final path as it was and no temporary behind."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from imagefolder_lmdb.board.rule_runner import explain
from imagefolder_lmdb.writing.atomic import atomic_file, write_json_atomic


def test_a_finished_block_publishes_the_file_and_flushes_it_and_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    flushed: list[str] = []
    fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        flushed.append(os.readlink(f"/proc/self/fd/{fd}"))
        fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    final = tmp_path / "results" / "train.verify.json"  # its folder is made too
    with atomic_file(str(final), encoding="utf-8") as stream:
        stream.write("whole\n")
        assert not final.exists(), "nothing at the final path while it is written"
    assert final.read_text(encoding="utf-8") == "whole\n"
    assert os.listdir(final.parent) == [final.name]
    temporary, folder = flushed
    assert temporary.startswith(f"{final}.") and temporary.endswith(".incomplete")
    assert folder == str(final.parent)


@pytest.mark.parametrize("failure", [ValueError("the writer's own error"), KeyboardInterrupt()])
def test_a_failed_block_leaves_the_old_file_and_no_temporary(tmp_path: Path, failure: BaseException) -> None:
    final = tmp_path / "counts.json"
    write_json_atomic(str(final), {"images": 1})
    with pytest.raises(type(failure)), atomic_file(str(final), encoding="utf-8") as stream:
        stream.write('{"images": 2, "cut')
        raise failure
    assert final.read_text(encoding="utf-8") == '{\n "images": 1\n}\n'
    assert os.listdir(tmp_path) == ["counts.json"]


def test_a_full_disk_names_the_output_it_was_writing(tmp_path: Path) -> None:
    final = tmp_path / "train.classes.png"
    with pytest.raises(OSError) as caught, atomic_file(str(final), "wb"):
        raise OSError(errno.ENOSPC, "No space left on device")  # as a write or a flush raises it: no file named
    assert caught.value.filename == str(final)
    assert explain(caught.value).startswith(
        f"no space left on the device while writing {final} (the file system mounted at "
    )
    assert os.listdir(tmp_path) == []
