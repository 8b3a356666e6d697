"""The drop-in, whole (issue 31): what code written against ImageFolder reads besides its index
(``loader``, ``extensions``, ``transforms``, ``find_classes``) and the words of an index out of range."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from torchvision.datasets import ImageFolder

from imagefolder_lmdb.reader import LMDBDataset
from support.workflow import Converted

pytestmark = pytest.mark.usefixtures("fresh_envs")


def flip(image: Any) -> np.ndarray:
    return np.asarray(image)[:, ::-1]


def plus_ten(target: int) -> int:
    return target + 10


def test_imagefolder_attributes_beyond_the_index(image_tree: Path, converted: Converted) -> None:
    folder = ImageFolder(str(image_tree), transform=flip, target_transform=plus_ten)
    ds = LMDBDataset(converted.lmdb, transform=flip, target_transform=plus_ten)
    assert ds.extensions == folder.extensions
    assert ds.find_classes(str(image_tree)) == folder.find_classes(str(image_tree))
    passthrough = next(i for i in range(len(ds)) if ds.storage_reason(i) == "passthrough")
    path = os.path.join(ds.root, ds.samples[passthrough][0])
    # loader: a record's stored bytes to the PIL image ImageFolder's loader makes from the file
    assert np.array_equal(np.asarray(ds.loader(ds.get_bytes(passthrough))), np.asarray(folder.loader(path)))
    image, target = ds.transforms(ds.loader(ds.get_bytes(passthrough)), 1)
    expected_image, expected_target = folder.transforms(folder.loader(path), 1)
    assert np.array_equal(image, expected_image) and target == expected_target == 11
    assert LMDBDataset(converted.lmdb).transforms is None
    # loader as ImageFolder users call it: a path (a relative one, as samples hold, under root), a file object
    for given in (path, Path(path), ds.samples[passthrough][0]):
        assert np.array_equal(np.asarray(ds.loader(given)), np.asarray(folder.loader(path)))
    with open(path, "rb") as stream:
        assert np.array_equal(np.asarray(ds.loader(stream)), np.asarray(folder.loader(path)))
    with pytest.raises(FileNotFoundError, match=r"cls/absent.JPEG: no such file here or under .*ds.get_bytes\(i\)"):
        ds.loader("cls/absent.JPEG")
    # str() as ImageFolder's: its lines, this file's own before the transforms (where extra_repr goes)
    head, transforms = repr(folder).split("\n    StandardTransform\n")
    assert repr(ds).startswith(head.replace("ImageFolder", "LMDBDataset", 1) + "\n    Path: ")
    assert repr(ds).endswith(f"\n    StandardTransform\n{transforms}")
    for find_classes in (ds.find_classes, folder.find_classes):  # a class folder holds no class folders
        with pytest.raises(FileNotFoundError, match="Couldn't find any class folder"):
            find_classes(str(image_tree / ds.classes[0]))


def test_index_out_of_range_names_the_index_given(converted: Converted) -> None:
    ds = LMDBDataset(converted.lmdb)
    n = len(ds)
    with pytest.raises(IndexError, match=rf"index {-n - 1} out of range .* with {n} images \(-{n} to {n - 1}\)"):
        ds[-n - 1]
    with pytest.raises(IndexError, match=rf"index {n} out of range"):
        ds[n]
