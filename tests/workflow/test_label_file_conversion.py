"""Labels beyond the folder name, converted end to end by the real command: a Kaggle-shaped folder and
its CSV in one command, Hugging Face's metadata files (a folder, a zip) equal to what ``datasets``
gives, a multi-label dataset batched as multi-hot tensors, a bad label file stopped before any job,
and an edited label file never replacing a dataset without ``--overwrite``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import torch

from imagefolder_lmdb import LMDBDataset, collate_label_lists, multi_hot
from support import BIN
from support.hf_reference import Rows, by_path, imagefolder_loader
from support.label_trees import write_files, write_images, zip_folder
from support.workflow import run_snakemake, write_config

KAGGLE_LABELS = ["cat", "dog", "cat", "bird", "dog", "cat", "bird", "dog"]


def convert(source: Path, out: Path, *options: str) -> subprocess.CompletedProcess[str]:
    command = [str(BIN / "imagefolder-lmdb"), "convert", str(source), str(out), "--split", "train", "--cores", "1"]
    return subprocess.run([*command, *options], capture_output=True, text=True, check=False, cwd=out.parent)


def kaggle_tree(root: Path) -> Path:
    """``train/`` flat of ``<id>.jpg`` and ``train.csv`` with ``id,label`` (ids without extension)."""
    write_images(root / "train", [f"{number:04d}.jpg" for number in range(len(KAGGLE_LABELS))])
    rows = [f"{number:04d},{label}" for number, label in enumerate(KAGGLE_LABELS)]
    write_files(root, {"train.csv": "id,label\r\n" + "\r\n".join(rows) + "\r\n"})  # CRLF, as Windows tools write it
    return root / "train.csv"


def test_a_kaggle_tree_converts_with_one_command(tmp_path: Path) -> None:
    labels = kaggle_tree(tmp_path)
    done = convert(tmp_path / "train", tmp_path / "out", "--labels", str(labels))
    assert done.returncode == 0, done.stderr[-3000:]
    dataset = LMDBDataset(str(tmp_path / "out" / "train.lmdb"))
    classes = sorted(set(KAGGLE_LABELS))
    assert dataset.classes == classes and dataset.class_to_idx == {name: i for i, name in enumerate(classes)}
    assert dataset.targets == [classes.index(label) for label in KAGGLE_LABELS]
    assert [path for path, _ in dataset.samples] == [f"{n:04d}.jpg" for n in range(len(KAGGLE_LABELS))]
    assert isinstance(dataset[0][1], int) and dataset.label_kind == "single"
    again = convert(tmp_path / "train", tmp_path / "out", "--labels", str(labels))
    assert again.returncode == 0 and "Nothing to convert" in again.stdout + again.stderr


def test_an_edited_label_file_is_a_change_without_overwrite(tmp_path: Path) -> None:
    """A label corrected is a change of the split (issue 58): a new revision relabels it, no image encoded."""
    labels = kaggle_tree(tmp_path)
    assert convert(tmp_path / "train", tmp_path / "out", "--labels", str(labels)).returncode == 0
    labels.write_text(labels.read_text().replace("0003,bird", "0003,cat"))
    changed = convert(tmp_path / "train", tmp_path / "out", "--labels", str(labels))
    assert changed.returncode == 0, changed.stderr[-3000:]
    assert "train: revision 2: 0 added, 1 relabelled, 0 removed" in changed.stdout + changed.stderr
    assert LMDBDataset(str(tmp_path / "out" / "train.lmdb")).targets[3] == 1  # cat
    replaced = convert(tmp_path / "train", tmp_path / "out", "--labels", str(labels), "--overwrite", "--clean")
    assert replaced.returncode == 0, replaced.stderr[-3000:]
    assert "Nothing to convert" in replaced.stdout + replaced.stderr  # up to date: --overwrite replaces nothing


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("id,lable\n0000,cat\n", "no column 'label' (did you mean 'lable'?)"),
        ("id,label\n0000,cat\n0000,dog\n", "has a row already"),
        ("id,label\n0000,\n", "is empty"),
    ],
    ids=["mistyped-column", "two-rows", "empty-label"],
)
def test_a_bad_label_file_is_one_line_naming_it(tmp_path: Path, content: str, words: str) -> None:
    write_images(tmp_path / "train", ["0000.jpg"])
    write_files(tmp_path, {"labels.csv": content})
    done = convert(tmp_path / "train", tmp_path / "out", "--labels", str(tmp_path / "labels.csv"))
    assert done.returncode != 0 and not (tmp_path / "out" / "train.lmdb").exists()
    last = done.stderr.strip().splitlines()[-1]
    assert "labels.csv" in last and words in last, done.stderr
    assert "Traceback" not in done.stderr


def hf_rows(dataset: LMDBDataset) -> Rows:
    """The dataset's rows as ``datasets`` gives them: each label as written (a list for several), the fields."""
    rows: Rows = {}
    for index, (path, target) in enumerate(dataset.samples):
        label: Any = [dataset.classes[t] for t in target] if isinstance(target, list) else dataset.classes[target]
        rows[path] = {"label": label, **dataset.fields(index)}
    return rows


