"""``convert SRC s3://…/prefix --no-merge`` (issue 60, point 4), through the real command against the
session's SeaweedFS: each data file is uploaded as its job finishes, while the other shards still encode
(held at the last shard's encode: no timing), the pointer last; the prefix then reads as the local split
sample for sample. A run killed once a data object was sent leaves it unnamed and no pointer; the rerun of
a source changed meanwhile names other data files and removes it. Nothing is sent while converting for a
split whose published single file the pointer replaces only with --overwrite. The kills at each upload moment are
tests/workflow/test_every_moment.py's ``test_live_publish_at_every_moment``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from support.images import make_images
from support.interrupting import StartedCommands, wait_until_held
from support.live_publish import assert_live_published, data_objects, objects
from support.seaweed import Seaweed
from support.workflow import kill_tree

CLI = str(Path(sys.executable).with_name("imagefolder-lmdb"))


def command(source: Path, prefix: str, work: Path, shards: int) -> list[str]:
    options = ["--split", "train", "--no-merge", "--shards", str(shards), "--cores", "2"]
    return [CLI, "convert", str(source), prefix, "--work", str(work), *options]


def held(commands: StartedCommands, argv: list[str], hold: str, marker: Path) -> subprocess.Popen[str]:
    """``argv`` started and parked at ``hold``."""
    env = {**os.environ, "IMAGEFOLDER_LMDB_TEST_HOLD": hold, "IMAGEFOLDER_LMDB_TEST_HOLD_MARKER": str(marker)}
    process = commands.start(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd="/")
    wait_until_held(process, marker)
    return process


def new_prefix(seaweed: Seaweed) -> str:
    """A prefix of its own in the bucket ``datasets`` (made if missing)."""
    seaweed.put("datasets", "probe", b"")
    return f"s3://datasets/{uuid.uuid4().hex}"


def tree(folder: Path, images: int) -> Path:
    make_images(str(folder / "train"), images=images, classes=2, seed=5, workers=1)
    return folder


def test_data_files_are_uploaded_while_encoding_and_the_prefix_reads_as_the_local_split(
    s3_env: Seaweed, commands: StartedCommands, tmp_path: Path
) -> None:
    source, prefix = tree(tmp_path / "data", 8), new_prefix(s3_env)
    marker = tmp_path / "held"
    process = held(commands, command(source, prefix, tmp_path / "w", shards=2), "encode_shard:1", marker)
    deadline = time.monotonic() + 120  # shard 0's data file is sent while shard 1 is held mid-encode
    while not data_objects(f"{prefix}/train.lmdb"):
        assert process.poll() is None and marker.exists(), process.communicate()
        assert time.monotonic() < deadline, "no data file was uploaded while the last shard encoded"
        time.sleep(0.2)
    assert f"{prefix.removeprefix('s3://datasets/')}/train.lmdb" not in objects(prefix), "the pointer came first"
    marker.unlink()
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, (stdout + stderr)[-3000:]
    assert f"{prefix}/train.lmdb: " in stdout and "uploaded while converting" in stdout, stdout
    assert_live_published(prefix, tmp_path / "w")


def test_a_data_object_a_killed_run_sent_is_removed_by_the_rerun_that_no_longer_names_it(
    s3_env: Seaweed, commands: StartedCommands, tmp_path: Path
) -> None:
    source, prefix = tree(tmp_path / "data", 6), new_prefix(s3_env)
    argv, marker = command(source, prefix, tmp_path / "w", shards=2), tmp_path / "held"
    process = held(commands, argv, "encode_shard:1", marker)  # the last shard held: shard 0's file stays in reach
    deadline = time.monotonic() + 120
    while not data_objects(f"{prefix}/train.lmdb"):  # (a one-shard run could end before the helper looked)
        assert process.poll() is None and marker.exists(), process.communicate()
        assert time.monotonic() < deadline, "no data file was uploaded while the last shard encoded"
        time.sleep(0.2)
    kill_tree(process)  # a power cut once a data object is whole, the conversion going on
    [left] = data_objects(f"{prefix}/train.lmdb")
    assert list(objects(prefix)) == [left], "a pointer was published before the conversion ended"
    first = sorted((source / "train").iterdir())[0]
    image = next(first.iterdir())
    shutil.copyfile(image, first / f"added{image.suffix}")  # the source changed: the rerun makes another file
    again = subprocess.run(argv, capture_output=True, text=True, check=False, cwd="/")
    assert again.returncode == 0, (again.stdout + again.stderr)[-3000:]
    assert left not in objects(prefix), "the data object the killed run sent stayed, named by nothing"
    assert "removed 1 data object(s)" in again.stdout, again.stdout
    assert_live_published(prefix, tmp_path / "w")


@pytest.mark.slow  # three conversions: about a minute
def test_nothing_is_sent_for_a_split_whose_object_the_pointer_may_not_replace(s3_env: Seaweed, tmp_path: Path) -> None:
    """A published single file is replaced by a split of data files only with --overwrite (publish/revisions.py):
    without it, no data object is sent while converting, and the refusal is the publish's; with it, they are."""
    source, prefix = tree(tmp_path / "data", 6), new_prefix(s3_env)
    one_file = [CLI, "convert", str(source), prefix, "--work", str(tmp_path / "one"), "--split", "train"]
    assert subprocess.run(one_file, capture_output=True, text=True, check=False, cwd="/").returncode == 0
    refused = subprocess.run(
        command(source, prefix, tmp_path / "w", 2), capture_output=True, text=True, check=False, cwd="/"
    )
    assert refused.returncode == 1 and "give --overwrite" in refused.stderr, refused.stderr[-3000:]
    assert data_objects(f"{prefix}/train.lmdb") == {}, "a data object was sent that the replace rule leaves unnamed"
    argv = [*command(source, prefix, tmp_path / "w2", 2), "--overwrite"]
    replaced = subprocess.run(argv, capture_output=True, text=True, check=False, cwd="/")
    assert replaced.returncode == 0, (replaced.stdout + replaced.stderr)[-3000:]
    assert "uploaded while converting" in replaced.stdout, replaced.stdout
    assert_live_published(prefix, tmp_path / "w2")
