"""WebDataset shards (layout webdataset) as timm's imagenet-1k-wds has them, converted by the real
snakemake CLI and compared sample by sample with the webdataset library's own reading of the same
shards; errors name the shard, the sample and what to do; a kill and a rerun give the same files."""

from __future__ import annotations

import io
import json
import tarfile
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pytest
import webdataset
from PIL import Image

from imagefolder_lmdb.reader import LMDBDataset, close_all_envs
from support import REPO
from support.archives import add_member
from support.datasets import assert_same_dataset
from support.wds_shards import Shards, WdsSample, make_shards, make_wds_devkit, tree_samples, truncated, write_sample
from support.workflow import Run, kill_group, run_snakemake, start_snakemake, wait_for_hold, write_config

SHARDS = 3  # encode jobs per split
PER_SHARD = 14  # samples per tar shard: 40 images in 3 shards


@dataclass(frozen=True)
class Source:
    """Train and val shards, the devkit, and the key of the truncated train image."""

    train: Shards
    val: Shards
    devkit: Path
    truncated_key: str


@pytest.fixture(scope="module")
def source(image_tree: Path, tmp_path_factory: pytest.TempPathFactory) -> Source:
    base = tmp_path_factory.mktemp("wds")
    classes, samples = tree_samples(image_tree)
    victim = next(i for i, s in enumerate(samples) if s.image_suffix == "jpg" and s.image[:4] == b"\xff\xd8\xff\xe0")
    samples[victim] = replace(samples[victim], image=truncated(samples[victim].image))
    train = make_shards(base / "shards", classes, samples, PER_SHARD)
    # val: two of the four classes, with labels in train's numbering (no devkit of its own)
    val_samples = [replace(s, key=f"val_{s.key}") for i, s in enumerate(samples) if s.label in (1, 2) and i != victim]
    val = make_shards(base / "shards", classes, val_samples, 4, split="validation")
    devkit = make_wds_devkit(base / "ILSVRC2012_devkit_t12.tar.gz", classes, base / "scratch")
    return Source(train, val, devkit, samples[victim].key)


def splits(source: Source) -> dict:
    return {
        "train": {"source": source.train.pattern(), "layout": "webdataset", "devkit": str(source.devkit), "shards": 3},
        "val": {"source": str(source.val.folder / "imagenet1k-validation-*.tar"), "layout": "webdataset", "shards": 2},
    }


SKIP = {"encode": {"on_error": "skip"}}


@pytest.fixture(scope="module")
def converted(source: Source, tmp_path_factory: pytest.TempPathFactory) -> Path:
    workdir = tmp_path_factory.mktemp("wds-run")
    config = write_config(workdir, splits(source), **SKIP)
    run_snakemake(workdir, "--configfile", str(config)).check()
    return workdir


def plain_reading(shards: list[Path]) -> list[dict]:
    """The samples as the webdataset library yields them, in order (no shuffling, no decoding)."""
    return list(webdataset.WebDataset([str(p) for p in shards], shardshuffle=False, empty_check=False))


def rgb(data: bytes) -> np.ndarray:
    """The picture at 1/8 scale: re-encoding keeps it, not the pixel grain of the test images."""
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB").reduce(8), dtype=np.int16)


def image_of(sample: dict) -> tuple[str, bytes]:
    suffix = next(s for s in sample if s in ("jpg", "png"))
    return suffix, sample[suffix]


def test_records_are_the_samples_a_plain_reading_gives(source: Source, converted: Path) -> None:
    close_all_envs()
    ds = LMDBDataset(converted / "results" / "train.lmdb")
    reference = [s for s in plain_reading(source.train.files) if s["__key__"] != source.truncated_key]
    assert len(ds) == len(reference) == len(source.train.samples) - 1
    assert ds.classes == source.train.classes  # the devkit's sorted WNIDs
    reasons = []
    for index, sample in enumerate(reference):
        suffix, image = image_of(sample)
        label = int(sample["cls"])
        assert ds.samples[index] == (f"{ds.classes[label]}/{sample['__key__']}.{suffix}", label)
        assert ds.targets[index] == label
        reasons.append(ds.storage_reason(index))
        if reasons[-1] == "passthrough":
            assert ds.get_bytes(index) == image, sample["__key__"]
        else:  # re-encoded at quality 95: the same picture, not the same bytes
            stored, expected = rgb(ds.get_bytes(index)), rgb(image)
            difference = np.abs(stored - expected).mean()
            assert stored.shape == expected.shape and difference < 3, sample["__key__"]
    assert sorted(r for r in reasons if r != "passthrough") == [
        "reencoded:cmyk",
        "reencoded:grayscale",
        "reencoded:not-jpeg",  # the PNG named .jpg
        "reencoded:not-jpeg",  # the RGBA .png
    ]