def reference_trees(root: Path) -> dict[str, tuple[Path, list[str]]]:
    """Two trees as datasets' own tests build them, each with the source to convert and its options."""
    folder = root / "folder"
    write_images(folder, ["image_rgb.jpg", "image_rgb2.jpg", "subdir/image_rgb3.jpg", "subdir/ünï.png"])
    csv = "file_name,caption,label,score\nimage_rgb.jpg,Nice image,cat,1\nimage_rgb2.jpg,Second,dog,2\n"
    write_files(
        folder,
        {
            "metadata.csv": csv,
            "subdir/metadata.csv": "file_name,caption,label,score\nimage_rgb3.jpg,Third,cat,3\nünï.png,Fourth,bird,4\n",
        },
    )
    archive = root / "archive"
    write_images(archive, ["image_rgb.jpg", "subdir/image_rgb2.jpg", "image_rgb3.jpg"])
    rows = [
        {"file_name": "image_rgb.jpg", "label": ["cat", "dog"], "boxes": [0.5, 1.0]},
        {"file_name": "subdir/image_rgb2.jpg", "label": [], "boxes": []},
        {"file_name": "image_rgb3.jpg", "label": ["dog"], "boxes": [2.25]},
    ]
    write_files(archive, {"metadata.jsonl": "".join(json.dumps(row) + "\n" for row in rows)})
    (root / "zipped").mkdir()
    zip_folder(archive, root / "zipped" / "archive.zip")
    return {"folder": (folder, []), "zipped": (root / "zipped" / "archive.zip", [])}


def test_metadata_trees_convert_to_what_the_reference_gives(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    load_imagefolder = imagefolder_loader(tmp_path_factory.mktemp("hf_home"))
    for name, (source, options) in reference_trees(tmp_path / "trees").items():
        out = tmp_path / f"out-{name}"
        out.mkdir()
        done = convert(source, out, "--labels", "metadata", *options)
        assert done.returncode == 0, done.stderr[-3000:]
        reference = load_imagefolder(source.parent if source.suffix == ".zip" else source)
        theirs = by_path(reference["train"])
        assert hf_rows(LMDBDataset(str(out / "train.lmdb"))) == theirs, name


def test_a_multi_label_dataset_trains_as_multi_hot_batches(tmp_path: Path) -> None:
    """Through a config file, as snakemake runs it; the collate and multi-hot helper of the docs."""
    lists = [["cat", "dog"], [], ["bird"], ["dog"], ["cat", "bird", "dog"], ["cat"]]
    paths = write_images(tmp_path / "images", [f"img{n}.jpg" for n in range(len(lists))])
    rows = [
        {"file_name": path, "label": labels, "weight": n / 2}
        for n, (path, labels) in enumerate(zip(paths, lists, strict=True))
    ]
    write_files(tmp_path / "images", {"metadata.jsonl": "".join(json.dumps(row) + "\n" for row in rows)})
    write_config(tmp_path, {"train": {"source": str(tmp_path / "images"), "labels": "metadata", "shards": 2}})
    run_snakemake(tmp_path, "--configfile", str(tmp_path / "config.yaml")).check()
    dataset = LMDBDataset(str(tmp_path / "results" / "train.lmdb"), transform=lambda image: torch.zeros(1))
    classes = ["bird", "cat", "dog"]
    assert dataset.classes == classes and dataset.label_kind == "multi"
    expected = [[classes.index(name) for name in labels] for labels in lists]  # in the order written, as datasets
    assert dataset.targets == expected and dataset.fields(3) == {"weight": 1.5}
    loader = torch.utils.data.DataLoader(dataset, batch_size=4, collate_fn=collate_label_lists)
    batches = [multi_hot(targets, num_classes=len(classes)) for _, targets in loader]
    assert [tuple(batch.shape) for batch in batches] == [(4, 3), (2, 3)]
    hot = torch.cat(batches)
    assert [torch.nonzero(row).flatten().tolist() for row in hot] == [sorted(labels) for labels in expected]


def test_splits_share_one_class_list_and_a_label_outside_it_is_counted(tmp_path: Path) -> None:
    """val labelled by a file of its own takes train's classes; its image of a class train lacks is
    left out and counted, as an image of an outside class folder is."""
    write_images(tmp_path / "train", ["a.jpg", "b.jpg", "c.jpg"])
    write_images(tmp_path / "val", ["d.jpg", "e.jpg", "f.jpg"])
    write_files(
        tmp_path,
        {
            "train.jsonl": "".join(json.dumps({"file_name": n, "label": c}) + "\n" for n, c in ["ad", "bc", "cd"]),
            "val.csv": "file_name,label\nd.jpg,c\ne.jpg,zebra\nf.jpg,d\n",
        },
    )
    splits = {
        "train": {"source": str(tmp_path / "train"), "labels": str(tmp_path / "train.jsonl"), "shards": 1},
        "val": {"source": str(tmp_path / "val"), "labels": str(tmp_path / "val.csv"), "shards": 1},
    }
    write_config(tmp_path, splits)
    run_snakemake(tmp_path, "--configfile", str(tmp_path / "config.yaml")).check()
    train = LMDBDataset(str(tmp_path / "results" / "train.lmdb"))
    val = LMDBDataset(str(tmp_path / "results" / "val.lmdb"))
    assert train.classes == val.classes == ["c", "d"] and train.targets == [1, 0, 1]
    assert val.samples == [("d.jpg", 0), ("f.jpg", 1)]
    counts = json.loads((tmp_path / "work" / "val" / "counts.json").read_text())
    assert counts["outside_class_list"]["images"] == 1 and counts["outside_class_list"]["per_class"] == {"zebra": 1}
