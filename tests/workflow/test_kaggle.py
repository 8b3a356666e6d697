"""Kaggle's ImageNet zip (imagenet-object-localization-challenge.zip) read in place: train and val
from ILSVRC/Data/CLS-LOC/ through splits.<name>.root, val labelled by the LOC_val_solution.csv
inside the same zip; the same records as the zip unzipped, and no per-image file written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from torchvision.datasets import ImageFolder

from imagefolder_lmdb.reader import META_KEYS, LMDBDataset, close_all_envs
from support import REPO
from support.datasets import assert_same_dataset, every_key_and_value, records_and_meta
from support.kaggle import DATA, KaggleZip, make_kaggle_zip
from support.workflow import Run, executed_jobs, kill_group, run_snakemake, start_snakemake, wait_for_hold, write_config

CLASSES = 4
TRAIN_IMAGES = 24
VAL_IMAGES = 12
TEST_IMAGES = 5


@pytest.fixture(scope="module")
def kaggle(tmp_path_factory: pytest.TempPathFactory) -> KaggleZip:
    return make_kaggle_zip(tmp_path_factory.mktemp("kaggle"), CLASSES, TRAIN_IMAGES, VAL_IMAGES, TEST_IMAGES)


def kaggle_splits(source: Path, val_labels: str = "LOC_val_solution.csv", **extra: Any) -> dict[str, dict[str, Any]]:
    """The two splits of config/imagenet-kaggle.yaml, at this test's size."""
    return {
        "train": {"source": str(source), "root": f"{DATA}/train", "shards": 3, **extra},
        "val": {
            "source": str(source),
            "root": f"{DATA}/val",
            "layout": "ilsvrc-val",
            "val_labels": val_labels,
            "shards": 2,
            **extra,
        },
    }


def assert_same_records(a: Path, b: Path) -> None:
    """Same keys, values and meta, apart from where the skipped image was read (file or member)."""
    close_all_envs()
    (items_a, meta_a), (items_b, meta_b) = records_and_meta(a), records_and_meta(b)
    for meta in (meta_a, meta_b):
        for skipped in meta["stats"]["skipped"]:
            assert "truncated" in skipped.pop("reason")
    assert items_a == items_b
    assert meta_a == meta_b


def executed(output: str, rule: str) -> int:
    """How many jobs of ``rule`` a run started."""
    return sum(job.split(":", 1)[0] == rule for job in executed_jobs(output))


def run(workdir: Path, splits: dict[str, dict[str, Any]], *args: str, **sections: Any) -> Run:
    workdir.mkdir(parents=True, exist_ok=True)
    config = write_config(workdir, splits, **{"encode": {"on_error": "skip"}, **sections})
    return run_snakemake(workdir, "--configfile", str(config), *args)


@pytest.fixture(scope="module")
def in_place(kaggle: KaggleZip, tmp_path_factory: pytest.TempPathFactory) -> Path:
    workdir = tmp_path_factory.mktemp("in_place")
    run(workdir, kaggle_splits(kaggle.zip, expected_classes=CLASSES)).check()
    return workdir


def test_train_is_imagefolder_over_the_unzipped_train_folder(kaggle: KaggleZip, in_place: Path) -> None:
    reference = ImageFolder(str(kaggle.unzipped / DATA / "train"))
    ds = LMDBDataset(in_place / "results" / "train.lmdb")
    truncated = kaggle.truncated.removeprefix(f"{DATA}/train/")
    kept = [(Path(p).relative_to(reference.root).as_posix(), t) for p, t in reference.samples]
    kept = [(p, t) for p, t in kept if p != truncated]
    assert ds.classes == reference.classes == kaggle.wnids
    assert ds.samples == kept, "ImageFolder's order and labels, the truncated image left out"
    for index, (path, _) in enumerate(ds.samples):
        if ds.storage_reason(index) == "passthrough":  # valid JPEGs: the zip member's bytes, untouched
            assert ds.get_bytes(index) == (kaggle.unzipped / DATA / "train" / path).read_bytes()
    reasons = sorted(ds.storage_reason(i) for i in range(len(ds)) if ds.storage_reason(i) != "passthrough")
    assert reasons == ["reencoded:cmyk", "reencoded:grayscale", "reencoded:not-jpeg", "reencoded:not-jpeg"]


