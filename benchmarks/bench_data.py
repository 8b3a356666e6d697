"""The data the benchmarks run on, generated once and cached under benchmarks/out/data/.

- An ImageNet-like tree of ``images`` JPEGs (make_images.py defaults: ~110 KB, ~480x400, q90),
  and a tree of its first half made of hard links (same inodes: same bytes, same page cache), so
  runs at N and 2N images differ only in the image count.
- ILSVRC2012-structured archives built from a tree: a tar of per-class tars, a flat val tar
  (``ILSVRC2012_val_NNNNNNNN.JPEG``, shuffled) and a devkit whose meta.mat scipy writes.
- A tree of 100,000 tiny files for the listing benchmark (count_check only lists).
"""

from __future__ import annotations

import io
import os
import random
import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.io

from bench_common import OUT
from make_images import make_images

DATA = OUT / "data"
DONE = ".complete"  # marker: a cached folder is whole only when it holds this file


def cached(path: Path) -> bool:
    return (path / DONE).exists()


def mark_done(path: Path) -> None:
    (path / DONE).touch()


def image_tree(images: int, classes: int, seed: int = 0) -> Path:
    """The generated tree of ``images`` images in ``classes`` classes (cached).

    make_images derives every file from its number and the seed alone, so the first ``images``
    files of a larger cached tree are exactly this tree: they are hard-linked instead of made."""
    root = DATA / f"tree-{images}x{classes}-s{seed}"
    larger = [t for t in DATA.glob(f"tree-*x{classes}-s{seed}") if cached(t) and tree_size(t) > images]
    if not cached(root) and larger:
        return first_part(min(larger, key=tree_size) / "images", images)
    if not cached(root):
        if root.exists():
            shutil.rmtree(root)
        make_images(str(root / "images"), images=images, classes=classes, seed=seed)
        mark_done(root)
    return root / "images"


def tree_size(root: Path) -> int:
    """The image count in a cached tree's folder name (``tree-<images>x<classes>-s<seed>``)."""
    return int(root.name.split("-")[1].split("x")[0])


def file_number(path: Path) -> int:
    """The running number make_images puts in every file name (``<class>_<number>.<ext>``)."""
    return int(path.stem.rsplit("_", 1)[1])


def image_files(tree: Path) -> list[Path]:
    return sorted(p for p in tree.rglob("*") if p.is_file() and p.name != DONE)


def first_part(tree: Path, keep: int) -> Path:
    """Hard links to the images numbered below ``keep`` (every class keeps its share)."""
    root = tree.parent.parent / f"{tree.parent.name}-first{keep}"
    if not cached(root):
        if root.exists():
            shutil.rmtree(root)
        for path in image_files(tree):
            if file_number(path) < keep:
                target = root / "images" / path.relative_to(tree)
                target.parent.mkdir(parents=True, exist_ok=True)
                os.link(path, target)
        mark_done(root)
    return root / "images"


def tree_bytes(tree: Path) -> int:
    return sum(p.stat().st_size for p in image_files(tree))


def sample_files(tree: Path, count: int, seed: int = 0) -> list[Path]:
    """``count`` random JPEG files of the tree (the oddities left out: they are not the common case)."""
    jpegs = [p for p in image_files(tree) if p.suffix == ".JPEG"]
    return random.Random(seed).sample(jpegs, min(count, len(jpegs)))


def tiny_tree(files: int, classes: int = 100) -> Path:
    """``files`` empty ``.JPEG`` files in ``classes`` folders: enough for a scan that only lists."""
    root = DATA / f"tiny-{files}x{classes}"
    if not cached(root):
        if root.exists():
            shutil.rmtree(root)
        for number in range(files):
            folder = root / "images" / f"n{number % classes:08d}"
            if number < classes:
                folder.mkdir(parents=True)
            (folder / f"img_{number:07d}.JPEG").touch()
        mark_done(root)
    return root / "images"


