"""``convert --no-merge`` (issue 60), through the real command: each shard's job writes a data file of the
split and one step writes the pointer over them; the split reads exactly as the one-file conversion of
the same source does, sample for sample (a folder with a bad image skipped, a label file); the flags
that cannot go with it are refused before any job, each naming why. The kills at its own moments
(data-file, pointer) are tests/workflow/test_every_moment.py's "no-merge" scenario."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from imagefolder_lmdb.reader import LMDBReader
from imagefolder_lmdb.reader.handles import close_all_envs
from imagefolder_lmdb.reader.revision_format import data_folder
from support import BIN
from support.datasets import assert_same_samples
from support.label_trees import write_files, write_images

#: Three shards of a dozen images: each shard's data file, and renumbering around a skipped image.
OPTIONS = ["--split", "train", "--shards", "3", "--cores", "2", "--on-error", "skip"]


def convert(source: Path, out: Path, *options: str) -> subprocess.CompletedProcess[str]:
    command = [str(BIN / "imagefolder-lmdb"), "convert", str(source), str(out), *OPTIONS, *options]
    return subprocess.run(command, capture_output=True, text=True, check=False, cwd=out.parent)


def converted(source: Path, out: Path, *options: str) -> Path:
    done = convert(source, out, *options)
    assert done.returncode == 0, done.stderr[-3000:]
    return out / "train.lmdb"


def assert_split_of_data_files(split: Path, shards: int) -> None:
    """The split is a pointer over one data file per shard that holds a record, and nothing is left over."""
    close_all_envs()
    reader = LMDBReader(str(split), decode="bytes")
    assert reader.revision == 1
    files = sorted(Path(data_folder(str(split))).iterdir())
    assert len(files) == shards and all(file.suffix == ".lmdb" for file in files)
    assert not list(split.parent.rglob("*.incomplete")), "a temporary stayed"
    assert not list((split.parent / "work" / "train").glob("files/*")), "a shard's data file stayed in work"
    close_all_envs()
    assert_each_file_made_and_checked_by_its_encode_job(split.parent, shards)


def assert_each_file_made_and_checked_by_its_encode_job(out: Path, shards: int) -> None:
    """No job per shard besides its encode job (a process start and Snakemake's scheduling each); the verify
    job opened no data file as a file: each encode job checked its own."""
    work = out / "work"
    assert sorted(path.name for path in (work / "benchmarks").iterdir()) == [
        "count_check", "encode_shard", "extract", "verify", "write_pointer"
    ]  # fmt: skip
    assert not list((work / "train" / "parts").glob("*.lmdb*")), "a part stayed beside its data file"
    logs = sorted((work / "logs" / "encode_shard" / "train").glob("*.log"))
    assert len(logs) == shards and all(" data file of " in log.read_text() for log in logs)
    report = json.loads((out / "train.verify.json").read_text())
    assert report["checked"]["files_checked_when_made"] == shards and report["ok"]


def test_a_folder_without_merge_reads_as_its_one_file_conversion(tmp_path: Path) -> None:
    source = tmp_path / "tree" / "train"
    write_images(source, [f"{name}/{n:02d}.{'png' if n == 3 else 'jpg'}" for name in "abc" for n in range(4)])
    (source / "b" / "99-broken.jpg").write_bytes(b"\xff\xd8 not a jpeg")  # skipped: shard 1 moves up by one
    one_file = converted(source, tmp_path / "one")
    split = converted(source, tmp_path / "split", "--no-merge")
    assert_same_samples(split, one_file)
    assert_split_of_data_files(split, shards=3)


def test_a_label_file_without_merge_reads_as_its_one_file_conversion(tmp_path: Path) -> None:
    source = tmp_path / "flat" / "train"
    labels = ["cat", "dog", "cat", "bird", "dog", "cat", "bird", "dog"]
    write_images(source, [f"{n:04d}.jpg" for n in range(len(labels))])
    write_files(tmp_path, {"train.csv": "id,label\n" + "".join(f"{n:04d},{x}\n" for n, x in enumerate(labels))})
    options = ["--labels", str(tmp_path / "train.csv")]
    one_file = converted(source, tmp_path / "one", *options)
    split = converted(source, tmp_path / "split", *options, "--no-merge")
    assert_same_samples(split, one_file)
    assert_split_of_data_files(split, shards=3)


@pytest.mark.parametrize(
    ("options", "words"),
    [
        (["--keep-parts"], "keep_parts keeps the shards' parts for a later merge to take"),
        (["--label-separator", ";"], "several labels per image or fields"),
    ],
)
def test_what_no_merge_cannot_do_is_refused_naming_why(tmp_path: Path, options: list[str], words: str) -> None:
    source = tmp_path / "flat" / "train"
    write_images(source, ["0000.jpg", "0001.jpg", "0002.jpg"])
    write_files(tmp_path, {"train.csv": "id,label\n0000,a;b\n0001,a\n0002,b\n"})
    refused = convert(source, tmp_path / "out", "--labels", str(tmp_path / "train.csv"), "--no-merge", *options)
    assert refused.returncode != 0
    assert words in refused.stderr and "Traceback" not in refused.stderr, refused.stderr[-3000:]
    assert not (tmp_path / "out" / "train.lmdb").exists()
