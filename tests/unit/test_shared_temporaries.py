"""The $TMPDIR clean-up removes only this host's folders whose owner is gone (issue 57): a PID now
used by a later process counts as gone, a live owner's folder and every look-alike stay."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from imagefolder_lmdb.run import shared_temporaries

DEAD = 4194301  # above the kernel's largest PID (2**22)


def made(scratch: Path, pid: int, owner: dict[str, object] | None, suffix: str = "abcd1234") -> Path:
    folder = scratch / f"{shared_temporaries.own_prefix().rsplit('.', 2)[0]}.{pid}.{suffix}"
    folder.mkdir()
    if owner is not None:
        (folder / shared_temporaries.MARKER).write_text(json.dumps(owner))
    return folder


def test_a_dead_owners_folder_goes_and_a_live_ones_stays(tmp_path: Path) -> None:
    dead = made(tmp_path, DEAD, shared_temporaries.owner_record(DEAD) | {"pid": DEAD})
    live = made(tmp_path, os.getpid(), shared_temporaries.owner_record(os.getpid()))
    shared_temporaries.clear_abandoned_temporaries(str(tmp_path))
    assert not dead.exists() and live.exists()


def test_a_reused_pid_counts_as_gone(tmp_path: Path) -> None:
    """The number is alive, but its process started after the folder's owner did."""
    record = shared_temporaries.owner_record(os.getpid())
    assert isinstance(record["started"], int)
    reused = made(tmp_path, os.getpid(), record | {"started": record["started"] - 1})
    shared_temporaries.clear_abandoned_temporaries(str(tmp_path))
    assert not reused.exists()


@pytest.mark.parametrize(
    "owner",
    [None, {"host": "node-17", "pid": DEAD}, {"host": "x", "pid": "4194301"}, ["not", "an", "object"]],
    ids=["no marker", "another host", "a pid as text", "not an object"],
)
def test_a_folder_whose_marker_does_not_name_this_host_and_pid_stays(tmp_path: Path, owner: object) -> None:
    folder = made(tmp_path, DEAD, None)
    if owner is not None:
        (folder / shared_temporaries.MARKER).write_text(json.dumps(owner))
    shared_temporaries.clear_abandoned_temporaries(str(tmp_path))
    assert folder.exists()


def test_a_symlink_of_our_shape_is_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / shared_temporaries.MARKER).write_text(json.dumps(shared_temporaries.owner_record(DEAD)))
    link = tmp_path / f"{shared_temporaries.own_prefix().rsplit('.', 2)[0]}.{DEAD}.abcd1234"
    link.symlink_to(target)
    shared_temporaries.clear_abandoned_temporaries(str(tmp_path))
    assert link.is_symlink() and (target / shared_temporaries.MARKER).exists()


def test_the_host_label_keeps_names_to_one_shape() -> None:
    assert shared_temporaries.host_label("gpu01.cluster.example") == "gpu01_cluster_example"
