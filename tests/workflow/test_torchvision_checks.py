"""torchvision's own dataset checks, run side by side on torchvision's class and on LMDBDataset
converted from the same generated tree (issue 53): each check must give both the same outcome
(exception type, classes, samples, feature types, transforms called, the v2 wrapper's samples).

Re-stated, not copied, from pytorch/vision's tests as read for torchvision 0.29 (the release
requirements.txt pins): ``test/datasets_utils.py`` (``DatasetTestCase``, ``ImageDatasetTestCase``;
commit 0286238a2d2c27496af845d796e2bc9bc1286cbe, the last read there with ``test_transforms_v2_wrapper``)
and ``test/test_datasets.py`` (``DatasetFolderTestCase``, ``ImageFolderTestCase``,
``check_transforms_v2_wrapper_spawn``; commit da6134da47a01f107e591a8badefd5527041888b).

The cases, as torchvision writes them (tests/support/listing_trees.py makes and converts them, in
one run shared with test_listing_options.py): ImageFolder on class folders ``a`` and ``b`` of 1-2
PNGs; DatasetFolder with ``extensions`` (``("jpg", "png")``, and each alone) on one class folder per
extension, ``is_valid_file`` in their place, and an empty class folder with and without
``allow_empty``. The DatasetFolder case takes ``default_loader`` where torchvision's takes an
identity loader over video files: a converter of images stores images. Images are stored as they
are (``encode.reencode: never``), so the PNGs' pixels are the source's.

Left out, and why:
- ``test_tv_decode_image_support`` (``loader=decode_image``): LMDBDataset takes no loader; its
  ``decode="tensor"`` is the counterpart, tested against PIL in tests/workflow/test_reader.py.
- The download/extract and integrity-check patches (``_DOWNLOAD_EXTRACT_FUNCTIONS``,
  ``_CHECK_FUNCTIONS``), ``REQUIRED_PACKAGES``: neither class downloads anything.
- ``_force_load_images``: a Windows file-handle workaround; LMDBDataset opens no image file.
- ``VideoDatasetTestCase`` and the ``frames_per_clip`` handling: no videos.
- ``test_allow_empty``'s ``allow_empty=False``: torchvision raises FileNotFoundError when the
  dataset is made; the converter refuses the tree when converting (ConvertError naming the class,
  as FileNotFoundError names it), since an LMDB file is never made from such a tree: the message is
  compared, the exception type is the deliberate difference.
"""

from __future__ import annotations

import importlib
import os
import pathlib
import unittest.mock
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import PIL.Image
import pytest
import torch
from torch.utils.data import DataLoader
from torchvision.datasets import DatasetFolder, ImageFolder, VisionDataset, wrap_dataset_for_transforms_v2
from torchvision.datasets.folder import default_loader
from torchvision.transforms import v2

from imagefolder_lmdb import convert
from imagefolder_lmdb.convert import ConvertError
from imagefolder_lmdb.reader import LMDBDataset
from support.listing_trees import EXTENSIONS, cases_of, dataset_folder_tree, listing_run

pytestmark = pytest.mark.usefixtures("fresh_envs")


def folder_maker(**listing: Any) -> Callable[..., VisionDataset]:
    def make(root: str, **kwargs: Any) -> VisionDataset:
        return DatasetFolder(root, default_loader, **listing, **kwargs)

    return make


class Case:
    """One configuration: the tree, torchvision's dataset for it, and the converted one."""

    def __init__(self, run: Path, name: str, case: dict[str, Any]) -> None:
        self.root, self.lmdb, self.info = run / "trees" / name, run / "run" / "results" / f"{name}.lmdb", case["info"]
        settings = case["settings"]
        if not settings:
            self.make: Callable[..., VisionDataset] = ImageFolder
        elif "is_valid_file" in settings:
            module, function = settings["is_valid_file"].split(":")
            self.make = folder_maker(is_valid_file=getattr(importlib.import_module(module), function))
        else:
            extensions = tuple(settings["extensions"])
            self.make = folder_maker(extensions=extensions, allow_empty=settings.get("allow_empty", False))

    def theirs(self, **kwargs: Any) -> VisionDataset:
        return self.make(str(self.root), **kwargs)

    def ours(self, **kwargs: Any) -> LMDBDataset:
        return LMDBDataset(self.lmdb, **kwargs)

    def both(self, **kwargs: Any) -> tuple[VisionDataset, LMDBDataset]:
        return self.theirs(**kwargs), self.ours(**kwargs)


