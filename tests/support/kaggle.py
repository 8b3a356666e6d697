"""Kaggle's ImageNet download as it is on disk: imagenet-object-localization-challenge.zip, with
its folder names (ILSVRC/Data/CLS-LOC/{train/<wnid>/<wnid>_N.JPEG, val/, test/}, Annotations,
ImageSets) and its CSVs (LOC_val_solution.csv, LOC_train_solution.csv, LOC_synset_mapping.txt),
made of generated images: a PNG named .JPEG, a CMYK JPEG and one truncated JPEG among them."""

from __future__ import annotations

import random
import zipfile
from dataclasses import dataclass
from pathlib import Path

from .images import make_images

DATA = "ILSVRC/Data/CLS-LOC"


@dataclass
class KaggleZip:
    zip: Path
    unzipped: Path  # the same zip unpacked with zipfile, for comparison
    wnids: list[str]
    ground_truth: dict[int, str]  # val image number -> WNID
    truncated: str  # the member cut short (a train image)
    train_images: int
    val_images: int


def kaggle_members(pool: Path, wnids: list[str], val_images: int, seed: int) -> tuple[dict[str, bytes], dict[int, str]]:
    """Every member's bytes (train images renamed ``<wnid>_N.JPEG`` as Kaggle has them; val images
    ``ILSVRC2012_val_NNNNNNNN.JPEG`` labelled at random) and the val ground truth."""
    members: dict[str, bytes] = {}
    for number, image in enumerate(sorted((pool / "train").rglob("*.*"))):
        wnid = image.parent.name
        members[f"{DATA}/train/{wnid}/{wnid}_{number}{image.suffix}"] = image.read_bytes()
    labels = [wnids[n % len(wnids)] for n in range(val_images)]  # every class, in shuffled order
    random.Random(seed).shuffle(labels)
    ground_truth = {}
    for number, image in enumerate(sorted((pool / "val").rglob("*.*"))[:val_images], start=1):
        members[f"{DATA}/val/ILSVRC2012_val_{number:08d}.JPEG"] = image.read_bytes()
        ground_truth[number] = labels[number - 1]
    for number, image in enumerate(sorted((pool / "val").rglob("*.*"))[val_images:], start=1):
        members[f"{DATA}/test/ILSVRC2012_test_{number:08d}.JPEG"] = image.read_bytes()
    return members, ground_truth


def csv_members(members: dict[str, bytes], wnids: list[str], ground_truth: dict[int, str]) -> dict[str, bytes]:
    """LOC_val_solution.csv (``wnid x y x y`` boxes, repeated per object), LOC_train_solution.csv,
    LOC_synset_mapping.txt and a few annotation and image-set files, as Kaggle ships them."""
    val = "ImageId,PredictionString\n" + "".join(
        f"ILSVRC2012_val_{n:08d},{w} 10 20 110 120 {w} 5 5 50 60 \n" for n, w in sorted(ground_truth.items())
    )
    train = [p for p in members if p.startswith(f"{DATA}/train/")][:5]
    stems = [p.rsplit("/", 1)[1].split(".")[0] for p in train]
    return {
        "LOC_synset_mapping.txt": "".join(f"{w} thing {w}, other name\n" for w in wnids).encode(),
        "LOC_val_solution.csv": val.encode(),
        "LOC_train_solution.csv": (
            "ImageId,PredictionString\n" + "".join(f"{s},{s.split('_')[0]} 1 2 30 40 \n" for s in stems)
        ).encode(),
        "LOC_sample_submission.csv": b"ImageId,PredictionString\nILSVRC2012_test_00000001,n01751748 1 1 2 2\n",
        **{f"ILSVRC/Annotations/CLS-LOC/train/{s.split('_')[0]}/{s}.xml": b"<annotation/>" for s in stems},
        "ILSVRC/ImageSets/CLS-LOC/train_cls.txt": "".join(
            f"{s.split('_')[0]}/{s} {i}\n" for i, s in enumerate(stems)
        ).encode(),
    }


def truncate_one(members: dict[str, bytes]) -> str:
    """Cut a plain train JPEG in half (a download cut short); returns its member name."""
    name = sorted(p for p in members if p.startswith(f"{DATA}/train/") and p.endswith(".JPEG"))[-1]
    members[name] = members[name][: len(members[name]) // 2]
    return name


def write_zip(path: Path, members: dict[str, bytes]) -> None:
    """Folder entries first, then files in name order, as `zip -r` of the unpacked folder gives."""
    folders = sorted({p.rsplit("/", 1)[0] + "/" for p in members if "/" in p} | {f"{DATA}/test/"})
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for folder in folders:
            zf.writestr(folder, b"")
        for name in sorted(members):
            zf.writestr(name, members[name])


def make_kaggle_zip(base: Path, classes: int, train_images: int, val_images: int, test_images: int) -> KaggleZip:
    make_images(str(base / "pool" / "train"), images=train_images, classes=classes, seed=11, workers=2)
    make_images(str(base / "pool" / "val"), images=val_images + test_images, classes=1, seed=12, workers=2)
    wnids = sorted(p.name for p in (base / "pool" / "train").iterdir())
    members, ground_truth = kaggle_members(base / "pool", wnids, val_images, seed=13)
    truncated = truncate_one(members)
    members.update(csv_members(members, wnids, ground_truth))
    path = base / "imagenet-object-localization-challenge.zip"
    write_zip(path, members)
    with zipfile.ZipFile(path) as zf:
        zf.extractall(base / "unzipped")
    return KaggleZip(path, base / "unzipped", wnids, ground_truth, truncated, train_images, val_images)
