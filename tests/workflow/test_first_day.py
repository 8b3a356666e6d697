"""A labelled dataset's first day (issue 59), through the real command: a multi-label dataset with
fields batched by the documented collate; where ``-- --report`` writes; a dry run that writes
nothing; ``verify`` of several datasets; the plan's image count, the images the run converts."""

from __future__ import annotations

import json
import os
import subprocess
from functools import partial
from pathlib import Path

import pytest
import torch
from torch.utils.data import DataLoader

from imagefolder_lmdb import LMDBDataset, collate_label_lists
from support import BIN
from support.label_trees import write_files, write_images

#: Each split's images, by class; "notes.txt", ".DS_Store" and "Thumbs.db" beside them are no images,
#: and an image in a subfolder of a class folder is one (ImageFolder walks class folders).
TREE = {
    "train": ["cat/0.jpg", "cat/1.jpg", "cat/2.jpg", "dog/0.jpg", "dog/1.jpg", "dog/more/2.jpg"],
    "val": ["cat/0.jpg", "dog/0.jpg"],
}
NOT_IMAGES = {"train/cat/notes.txt": "a note", "train/dog/.DS_Store": b"\0\1", "val/cat/Thumbs.db": b"\0"}


def imagefolder_lmdb(*arguments: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The installed command, run from ``cwd`` as a user would."""
    command = [str(BIN / "imagefolder-lmdb"), *map(str, arguments)]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, check=False, cwd=cwd)


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``data/{train,val}`` with files that are no images, converted into ``out`` from the folder above."""
    root = tmp_path_factory.mktemp("first-day")
    for split, paths in TREE.items():
        write_images(root / "data" / split, paths)
    write_files(root / "data", NOT_IMAGES)
    done = imagefolder_lmdb("convert", "data", "out", "--cores", "1", cwd=root)
    assert done.returncode == 0, done.stderr[-3000:]
    (root / "first-run.txt").write_text(done.stdout + done.stderr)
    return root


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every file and folder under ``root``: its size and modification time."""
    found = {}
    for where, folders, files in os.walk(root):
        for name in [*folders, *files]:
            info = os.lstat(os.path.join(where, name))
            found[os.path.relpath(os.path.join(where, name), root)] = (info.st_size, info.st_mtime_ns)
    return found


def test_a_multi_label_dataset_with_fields_batches_with_the_documented_collate(tmp_path: Path) -> None:
    tags = [["sky", "sea"], [], ["tree"], ["sea"], ["sky", "tree", "sea"]]
    paths = write_images(tmp_path / "photos", [f"p{n}.jpg" for n in range(len(tags))])
    rows = [
        {"file_name": path, "label": labels, "aesthetic": 4 + n / 2, "source": f"camera {n}"}
        for n, (path, labels) in enumerate(zip(paths, tags, strict=True))
    ]
    write_files(tmp_path / "photos", {"metadata.jsonl": "".join(json.dumps(row) + "\n" for row in rows)})
    done = imagefolder_lmdb("convert", "photos", "out", "--labels", "metadata", "--cores", "1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    dataset = LMDBDataset(
        str(tmp_path / "out" / "train.lmdb"),
        transform=lambda image: torch.zeros(1),
        target_type=["label", "aesthetic", "source"],
    )
    classes = dataset.classes
    loader = DataLoader(dataset, batch_size=3, collate_fn=partial(collate_label_lists, num_classes=len(classes)))
    batches = list(loader)
    assert [tuple(images.shape) for images, _ in batches] == [(3, 1), (2, 1)]
    hot, aesthetic, source = batches[0][1]
    assert tuple(hot.shape) == (3, len(classes)) and hot.dtype == torch.float32
    assert [sorted(classes[i] for i in torch.nonzero(row).flatten().tolist()) for row in hot] == [
        sorted(labels) for labels in tags[:3]
    ]
    assert aesthetic.tolist() == [4.0, 4.5, 5.0] and source == ["camera 0", "camera 1", "camera 2"]
    lists, *_ = next(iter(DataLoader(dataset, batch_size=2, collate_fn=collate_label_lists)))[1]
    assert lists == dataset.targets[:2]  # without num_classes: the lists, as before


def test_the_plan_counts_the_images_the_run_converts(converted: Path) -> None:
    output = (converted / "first-run.txt").read_text()
    assert f"train: 1 shard for {len(TREE['train'])} images" in output, output
    assert f"val: 1 shard for {len(TREE['val'])} images" in output, output
    assert f"train: {len(TREE['train'])}/{len(TREE['train'])} images" in output, output


def test_a_dry_run_writes_nothing(converted: Path, tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    os.symlink(converted / "data", fresh / "data")
    for folder, options, words in [
        (fresh, ["--", "--dry-run"], "This was a dry-run"),
        (converted, ["--", "-n"], "Nothing to be done"),
    ]:
        before = snapshot(folder)
        done = imagefolder_lmdb("convert", "data", "out", "--cores", "1", *options, cwd=folder)
        assert done.returncode == 0 and words in done.stderr, done.stderr[-3000:]
        assert snapshot(folder) == before, options
    before = snapshot(converted)  # --overwrite's old dataset and --clean's work folder are kept too
    options = ["--quality", "80", "--overwrite", "--clean", "--", "--dry-run"]
    done = imagefolder_lmdb("convert", "data", "out", "--cores", "1", *options, cwd=converted)
    assert done.returncode == 0 and "rule encode_shard" in done.stderr, done.stderr[-3000:]
    assert snapshot(converted) == before


def test_report_after_the_separator_is_written_where_the_caller_is(converted: Path, tmp_path: Path) -> None:
    caller = tmp_path / "caller"
    caller.mkdir()
    done = imagefolder_lmdb("convert", converted / "data", converted / "out", "--", "--report", "r.html", cwd=caller)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (caller / "r.html").stat().st_size > 0 and not list((converted / "out").rglob("r.html"))
    dataset = snapshot(converted / "out")["train.lmdb"]
    options = ["--quality", "80", "--overwrite", "--", "--list-rules"]  # Snakemake makes no dataset: kept
    done = imagefolder_lmdb("convert", converted / "data", converted / "out", *options, cwd=caller)
    assert done.returncode == 0 and snapshot(converted / "out")["train.lmdb"] == dataset, done.stderr[-3000:]
    for option, words in [
        (["--directory", "elsewhere"], "Snakemake's --directory after --: convert runs Snakemake in the work folder"),
        (["--stats", "s.json"], "Snakemake 9 has no --stats"),
        (["-s", "Snakefile"], "Snakemake's -s (--snakefile) after --: convert runs the workflow it ships"),
    ]:
        refused = imagefolder_lmdb("convert", converted / "data", converted / "out", "--", *option, cwd=caller)
        assert refused.returncode == 2 and words in refused.stderr.splitlines()[-1], refused.stderr
    assert sorted(os.listdir(caller)) == ["r.html"]


def test_verify_takes_several_datasets(converted: Path) -> None:
    train, val = converted / "out" / "train.lmdb", converted / "out" / "val.lmdb"
    done = imagefolder_lmdb("verify", train, val, cwd=converted)
    assert done.returncode == 0, done.stderr
    assert [line.split(":")[0] for line in done.stdout.splitlines()] == [f"OK {train}", f"OK {val}"]
    refused = imagefolder_lmdb("verify", train, val, "--report", "r.json", cwd=converted)
    assert refused.returncode == 2 and "--report and --contact are one file's, and 2 paths" in refused.stderr
    assert not (converted / "r.json").exists()