# --------------------------------------------------------------------------------------------------
# ILSVRC2012-structured archives.
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ilsvrc:
    train_tar: Path
    val_tar: Path
    devkit: Path
    val_ground_truth: dict[int, str]  # val file number -> WNID
    train_images: int
    val_images: int

    @property
    def images(self) -> int:
        return self.train_images + self.val_images

    @property
    def archive_bytes(self) -> int:
        return self.train_tar.stat().st_size + self.val_tar.stat().st_size


def add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def write_train_tar(tree: Path, path: Path) -> int:
    """A tar of ``<wnid>.tar`` members, each holding that class's images flat (as the official one)."""
    count = 0
    with tarfile.open(path, "w") as outer:
        for class_dir in sorted(p for p in tree.iterdir() if p.is_dir()):
            buffer = io.BytesIO()
            with tarfile.open(fileobj=buffer, mode="w") as inner:
                for image in sorted(class_dir.iterdir()):
                    inner.add(image, arcname=image.name)
                    count += 1
            add_bytes(outer, f"{class_dir.name}.tar", buffer.getvalue())
    return count


def write_val_tar(images: list[tuple[Path, str]], path: Path) -> dict[int, str]:
    """Flat, shuffled ``ILSVRC2012_val_NNNNNNNN.JPEG`` members; returns number -> WNID."""
    truth = {number: wnid for number, (_, wnid) in enumerate(images, start=1)}
    order = list(truth)
    random.Random(7).shuffle(order)
    with tarfile.open(path, "w") as tar:
        for number in order:
            tar.add(images[number - 1][0], arcname=f"ILSVRC2012_val_{number:08d}.JPEG")
    return truth


def write_meta_mat(path: Path, id_to_wnid: dict[int, str]) -> None:
    """The devkit's meta.mat: a struct array of synsets, the leaves (the classes) first."""
    fields = ["ILSVRC2012_ID", "WNID", "words", "gloss", "num_children", "children", "wordnet_height"]
    fields.append("num_train_images")
    synsets = np.zeros((len(id_to_wnid), 1), dtype=[(f, "O") for f in fields])
    for row, (ilsvrc_id, wnid) in enumerate(sorted(id_to_wnid.items())):
        synsets[row, 0] = (ilsvrc_id, wnid, f"thing {wnid}", "a gloss", 0, np.zeros(0), 0, 10)
    scipy.io.savemat(path, {"synsets": synsets})


def write_devkit(path: Path, wnids: list[str], truth: dict[int, str], scratch: Path) -> None:
    id_to_wnid = {i + 1: wnid for i, wnid in enumerate(wnids)}
    wnid_to_id = {wnid: i for i, wnid in id_to_wnid.items()}
    write_meta_mat(scratch / "meta.mat", id_to_wnid)
    ground_truth = "".join(f"{wnid_to_id[truth[n]]}\n" for n in sorted(truth)).encode()
    with tarfile.open(path, "w:gz") as tar:
        tar.add(scratch / "meta.mat", arcname="ILSVRC2012_devkit_t12/data/meta.mat")
        add_bytes(tar, "ILSVRC2012_devkit_t12/data/ILSVRC2012_validation_ground_truth.txt", ground_truth)


def ilsvrc_archives(tree: Path, val_every: int = 10) -> Ilsvrc:
    """Official-structure archives of ``tree``: train = every image, val = every ``val_every``-th
    image again under a flat val name, labelled by the devkit (cached)."""
    root = tree.parent.parent / f"{tree.parent.name}-ilsvrc"
    files = image_files(tree)
    val = [(p, p.parent.name) for p in files[::val_every] if p.suffix == ".JPEG"]
    paths = (root / "ILSVRC2012_img_train.tar", root / "ILSVRC2012_img_val.tar", root / "ILSVRC2012_devkit_t12.tar.gz")
    if not cached(root):
        if root.exists():
            shutil.rmtree(root)
        root.mkdir(parents=True)
        write_train_tar(tree, paths[0])
        truth = write_val_tar(val, paths[1])
        write_devkit(paths[2], sorted(p.name for p in tree.iterdir() if p.is_dir()), truth, root)
        mark_done(root)
    truth = {number: wnid for number, (_, wnid) in enumerate(val, start=1)}
    return Ilsvrc(*paths, val_ground_truth=truth, train_images=len(files), val_images=len(val))