def test_truncated_image_is_skipped_naming_its_shard_and_key(source: Source, converted: Path) -> None:
    skipped = [e for r in sorted((converted / "work" / "train" / "parts").glob("*.json")) for e in _skipped(r)]
    assert len(skipped) == 1
    shard = next(f for f in source.train.files if _holds(f, source.truncated_key))
    key = source.truncated_key
    assert skipped[0]["reason"].startswith(f"{shard}: sample {key} (member {key}.jpg): ")


def _skipped(report: Path) -> list[dict]:
    return json.loads(report.read_text())["skipped"]


def _holds(shard: Path, key: str) -> bool:
    with tarfile.open(shard) as tar:
        return f"{key}.jpg" in tar.getnames()


def test_val_without_devkit_takes_trains_class_list(source: Source, converted: Path) -> None:
    close_all_envs()
    train = LMDBDataset(converted / "results" / "train.lmdb")
    val = LMDBDataset(converted / "results" / "val.lmdb")
    assert val.classes == train.classes and val.class_to_idx == train.class_to_idx
    reference = plain_reading(sorted(source.val.files))  # the glob, sorted
    assert [int(s["cls"]) for s in reference] == val.targets
    assert [f"{s['__key__']}.{image_of(s)[0]}" for s in reference] == [p.split("/", 1)[1] for p, _ in val.samples]


@pytest.mark.parametrize("expected", [2, 4])
def test_expected_classes_counts_classes_with_images(source: Source, tmp_path: Path, expected: int) -> None:
    """val's labels can name all four of train's classes, but its samples hold two."""
    chosen = splits(source)
    chosen["val"]["expected_classes"] = expected
    config = write_config(tmp_path, chosen)
    run = run_snakemake(tmp_path, "work/val/counts.json", "--configfile", str(config))  # the listing only
    if expected == 2:
        run.check()
    else:
        missing = sorted(set(source.train.classes) - {source.train.classes[1], source.train.classes[2]})
        assert run.returncode != 0
        assert (
            "2 classes found, expected_classes is 4 [class list shared from train; "
            f"missing from this split: {', '.join(missing)}]" in run.output
        )


def test_no_per_image_file_is_written(converted: Path) -> None:
    written = [p for p in converted.rglob("*") if p.is_file()]
    outputs = {"contact.png", "classes.png"}  # the per-split figures of results/
    images = [
        p for p in written if p.suffix.lower() in (".jpg", ".jpeg", ".png") and p.name.split(".", 1)[1] not in outputs
    ]
    assert images == []
    assert len(written) < 120, "a few files per split and shard (107 today), none per image (40 more)"
    members = (converted / "work" / "train" / "source" / "members.jsonl").read_text().splitlines()
    assert len(members) == 40  # one row per sample: images are read from the shards in place


@pytest.mark.parametrize("moment", ["extract", "encode_shard:1"])
def test_same_files_after_a_kill_and_a_rerun(source: Source, converted: Path, tmp_path: Path, moment: str) -> None:
    write_config(tmp_path, splits(source), **SKIP)
    process, marker = start_snakemake(tmp_path, hold=moment)
    wait_for_hold(marker, process)
    kill_group(process)
    run_snakemake(tmp_path, "--configfile", str(tmp_path / "config.yaml")).check()
    for split in ("train", "val"):
        assert_same_dataset(tmp_path / "results" / f"{split}.lmdb", converted / "results" / f"{split}.lmdb")


# --------------------------------------------------------------------------------------------------
# Shards that stop the run, each naming the shard, the sample and what to do.
# --------------------------------------------------------------------------------------------------


def convert_shards(workdir: Path, shards: Shards, devkit: Path, *args: str, **encode: str) -> Run:
    split = {"source": shards.pattern(), "layout": "webdataset", "devkit": str(devkit), "shards": 2}
    workdir.mkdir()
    config = write_config(workdir, {"train": split}, encode=encode)
    return run_snakemake(workdir, "--configfile", str(config), *args)


def small_shards(folder: Path, source: Source) -> Shards:
    good = [s for s in source.train.samples if s.key != source.truncated_key][:8]
    return make_shards(folder, source.train.classes, good, 4)


def rewrite_last(shards: Shards, label: bytes) -> WdsSample:
    """The second shard again, its last sample with ``label`` as its .cls text; returns that sample."""
    samples = shards.samples[4:]
    with tarfile.open(shards.files[1], "w", format=tarfile.GNU_FORMAT) as tar:
        for sample in samples[:-1]:
            write_sample(tar, sample)
        write_sample(tar, samples[-1], label=label)
    return samples[-1]