@pytest.fixture
def cases(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> dict[str, Case]:
    """Every configuration's tree, converted in the run shared with test_listing_options.py (one split
    each, its own classes), the predicates' module importable here."""
    run = listing_run(tmp_path_factory)
    monkeypatch.syspath_prepend(str(run))
    return {name: Case(run, name, case) for name, case in cases_of(run).items() if "info" in case}


ALL = ["image_folder", "jpg_png", "jpg", "png", "valid_file", "allow_empty"]


def same_samples(theirs: VisionDataset, ours: LMDBDataset) -> None:
    assert ours.classes == theirs.classes and ours.class_to_idx == theirs.class_to_idx
    assert [(os.path.join(ours.root, path), label) for path, label in ours.samples] == theirs.samples
    assert ours.targets == theirs.targets


def same_sample(theirs: Any, ours: Any) -> None:
    """One sample of each: the same types and the same values."""
    assert [type(part) for part in ours] == [type(part) for part in theirs]
    for mine, expected in zip(ours, theirs, strict=True):
        if isinstance(expected, PIL.Image.Image | torch.Tensor):
            assert np.array_equal(np.asarray(mine), np.asarray(expected))
        else:
            assert mine == expected


def test_not_found_or_corrupted(tmp_path: Path) -> None:
    """DatasetTestCase.test_not_found_or_corrupted: no data there is FileNotFoundError or RuntimeError."""
    outcomes = []
    for make in (lambda: ImageFolder(str(tmp_path / "absent")), lambda: LMDBDataset(tmp_path / "absent.lmdb")):
        with pytest.raises((FileNotFoundError, RuntimeError)) as raised:
            make()
        outcomes.append(type(raised.value))
    assert outcomes[0] is outcomes[1] is FileNotFoundError


@pytest.mark.parametrize("name", ALL)
def test_smoke_str_types_count_and_classes(cases: dict[str, Case], name: str) -> None:
    """test_smoke, test_str_smoke, test_feature_types (PIL image, int), test_num_examples, test_classes
    and, for the DatasetFolder cases, test_is_valid_file and test_allow_empty's allow_empty=True."""
    case = cases[name]
    theirs, ours = case.both()
    for dataset in (theirs, ours):
        assert isinstance(dataset, VisionDataset)
        assert isinstance(str(dataset), str)
        image, target = dataset[0]
        assert isinstance(image, PIL.Image.Image) and isinstance(target, int)
        assert len(dataset) == case.info["num_examples"]
        assert list(dataset.classes) == case.info["classes"]
    assert str(ours).split("\n")[1:3] == str(theirs).split("\n")[1:3]  # datapoints, root location
    same_samples(theirs, ours)
    for index in range(len(ours)):
        same_sample(theirs[index], ours[index])


@pytest.mark.parametrize("name", ["image_folder", "jpg_png"])
def test_transforms(cases: dict[str, Case], name: str) -> None:
    """DatasetTestCase.test_transforms: ``transform`` and ``target_transform`` are called."""
    for kwarg in ("transform", "target_transform"):
        for make in (cases[name].theirs, cases[name].ours):
            mock = unittest.mock.Mock(wraps=lambda *args: args[0] if len(args) == 1 else args)
            make(**{kwarg: mock})[0]
            mock.assert_called()


@pytest.mark.parametrize("name", ["image_folder", "jpg_png", "allow_empty"])
def test_transforms_v2_wrapper(cases: dict[str, Case], name: str) -> None:
    """DatasetTestCase.test_transforms_v2_wrapper, and the same samples (types and values) from both."""
    transform = v2.Compose([v2.PILToTensor(), v2.Resize((4, 5))])
    theirs, ours = (wrap_dataset_for_transforms_v2(dataset) for dataset in cases[name].both(transform=transform))
    assert len(ours) == len(theirs)
    for index in range(len(theirs)):
        assert ours[index] is not None
        same_sample(theirs[index], ours[index])


def spawned_sizes(dataset: Any) -> list[tuple[int, int]]:
    loader = DataLoader(dataset, batch_size=None, num_workers=1, multiprocessing_context="spawn")
    return [tuple(image.shape[-2:]) for image, _ in loader]


def test_transforms_v2_wrapper_spawn(cases: dict[str, Case]) -> None:
    """test_datasets.py's check_transforms_v2_wrapper_spawn: the wrapped dataset pickled into a spawned
    worker still applies its transform there."""
    transform = v2.Compose([v2.PILToTensor(), v2.Resize((12, 32))])
    theirs, ours = (wrap_dataset_for_transforms_v2(d) for d in cases["image_folder"].both(transform=transform))
    assert spawned_sizes(ours) == spawned_sizes(theirs) == [(12, 32)] * len(theirs)


def test_allow_empty_false_stops_with_the_same_words(tmp_path: Path) -> None:
    """test_allow_empty's allow_empty=False: "Found no valid file" (see the module's note)."""
    info = dataset_folder_tree(tmp_path / "tree", EXTENSIONS, np.random.default_rng(1), empty=True)
    assert info["classes"][-1] == "empty_class"
    with pytest.raises(FileNotFoundError, match="Found no valid file for the classes empty_class"):
        DatasetFolder(str(tmp_path / "tree"), default_loader, extensions=EXTENSIONS)
    settings = {"splits": {"*": {"extensions": list(EXTENSIONS)}}}
    with pytest.raises(ConvertError) as raised:
        convert(tmp_path / "tree", tmp_path / "out", split="train", cores=1, config=settings)
    said = " ".join([str(raised.value), *raised.value.lines]).lower()
    assert "found no valid file for the classes empty_class" in said
    assert not (tmp_path / "out" / "train.lmdb").exists()


def test_is_valid_file_leaves_extensions_none(cases: dict[str, Case]) -> None:
    """DatasetFolderTestCase.test_is_valid_file's dataset: the predicate's files (its samples are
    compared above), and ``extensions`` None on both, as DatasetFolder sets it."""
    case = cases["valid_file"]
    assert all(pathlib.Path(path).suffix[1:] in EXTENSIONS for path, _ in case.theirs().samples)
    assert case.ours().extensions is None and case.theirs().extensions is None


def test_decode_bytes_and_tensor_stay_a_vision_dataset(cases: dict[str, Case]) -> None:
    """Not torchvision's check, the drop-in's: the other ``decode`` choices on the same base, and the
    v2 wrapper over ``decode="tensor"`` giving ImageFolder's pixels (as ``v2.PILToTensor`` makes them)."""
    case = cases["image_folder"]
    raw = case.ours(decode="bytes")
    assert isinstance(raw, VisionDataset) and isinstance(raw[0][0], bytes)
    ours = wrap_dataset_for_transforms_v2(case.ours(decode="tensor"))
    theirs = wrap_dataset_for_transforms_v2(case.theirs(transform=v2.PILToTensor()))
    for index in range(len(theirs)):
        same_sample(theirs[index], ours[index])