def test_truncated_member_is_skipped_and_reported(kaggle: KaggleZip, in_place: Path) -> None:
    report = json.loads((in_place / "results" / "train.verify.json").read_text())
    text = json.dumps(report)
    assert f"{kaggle.zip} member {kaggle.truncated.removeprefix(f'{DATA}/train/')}" in text, text[:2000]
    counts = json.loads((in_place / "work" / "train" / "counts.json").read_text())
    assert counts["images"] == TRAIN_IMAGES and counts["classes"] == CLASSES
    assert counts["ignored_files"] == 0, "nothing outside root is counted: test images, CSVs, annotations"
    assert counts["inside"] == f"{DATA}/train"
    close_all_envs()
    meta = json.loads(every_key_and_value(in_place / "results" / "train.lmdb")[META_KEYS["json"]])
    assert meta["source"]["inside"] == f"{DATA}/train", "the folder of the zip is part of the provenance"
    assert meta["source"]["root"] is None, "no folder holds the images: ds.root is None"


def test_val_is_labelled_by_the_csv_inside_the_zip(kaggle: KaggleZip, in_place: Path) -> None:
    val = LMDBDataset(in_place / "results" / "val.lmdb")
    train = LMDBDataset(in_place / "results" / "train.lmdb")
    assert len(val) == VAL_IMAGES
    assert val.class_to_idx == train.class_to_idx
    for path, label in val.samples:
        number = int(path.rsplit("_", 1)[1].split(".")[0])
        assert val.classes[label] == kaggle.ground_truth[number] == path.split("/")[0], path
    assert (in_place / "work" / "val" / "source" / "val_labels.csv").read_bytes() == (
        kaggle.unzipped / "LOC_val_solution.csv"
    ).read_bytes()


def test_reading_in_place_writes_no_per_image_file(in_place: Path) -> None:
    files = [p for p in (in_place / "work").rglob("*") if p.is_file()]
    assert not [p for p in files if p.suffix.lower() in (".jpeg", ".jpg", ".png")]
    # per split: source.json, made_from.json, members.jsonl, manifest, counts, 6 logs, 5 benchmark records and
    # Snakemake's timestamps of the two folder outputs (val: + its copy of LOC_val_solution.csv); per shard:
    # stamp, report, log, benchmark, progress file (its part is temp(): removed once merged)
    assert len(files) == 18 + 5 * 3 + 19 + 5 * 2, sorted(map(str, files))


@pytest.mark.parametrize("route", ["unzipped folder", "extract: true"])
def test_zip_in_place_gives_the_records_of_the_unzipped_tree(
    kaggle: KaggleZip, in_place: Path, tmp_path: Path, route: str
) -> None:
    if route == "unzipped folder":
        splits = kaggle_splits(kaggle.unzipped, val_labels=str(kaggle.unzipped / "LOC_val_solution.csv"))
    else:
        splits = kaggle_splits(kaggle.zip, extract=True)
    run(tmp_path, splits).check()
    for split in ("train", "val"):
        assert_same_records(tmp_path / "results" / f"{split}.lmdb", in_place / "results" / f"{split}.lmdb")
    roots = {split: LMDBDataset(tmp_path / "results" / f"{split}.lmdb").root for split in ("train", "val")}
    if route == "unzipped folder":  # train's files lie at root/path; val's lie flat, not in <wnid>/ folders
        assert roots == {"train": str(kaggle.unzipped / DATA / "train"), "val": None}
    else:
        assert roots == {"train": None, "val": None}, "unpacked into the work folder, deleted after success"
    if route == "extract: true":  # only the configured folder was unpacked
        unpacked = {p.relative_to(tmp_path / "work").parts[:2] for p in (tmp_path / "work").rglob("*.JPEG")}
        assert unpacked == {("train", "source"), ("val", "source")}
        assert not list((tmp_path / "work").rglob("ILSVRC2012_test_*"))


