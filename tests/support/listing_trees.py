"""The trees of issue 53's differential tests, converted in one Snakemake run shared by
tests/workflow/test_listing_options.py (ImageFolder's listing arguments on odd trees) and
tests/workflow/test_torchvision_checks.py (torchvision's dataset checks, side by side): one split per
tree, each with its own classes and listing settings. Built once per test run (``built_once``); the
predicates live in a module of the run's folder, on the jobs' PYTHONPATH as the command line puts
the folder it starts from there. Images are stored as they are (``encode.reencode: never``), so the
PNGs' pixels are the source's."""

from __future__ import annotations

import json
import os
import unittest.mock
from pathlib import Path
from typing import Any

import numpy as np
import PIL.Image
import pytest

from .images import jpeg_bytes, png_bytes
from .sharing import built_once
from .workflow import run_snakemake, write_config

#: The predicates. ``seen`` writes each path it is given to the file SEEN_LOG names, so that the
#: strings the jobs passed can be compared with ImageFolder's.
PREDICATES = '''
import os


def keep_even(path):
    """Half the images: those whose number is even."""
    stem = os.path.splitext(os.path.basename(path))[0]
    return stem[-1:].isdigit() and int(stem[-1]) % 2 == 0


def seen(path):
    with open(os.environ["SEEN_LOG"], "a") as log:
        log.write(path + "\\n")
    return path.lower().endswith((".jpg", ".png"))


def jpg_or_png(path):
    """DatasetFolderTestCase.test_is_valid_file's predicate: the extension, without the dot."""
    return path.rsplit(".", 1)[-1] in ("jpg", "png")
'''
#: The module's name, importable from the run's folder.
MODULE = "listing_filters"
#: DatasetFolderTestCase's extensions, written as torchvision writes them (no dot).
EXTENSIONS = ("jpg", "png")


def write_files(root: Path, files: dict[str, bytes]) -> Path:
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root


def odd_trees(base: Path) -> dict[str, dict[str, Any]]:
    """Trees whose files all decode (a .foo is a PNG), each with the setting it is listed with."""
    jpg, png = jpeg_bytes(1, (24, 16)), png_bytes(2, (20, 12))
    odd = {"a/0.jpg": jpg, "a/1.foo": png, "a/2.png": png, "b/3.FOO": png, "b/4.jpeg": jpg, "b/x/5.foo": png}
    upper = {"a/0.JPG": jpg, "a/1.Jpg": jpg, "a/2.jpg": jpg, "b/3.PNG": png, "b/4.JPEG": jpg, "b/5.jpg": jpg}
    empty = {"a/0.jpg": jpg, "a/1.png": png, "c/2.jpg": jpg, "b/notes.txt": b"not an image"}
    half = {f"{c}/{i}.jpg": jpg for c in "ab" for i in range(4)} | {"b/sub/6.png": png, "b/sub/7.png": png}
    seen = {"a/0.jpg": jpg, "a/1.png": png, "a/2.txt": b"text", "b/3.JPG": jpg, "b/deep/er/4.png": png}
    found = {
        "odd_extensions": (odd, {"extensions": [".foo", ".png"]}),
        "upper_case": (upper, {"extensions": [".jpg"]}),
        "empty_allowed": (empty, {"allow_empty": True}),
        "half": (half, {"is_valid_file": f"{MODULE}:keep_even"}),
        "seen": (seen, {"is_valid_file": f"{MODULE}:seen"}),
    }
    for name, (files, _) in found.items():
        write_files(base / name, files)
    return {name: settings for name, (_, settings) in found.items()}


def random_image(folder: Path, name: str, rng: np.random.Generator) -> None:
    """torchvision's create_image_file: random pixels, a random height and width of 3 to 10."""
    height, width = rng.integers(3, 11, size=2)
    folder.mkdir(parents=True, exist_ok=True)
    PIL.Image.fromarray(rng.integers(0, 256, (height, width, 3), dtype=np.uint8)).save(folder / name)


