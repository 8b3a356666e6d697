"""A folder source changed after a run (issue 31), its parts kept (keep_parts): an image replaced
under its name by ``mv`` is seen by the same command, which encodes again only the shards holding
that class folder's images, and whose result then equals a clean run on the new tree."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from imagefolder_lmdb.reader import LMDBDataset
from imagefolder_lmdb.work.files import shard_range
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
    assert "Nothing to be done" not in again.run.output
    jobs = executed_jobs(again.run.output)
    encoded = sorted(job.rsplit("=", 1)[1] for job in jobs if job.startswith("encode_shard"))
    assert encoded == shards_holding(LMDBDataset(first.lmdb), cls.name), jobs
    assert {"extract", "count_check", "merge", "write_meta", "verify"} <= set(jobs)
    clean = convert(tmp_path / "clean", tree_copy)
    clean.run.check()
    ours, theirs = LMDBDataset(again.lmdb), LMDBDataset(clean.lmdb)
    assert ours.samples == theirs.samples
    paths = [os.path.join(ours.root, path) for path, _ in ours.samples]
    assert ours.get_bytes(paths.index(str(old))) == old.read_bytes()  # the new image, stored as it is
    assert all(ours.get_bytes(i) == theirs.get_bytes(i) for i in range(len(theirs)))
    for field in ("image_sizes", "checksums", "storage_codes"):
        assert np.array_equal(getattr(ours, field), getattr(theirs, field)), field


def shards_holding(ds: LMDBDataset, class_name: str) -> list[str]:
    """The shards whose slice of the dataset holds an image of ``class_name`` (fewer than all of them)."""
    label = ds.class_to_idx[class_name]
    indices = [index for index, target in enumerate(ds.targets) if target == label]
    ranges = [shard_range(len(ds), SHARDS, shard) for shard in range(SHARDS)]
    holding = [f"{n:05d}" for n, (start, stop) in enumerate(ranges) if start <= indices[-1] and indices[0] < stop]
    assert 0 < len(holding) < SHARDS
    return holding
