"""WebDataset shards as timm's ``imagenet-1k-wds`` has them: ``imagenet1k-train-0000.tar``, ...,
each sample three consecutive members ``<key>.cls`` (the label as text), ``<key>.jpg`` and
``<key>.json``, samples shuffled across classes; and the devkit whose sorted WNIDs the labels index."""

from __future__ import annotations

import json
import random
import tarfile
from dataclasses import dataclass
from pathlib import Path

from .archives import add_member
from .ilsvrc import make_devkit


@dataclass(frozen=True)
class WdsSample:
    key: str
    image_suffix: str  # "jpg" for JPEGs (also a PNG named .JPEG in the tree), "png" for PNGs
    image: bytes
    label: int


@dataclass
class Shards:
    """Shards written from an image tree, and what they hold."""

    folder: Path
    files: list[Path]
    classes: list[str]  # sorted WNIDs: label k is classes[k]
    samples: list[WdsSample]  # in record order

    def pattern(self, split: str = "train") -> str:
        """The brace pattern naming every shard, as the hub's dataset card gives it."""
        return str(self.folder / f"imagenet1k-{split}-{{0000..{len(self.files) - 1:04d}}}.tar")


def tree_samples(tree: Path, seed: int = 5) -> tuple[list[str], list[WdsSample]]:
    """The tree's images as labelled samples, shuffled (timm's train shards mix the classes)."""
    classes = sorted(p.name for p in tree.iterdir() if p.is_dir())
    samples = [
        WdsSample(
            path.stem, "png" if path.suffix == ".png" else "jpg", path.read_bytes(), classes.index(path.parent.name)
        )
        for path in sorted(tree.rglob("*.*"))
    ]
    random.Random(seed).shuffle(samples)
    return classes, samples


def write_sample(tar: tarfile.TarFile, sample: WdsSample, label: bytes | None = None) -> None:
    """The sample's members in timm's order; ``label`` replaces the ``.cls`` text (b"" leaves it out)."""
    text = str(sample.label).encode() if label is None else label
    if text:
        add_member(tar, f"{sample.key}.cls", text)
    add_member(tar, f"{sample.key}.{sample.image_suffix}", sample.image)
    meta = {"filename": f"{sample.key}.JPEG", "label": sample.label}
    add_member(tar, f"{sample.key}.json", json.dumps(meta).encode())


def make_shards(
    folder: Path, classes: list[str], samples: list[WdsSample], per_shard: int, split: str = "train"
) -> Shards:
    """``samples`` in shards of ``per_shard`` (the last one shorter)."""
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for number, first in enumerate(range(0, len(samples), per_shard)):
        path = folder / f"imagenet1k-{split}-{number:04d}.tar"
        with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as tar:
            for sample in samples[first : first + per_shard]:
                write_sample(tar, sample)
        files.append(path)
    return Shards(folder, files, classes, samples)


def truncated(image: bytes) -> bytes:
    """A JPEG cut short, as an interrupted copy leaves it."""
    return image[: len(image) // 2]


def make_wds_devkit(path: Path, classes: list[str], scratch: Path) -> Path:
    """ILSVRC2012_devkit_t12.tar.gz over ``classes`` (IDs in another order than the sorted WNIDs,
    as in the real devkit); no val ground truth is needed for shards."""
    scratch.mkdir(parents=True, exist_ok=True)
    make_devkit(path, {i + 1: wnid for i, wnid in enumerate(reversed(classes))}, [], scratch)
    return path