def image_folder_tree(root: Path, rng: np.random.Generator) -> dict[str, Any]:
    """ImageFolderTestCase.inject_fake_data: classes a and b, 1-2 PNGs each."""
    total = 0
    for cls in ("a", "b"):
        count = int(rng.integers(1, 3))
        for index in range(count):
            random_image(root / cls, f"{cls}_{index}.png", rng)
        total += count
    return {"num_examples": total, "classes": ["a", "b"]}


def dataset_folder_tree(root: Path, extensions: tuple[str, ...], rng: np.random.Generator, empty: bool) -> dict:
    """DatasetFolderTestCase.inject_fake_data: one class folder per extension taken, and with
    ``empty`` a class folder named empty_class holding nothing."""
    total, classes = 0, []
    for ext, cls in zip(EXTENSIONS, "ab", strict=True):
        if ext not in extensions:
            continue
        count = int(rng.integers(1, 3))
        for index in range(count):
            random_image(root / cls, f"{cls}_{index}.{ext}", rng)
        total, classes = total + count, [*classes, cls]
    if empty:
        (root / "empty_class").mkdir(parents=True)
        classes.append("empty_class")
    return {"num_examples": total, "classes": classes}


def torchvision_cases(base: Path) -> dict[str, dict[str, Any]]:
    """The configurations of ImageFolderTestCase and DatasetFolderTestCase: each split's settings, and
    what torchvision's inject_fake_data returns for its tree (``info``)."""
    rng = np.random.default_rng(53)
    cases = {"image_folder": {"info": image_folder_tree(base / "image_folder", rng), "settings": {}}}
    for name, extensions in (("jpg_png", EXTENSIONS), ("jpg", ("jpg",)), ("png", ("png",))):
        info = dataset_folder_tree(base / name, extensions, rng, empty=False)
        cases[name] = {"info": info, "settings": {"extensions": list(extensions)}}
    info = dataset_folder_tree(base / "valid_file", EXTENSIONS, rng, empty=False)
    cases["valid_file"] = {"info": info, "settings": {"is_valid_file": f"{MODULE}:jpg_or_png"}}
    info = dataset_folder_tree(base / "allow_empty", EXTENSIONS, rng, empty=True)
    cases["allow_empty"] = {"info": info, "settings": {"extensions": list(EXTENSIONS), "allow_empty": True}}
    return cases


def build(folder: Path) -> None:
    """Every tree, and one run converting them all: results/<tree>.lmdb; cases.json says each tree's
    settings (and for torchvision's cases, ``info``); seen.log what the ``seen`` predicate was given."""
    folder.mkdir(parents=True)
    (folder / f"{MODULE}.py").write_text(PREDICATES)
    trees = folder / "trees"
    cases = {name: {"settings": settings} for name, settings in odd_trees(trees).items()}
    cases |= torchvision_cases(trees)
    splits = {
        name: {"source": str(trees / name), "shards": 1, "share_classes": False, **case["settings"]}
        for name, case in cases.items()
    }
    workdir = folder / "run"
    workdir.mkdir()
    config = write_config(workdir, splits, encode={"reencode": "never"}, verify={"sample": 2})
    with unittest.mock.patch.dict(os.environ, {"PYTHONPATH": str(folder), "SEEN_LOG": str(folder / "seen.log")}):
        run_snakemake(workdir, "--configfile", str(config)).check()
    (folder / "cases.json").write_text(json.dumps(cases))


def listing_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run's folder (built once per test run): ``trees/<name>``, ``run/results/<name>.lmdb``,
    ``cases.json``, ``seen.log`` and the predicates' module."""
    return built_once(tmp_path_factory, "listing_trees", build)


def cases_of(folder: Path) -> dict[str, dict[str, Any]]:
    return dict(json.loads((folder / "cases.json").read_text()))