@pytest.mark.parametrize("source", ["zip", "unzipped folder"])
def test_the_whole_download_without_root_says_which_root_to_set(kaggle: KaggleZip, tmp_path: Path, source: str) -> None:
    path = kaggle.zip if source == "zip" else kaggle.unzipped
    result = run(tmp_path, {"train": {"source": str(path)}})
    assert result.returncode != 0
    assert "the image folders are test, train, val: splits, not classes" in result.output
    assert f"root: {DATA}/train for train and root: {DATA}/val for val" in result.output
    assert not (tmp_path / "results" / "train.lmdb").exists()


def test_root_the_zip_lacks_names_the_folders_it_has(kaggle: KaggleZip, tmp_path: Path) -> None:
    result = run(tmp_path, {"train": {"source": str(kaggle.zip), "root": f"{DATA}/trian"}})
    assert result.returncode != 0
    assert f"{kaggle.zip}: splits.<name>.root '{DATA}/trian' is not a folder of this source" in result.output
    assert f"its folder {DATA}/ holds the folders test, train, val" in result.output


def test_val_labels_member_the_zip_lacks_is_named(kaggle: KaggleZip, tmp_path: Path) -> None:
    result = run(tmp_path, {"val": kaggle_splits(kaggle.zip, val_labels="LOC_val_solutions.csv")["val"]})
    assert result.returncode != 0
    assert f"{kaggle.zip}: no member 'LOC_val_solutions.csv'" in result.output


def test_truncated_member_fails_its_shard_only_naming_zip_and_member(kaggle: KaggleZip, tmp_path: Path) -> None:
    splits = {"train": kaggle_splits(kaggle.zip)["train"]}
    failed = run(tmp_path, splits, "--keep-going", encode={"on_error": "fail"})
    assert failed.returncode != 0
    assert f"{kaggle.zip} member {kaggle.truncated.removeprefix(f'{DATA}/train/')}" in failed.output
    assert len(list((tmp_path / "work" / "train" / "parts").glob("*.json"))) == 2, "the other shards finished"
    again = run(tmp_path, splits, "--keep-going", encode={"on_error": "fail"})
    assert again.returncode != 0
    assert executed(again.output, "encode_shard") == 1, "only the failed shard is run again"
    assert executed(again.output, "extract") == executed(again.output, "count_check") == 0


@pytest.mark.parametrize("moment", ["extract", "encode_shard:1"])
def test_killed_run_resumes_to_the_same_records(kaggle: KaggleZip, in_place: Path, tmp_path: Path, moment: str) -> None:
    write_config(tmp_path, kaggle_splits(kaggle.zip, expected_classes=CLASSES), encode={"on_error": "skip"})
    process, marker = start_snakemake(tmp_path, hold=moment)
    wait_for_hold(marker, process)
    kill_group(process)
    run_snakemake(tmp_path, "--configfile", str(tmp_path / "config.yaml")).check()
    for split in ("train", "val"):
        close_all_envs()
        assert_same_dataset(tmp_path / "results" / f"{split}.lmdb", in_place / "results" / f"{split}.lmdb")


def test_shipped_kaggle_config_is_valid(kaggle: KaggleZip, tmp_path: Path) -> None:
    """config/imagenet-kaggle.yaml with its path pointed at the generated zip plans the run."""
    text = (REPO / "config" / "imagenet-kaggle.yaml").read_text()
    shipped = "/data/imagenet-object-localization-challenge.zip"
    assert shipped in text
    config = tmp_path / "imagenet-kaggle.yaml"
    config.write_text(text.replace(shipped, str(kaggle.zip)))
    planned = run_snakemake(tmp_path, "-n", "--configfile", str(config)).check()
    assert executed(planned.output, "encode_shard") == 16 + 2