@pytest.mark.parametrize(
    ("label", "advice"),
    [
        (b"", "has no .cls member, so no label"),
        (b"n01440764", "not a class number"),
        (b"7", "label 7 is outside the 4 classes of the sorted WNIDs of"),
    ],
)
def test_sample_without_a_usable_label_is_named(source: Source, tmp_path: Path, label: bytes, advice: str) -> None:
    shards = small_shards(tmp_path / "shards", source)
    sample = rewrite_last(shards, label)
    run = convert_shards(tmp_path / "run", shards, source.devkit)
    assert run.returncode != 0
    assert f"{shards.files[1]}: sample {sample.key}" in run.output
    assert advice in run.output
    assert "or remove the sample" in run.output
    assert not (tmp_path / "run" / "results" / "train.lmdb").exists()


def test_labels_without_class_names_stop_saying_what_to_set(source: Source, tmp_path: Path) -> None:
    workdir = tmp_path / "run"
    workdir.mkdir()
    config = write_config(workdir, {"train": {"source": source.val.pattern("validation"), "layout": "webdataset"}})
    run = run_snakemake(workdir, "--configfile", str(config))
    assert run.returncode != 0
    assert "its labels are integers, and nothing says which class each means. Set devkit:" in run.output


def test_a_shard_without_its_layout_says_to_set_it(source: Source, tmp_path: Path) -> None:
    shards = small_shards(tmp_path / "shards", source)
    workdir = tmp_path / "run"
    workdir.mkdir()
    config = write_config(workdir, {"train": {"source": str(shards.files[0])}})  # layout imagefolder
    run = run_snakemake(workdir, "--configfile", str(config))
    assert run.returncode != 0
    assert "its files look like WebDataset samples (key.jpg + key.cls): set layout: webdataset." in run.output


def test_shard_cut_short_is_named(source: Source, tmp_path: Path) -> None:
    shards = small_shards(tmp_path / "shards", source)
    data = shards.files[1].read_bytes()
    shards.files[1].write_bytes(data[: len(data) * 2 // 3])
    run = convert_shards(tmp_path / "run", shards, source.devkit)
    assert run.returncode != 0
    assert str(shards.files[1]) in run.output and "truncated" in run.output
    assert "Download or copy it again" in run.output


def test_two_images_in_one_sample_is_named(source: Source, tmp_path: Path) -> None:
    shards = small_shards(tmp_path / "shards", source)
    with tarfile.open(shards.files[0], "a", format=tarfile.GNU_FORMAT) as tar:  # a 5th sample, two images
        extra = shards.samples[0]
        add_member(tar, "extra.cls", b"1")
        add_member(tar, "extra.jpg", extra.image)
        add_member(tar, "extra.png", extra.image)
    run = convert_shards(tmp_path / "run", shards, source.devkit)
    assert run.returncode != 0
    assert f"{shards.files[0]}: sample extra has 2 image members (members: extra.cls, extra.jpg, extra.png)" in (
        run.output
    )


def test_bad_image_fails_its_shard_only_naming_shard_and_key(source: Source, tmp_path: Path) -> None:
    shards = make_shards(tmp_path / "shards", source.train.classes, source.train.samples, PER_SHARD)
    run = convert_shards(tmp_path / "run", shards, source.devkit, "--keep-going")
    assert run.returncode != 0
    key = source.truncated_key
    shard = next(f for f in shards.files if _holds(f, key))
    assert f"{shard}: sample {key} (member {key}.jpg)" in run.output
    assert "encode.on_error: skip" in run.output
    assert len(list((tmp_path / "run" / "work" / "train" / "parts").glob("*.json"))) == 1, "the other shard finished"


def test_shipped_config_plans_the_run(source: Source, tmp_path: Path) -> None:
    """config/imagenet-wds.yaml, its folder pointed at the hub's 1,024 + 64 shard names, plans 16 + 2 jobs."""
    hub = tmp_path / "imagenet-1k-wds"
    hub.mkdir()
    for name in [f"train-{n:04d}" for n in range(1024)] + [f"validation-{n:04d}" for n in range(64)]:
        (hub / f"imagenet1k-{name}.tar").touch()  # a dry run only needs them to exist
    text = (REPO / "config" / "imagenet-wds.yaml").read_text()
    devkit = "/data/imagenet/ILSVRC2012_devkit_t12.tar.gz"
    for shipped, here in [("/data/imagenet-1k-wds", hub), (devkit, source.devkit)]:
        assert shipped in text
        text = text.replace(shipped, str(here))
    config = tmp_path / "imagenet-wds.yaml"
    config.write_text(text)
    run = run_snakemake(tmp_path, "-n", "--configfile", str(config)).check()
    assert run.output.count("rule encode_shard:") == 16 + 2
    (hub / "imagenet1k-train-0517.tar").unlink()
    missing = run_snakemake(tmp_path, "-n", "--configfile", str(config))
    assert missing.returncode != 0 and "imagenet1k-train-0517.tar' does not exist" in missing.output
