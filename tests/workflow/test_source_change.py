"""A folder source changed after a run (issue 31), its parts kept (keep_parts): an image replaced
under its name by ``mv`` is seen by the same command, which writes the split's next revision holding
that image alone (issue 58), and whose result then equals a clean run on the new tree."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from imagefolder_lmdb.reader import LMDBDataset
from support.images import jpeg_bytes
from support.workflow import convert, executed_jobs

SHARDS = 6

pytestmark = pytest.mark.usefixtures("fresh_envs")  # the tests open their files afresh


@pytest.mark.slow  # three conversions, a minute or more: handed out early (support/scheduling.py)
def test_image_moved_over_another_is_converted_again(tree_copy: Path, tmp_path: Path) -> None:
    first = convert(tmp_path / "run", tree_copy, shards=SHARDS, keep_parts=True)
    first.run.check()
    cls = sorted(tree_copy.iterdir())[2]
    old = sorted(cls.iterdir())[1]
    new = tmp_path / "new.jpg"
    new.write_bytes(jpeg_bytes(seed=99, size=(64, 48)))
    os.replace(new, old)  # `mv new.jpg cls/old.jpg`: the name stays, the file is another
    again = convert(tmp_path / "run", tree_copy, shards=SHARDS, keep_parts=True)
    again.run.check()
    assert "train: revision 2: 1 added, 0 relabelled, 1 removed (1 of them replaced" in again.run.output
    assert set(executed_jobs(again.run.output)) <= {"all"}, (
        "a change runs no job: the workflow's main process writes it"
    )
    clean = convert(tmp_path / "clean", tree_copy)
    clean.run.check()
    ours, theirs = LMDBDataset(again.lmdb), LMDBDataset(clean.lmdb)
    assert ours.samples == theirs.samples
    paths = [os.path.join(ours.root, path) for path, _ in ours.samples]
    assert ours.get_bytes(paths.index(str(old))) == old.read_bytes()  # the new image, stored as it is
    assert all(ours.get_bytes(i) == theirs.get_bytes(i) for i in range(len(theirs)))
    for field in ("image_sizes", "checksums", "storage_codes"):
        assert np.array_equal(getattr(ours, field), getattr(theirs, field)), field
