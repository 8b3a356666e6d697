"""ILSVRC2012-structured archives, as downloaded: a tar of per-class tars, the flat shuffled val tar
and a devkit (meta.mat written by scipy, the validation ground truth)."""

from __future__ import annotations

import io
import random
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.io

from imagefolder_lmdb.classes.lists import shipped_list

from .archives import add_member
from .images import make_images


def make_train_tar(tree: Path, path: Path, reverse: bool = False) -> int:
    """A tar of ``<wnid>.tar`` members (ILSVRC2012_img_train.tar), each holding that class's images
    flat, in name order or, with ``reverse``, not; returns the image count."""
    count = 0
    with tarfile.open(path, "w") as outer:
        for class_dir in sorted(p for p in tree.iterdir() if p.is_dir()):
            buffer = io.BytesIO()
            with tarfile.open(fileobj=buffer, mode="w") as inner:
                for image in sorted(class_dir.iterdir(), reverse=reverse):
                    inner.add(image, arcname=image.name)
                    count += 1
            add_member(outer, f"{class_dir.name}.tar", buffer.getvalue())
    return count


def make_meta_mat(path: Path, id_to_wnid: dict[int, str], words: dict[str, str] | None = None) -> None:
    """meta.mat as the devkit has it: a struct array of synsets, leaves first, then a parent;
    ``words`` gives a leaf's ``words`` field (else a made-up one)."""
    words = words or {}
    fields = [
        "ILSVRC2012_ID",
        "WNID",
        "words",
        "gloss",
        "num_children",
        "children",
        "wordnet_height",
        "num_train_images",
    ]
    synsets = np.zeros((len(id_to_wnid) + 1, 1), dtype=[(f, "O") for f in fields])
    for row, (ilsvrc_id, wnid) in enumerate(sorted(id_to_wnid.items())):
        text = words.get(wnid, f"thing {wnid}, other name")
        synsets[row, 0] = (ilsvrc_id, wnid, text, "a gloss", 0, np.zeros(0), 0, 10)
    children = np.array(sorted(id_to_wnid), dtype=np.uint16)
    synsets[-1, 0] = (len(id_to_wnid) + 1, "n00000001", "entity", "root", len(children), children, 5, 0)
    scipy.io.savemat(path, {"synsets": synsets})


def make_devkit(
    path: Path,
    id_to_wnid: dict[int, str],
    ground_truth_ids: list[int],
    scratch: Path,
    words: dict[str, str] | None = None,
) -> None:
    """ILSVRC2012_devkit_t12.tar.gz: meta.mat (written in ``scratch`` first) and the ground truth,
    one ILSVRC2012_ID per val image in image-number order."""
    make_meta_mat(scratch / "meta.mat", id_to_wnid, words)
    with tarfile.open(path, "w:gz") as tar:
        tar.add(scratch / "meta.mat", arcname="ILSVRC2012_devkit_t12/data/meta.mat")
        text = "".join(f"{i}\n" for i in ground_truth_ids).encode()
        add_member(tar, "ILSVRC2012_devkit_t12/data/ILSVRC2012_validation_ground_truth.txt", text)


def shuffled_ids(wnids: list[str], seed: int = 2012) -> dict[int, str]:
    """ILSVRC2012_ID -> WNID, numbered in an order of their own as in the genuine devkit, whose
    meta.mat does not number its leaves by WNID (ID 1 is n02119789, kit fox; 2 n02100735; 3
    n02110185): a seeded shuffle, so code taking ID order for label order fails."""
    order = list(wnids)
    random.Random(seed).shuffle(order)
    return {i + 1: wnid for i, wnid in enumerate(order)}


def make_imagenet1k_devkit(path: Path, scratch: Path, ground_truth_ids: list[int] | None = None) -> Path:
    """A devkit of the genuine format over the real 1,000 ILSVRC2012 WNIDs and their words (the
    list the package ships), IDs in an order other than the WNIDs'."""
    imagenet1k = shipped_list("imagenet1k")
    scratch.mkdir(parents=True, exist_ok=True)
    words = dict(zip(imagenet1k.names, imagenet1k.words, strict=True))
    make_devkit(path, shuffled_ids(imagenet1k.names), ground_truth_ids or [], scratch, words)
    return path


def make_val_tar(images: list[Path], path: Path, keep: list[int]) -> None:
    """Flat ``ILSVRC2012_val_NNNNNNNN.JPEG`` members, in shuffled order (as the official tar):
    image number ``n`` of ``keep`` is the file ``images[n - 1]``."""
    order = list(keep)
    random.Random(7).shuffle(order)
    with tarfile.open(path, "w") as tar:
        for number in order:
            tar.add(images[number - 1], arcname=f"ILSVRC2012_val_{number:08d}.JPEG")


@dataclass
class ValSplit:
    """The val tar and the devkit that labels it, and the ground truth the test checks against."""

    val_tar: Path
    devkit: Path
    ground_truth: dict[int, str]  # val image number -> WNID


def make_val_split(
    base: Path, wnids: list[str], wnid_of: Callable[[int], str], images: int, seed: int, first_index: int
) -> ValSplit:
    """``images`` generated val images in ``base``'s ILSVRC2012_img_val.tar, image ``n`` of class
    ``wnid_of(n)``, and the devkit over ``wnids`` that says so. ILSVRC2012_IDs are given in reverse
    WNID order: ID order is not sorted-WNID order, as in the real devkit."""
    id_to_wnid = {i + 1: wnid for i, wnid in enumerate(reversed(wnids))}
    wnid_to_id = {wnid: i for i, wnid in id_to_wnid.items()}
    ids = [wnid_to_id[wnid_of(n)] for n in range(1, images + 1)]
    make_devkit(base / "ILSVRC2012_devkit_t12.tar.gz", id_to_wnid, ids, base)
    make_images(str(base / "val_pool"), images=images, classes=1, seed=seed, first_index=first_index, workers=2)
    val_images = sorted((base / "val_pool").rglob("*.*"))
    make_val_tar(val_images, base / "ILSVRC2012_img_val.tar", keep=list(range(1, images + 1)))
    ground_truth = {n: id_to_wnid[i] for n, i in enumerate(ids, start=1)}
    return ValSplit(base / "ILSVRC2012_img_val.tar", base / "ILSVRC2012_devkit_t12.tar.gz", ground_truth)
