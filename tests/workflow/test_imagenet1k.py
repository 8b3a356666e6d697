"""``classes: imagenet1k``, the class list the package ships: timm-style WebDataset shards (integer
labels in ``.cls``) and the hub's Parquet files convert to the same classes, ``class_to_idx`` and
labels as with a devkit of the genuine format over the real 1,000 WNIDs; a WNID subset converts
without the devkit (``devkit: imagenet1k``); the words reach the reader; ILSVRC val, whose labels
only the devkit's ground truth gives, is refused with the reason."""

from __future__ import annotations

import random
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from imagefolder_lmdb.classes.lists import shipped_list
from imagefolder_lmdb.reader import LMDBReader, close_all_envs
from support.datasets import assert_same_dataset
from support.ilsvrc import make_imagenet1k_devkit
from support.images import jpeg_bytes
from support.parquet import Row, write_hf_parquet
from support.wds_shards import WdsSample, make_shards
from support.workflow import run_snakemake, write_config

IMAGENET1K = shipped_list("imagenet1k")
#: tench, goldfish, crane (the bird), crane (the machine), toilet tissue: first, last, a name twice.
LABELS = (0, 1, 134, 517, 999)
PER_CLASS = 2
SUBSET = ["n01440764", "n03126707", "n15075141"]  # tench, crane (the machine), toilet tissue


@dataclass(frozen=True)
class Sources:
    shards: str  # brace pattern of the WebDataset shards
    parquet: str
    devkit: str
    labels: list[int]  # of the samples, in record order (the same in both sources)


def samples() -> list[WdsSample]:
    """Tiny JPEGs of a few classes, keyed as timm's shards key them, mixed as its train shards are."""
    chosen = [
        WdsSample(f"{IMAGENET1K.names[label]}_{n}", "jpg", jpeg_bytes(label * 10 + n, size=(24, 16)), label)
        for label in LABELS
        for n in range(PER_CLASS)
    ]
    random.Random(3).shuffle(chosen)
    return chosen


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Sources:
    base = tmp_path_factory.mktemp("imagenet1k")
    chosen = samples()
    shards = make_shards(base / "wds", IMAGENET1K.names, chosen, per_shard=4)
    rows = [Row(s.image, f"{s.key}.JPEG", s.label) for s in chosen]
    # the hub's files name the labels by words, as imagenet-1k's ClassLabel does
    parquet = write_hf_parquet(base / "train-00000-of-00001.parquet", rows, IMAGENET1K.words, row_group_size=4)
    devkit = make_imagenet1k_devkit(base / "ILSVRC2012_devkit_t12.tar.gz", base / "scratch")
    return Sources(shards.pattern(), str(parquet), str(devkit), [s.label for s in chosen])


def convert(workdir: Path, splits: dict[str, dict[str, Any]], **sections: Any) -> dict[str, Path]:
    """The splits converted in ``workdir`` (checked); their LMDB files by split."""
    workdir.mkdir(parents=True)
    config = write_config(workdir, {name: {"shards": 1, **split} for name, split in splits.items()}, **sections)
    run_snakemake(workdir, "--configfile", str(config)).check()
    return {name: workdir / "results" / f"{name}.lmdb" for name in splits}


def wds(source: Sources, **keys: Any) -> dict[str, Any]:
    return {"source": source.shards, "layout": "webdataset", **keys}


def hub(source: Sources, **keys: Any) -> dict[str, Any]:
    return {"source": source.parquet, "layout": "parquet", **keys}


def test_imagenet1k_labels_shards_as_the_genuine_devkit_does(sources: Sources, tmp_path: Path) -> None:
    by_devkit = convert(
        tmp_path / "devkit",
        {"train": wds(sources, devkit=sources.devkit), "hub": hub(sources, devkit=sources.devkit)},
    )
    by_list = convert(
        tmp_path / "list",
        {"train": wds(sources), "hub": hub(sources, devkit="imagenet1k")},
        classes="imagenet1k",
    )
    for split in ("train", "hub"):
        devkit, listed = LMDBReader(by_devkit[split]), LMDBReader(by_list[split])
        assert listed.classes == devkit.classes == IMAGENET1K.names
        assert listed.class_to_idx == devkit.class_to_idx
        assert listed.targets == devkit.targets == sources.labels
        assert listed.samples == devkit.samples
        assert listed.class_words == devkit.class_words == IMAGENET1K.words
        assert listed.class_words[134] == listed.class_words[517] == "crane"
        assert listed.meta_document["class_list"]["origin"] == "from imagenet1k, the list shipped with imagefolder-lmdb"
        close_all_envs()
        assert_same_dataset(by_devkit[split], by_list[split])  # every record and meta array alike


def test_a_wnid_subset_converts_without_the_devkit(sources: Sources, tmp_path: Path) -> None:
    converted = convert(
        tmp_path / "subset",
        {"train": wds(sources, devkit="imagenet1k"), "ref": wds(sources, devkit=sources.devkit)},
        classes=SUBSET,
    )
    listed, devkit = LMDBReader(converted["train"]), LMDBReader(converted["ref"])
    kept = [IMAGENET1K.names[label] for label in sources.labels if IMAGENET1K.names[label] in SUBSET]
    assert listed.classes == devkit.classes == SUBSET
    assert listed.targets == devkit.targets == [SUBSET.index(name) for name in kept]
    assert listed.samples == devkit.samples
    assert listed.class_words == ["tench, Tinca tinca", "crane", "toilet tissue, toilet paper, bathroom tissue"]
    assert listed.meta_document["class_list"]["images_outside"] == len(sources.labels) - len(kept)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {"devkit": "imagenet1k"},
            "config key splits.val.devkit: 'imagenet1k' cannot label layout ilsvrc-val: the shipped list names "
            "the 1,000 classes, not the class of each validation image: those labels are the devkit's ground "
            "truth (data/ILSVRC2012_validation_ground_truth.txt), which no class list can replace.",
        ),
        (
            {"classes": "imagenet1k"},
            "layout ilsvrc-val needs the labels: set devkit (ILSVRC2012_devkit_t12.tar.gz) or val_labels "
            "(LOC_val_solution.csv). classes: imagenet1k names the classes, not the class of each validation "
            "image: those come from the devkit's ground truth, which no class list can replace.",
        ),
    ],
    ids=["devkit", "classes"],
)
def test_ilsvrc_val_is_not_labelled_by_the_list(tmp_path: Path, config: dict[str, str], message: str) -> None:
    val_tar = tmp_path / "ILSVRC2012_img_val.tar"
    tarfile.open(val_tar, "w").close()
    split = {"source": str(val_tar), "layout": "ilsvrc-val", **{k: v for k, v in config.items() if k == "devkit"}}
    sections = {k: v for k, v in config.items() if k == "classes"}
    run = run_snakemake(tmp_path, "-n", "--configfile", str(write_config(tmp_path, {"val": split}, **sections)))
    assert run.returncode != 0
    assert message in run.output
    assert "Traceback" not in run.output
