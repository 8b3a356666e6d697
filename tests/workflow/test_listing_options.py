"""ImageFolder's listing arguments in the converter (issue 53): ``extensions``, ``allow_empty`` and
``is_valid_file`` as split settings, tested differentially: each tree converted with a setting lists,
in ``LMDBDataset.samples`` and ``classes``, exactly what torchvision lists called with the same
argument (``DatasetFolder(root, default_loader, extensions=...)``, ``ImageFolder(root, ...)``).

The trees are splits of one config (one Snakemake run); the predicates live in a module of the
folder the run starts from (on PYTHONPATH, as ``imagefolder-lmdb convert`` puts it)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from torchvision.datasets import DatasetFolder, ImageFolder
from torchvision.datasets.folder import default_loader

from imagefolder_lmdb import convert
from imagefolder_lmdb.convert import ConvertError
from imagefolder_lmdb.reader import LMDBDataset, LMDBReader
from imagefolder_lmdb.run.made_from import KEY as MADE_FROM
from support import BIN
from support.images import jpeg_bytes, png_bytes
from support.workflow import Run, convert_with, run_snakemake, workflow_at, write_config

pytestmark = pytest.mark.usefixtures("fresh_envs")

#: The predicates, a module of the folder the conversion starts from. ``seen`` writes every path it is
#: given to a file named by SEEN_LOG, so that the strings can be compared with ImageFolder's.
FILTERS = '''
import os


def keep_even(path):
    """Half the images: those whose number is even."""
    stem = os.path.splitext(os.path.basename(path))[0]
    return stem[-1:].isdigit() and int(stem[-1]) % 2 == 0


def seen(path):
    with open(os.environ["SEEN_LOG"], "a") as log:
        log.write(path + "\\n")
    return path.lower().endswith((".jpg", ".png"))
'''


def write_files(root: Path, files: dict[str, bytes]) -> Path:
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root


def trees(base: Path) -> dict[str, tuple[Path, dict[str, Any]]]:
    """Each split: its tree and its listing settings. Every file decodes (a .foo is a PNG)."""
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
        "half": (half, {"is_valid_file": "listing_filters:keep_even"}),
        "seen": (seen, {"is_valid_file": "listing_filters:seen"}),
    }
    made = {}
    for name, (files, settings) in found.items():
        made[name] = (write_files(base / name, files), settings)
    return made


def torchvision_listing(root: Path, settings: dict[str, Any]) -> DatasetFolder:
    """torchvision's dataset for ``root`` called with the same arguments as the split's settings."""
    if "extensions" in settings:
        return DatasetFolder(str(root), default_loader, extensions=tuple(settings["extensions"]))
    predicate = None
    if "is_valid_file" in settings:
        import listing_filters  # type: ignore[import-not-found]  # the module written by the fixture

        predicate = getattr(listing_filters, settings["is_valid_file"].split(":")[1])
    return ImageFolder(str(root), is_valid_file=predicate, allow_empty=settings.get("allow_empty", False))


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, tuple[Path, dict[str, Any]]], Run]:
    """Every tree converted in one run, the predicates importable through PYTHONPATH (the folder the
    conversion starts from, as the command line and convert() put it there)."""
    base = tmp_path_factory.mktemp("listing")
    (base / "listing_filters.py").write_text(FILTERS)
    made = trees(base / "trees")
    splits = {
        name: {"source": str(root), "shards": 1, "share_classes": False, **settings}
        for name, (root, settings) in made.items()
    }
    workdir = base / "run"
    workdir.mkdir()
    config = write_config(workdir, splits, verify={"sample": 2})
    environment = {"PYTHONPATH": str(base), "SEEN_LOG": str(base / "seen.log")}
    previous = {key: os.environ.get(key) for key in environment}
    os.environ.update(environment)
    try:
        run = run_snakemake(workdir, "--configfile", str(config))
    finally:
        for key, value in previous.items():
            if value is None:
                del os.environ[key]
            else:
                os.environ[key] = value
    return workdir, made, run


@pytest.fixture
def filters_importable(converted: tuple[Path, Any, Run], monkeypatch: pytest.MonkeyPatch) -> Path:
    base = converted[0].parent
    monkeypatch.syspath_prepend(str(base))
    monkeypatch.setenv("SEEN_LOG", str(base / "seen_here.log"))
    return base


@pytest.mark.parametrize("split", ["odd_extensions", "upper_case", "empty_allowed", "half", "seen"])
def test_each_tree_lists_what_torchvision_lists_with_the_same_arguments(
    converted: tuple[Path, dict[str, tuple[Path, dict[str, Any]]], Run], filters_importable: Path, split: str
) -> None:
    workdir, made, run = converted
    run.check()
    root, settings = made[split]
    expected = torchvision_listing(root, settings)
    ds = LMDBDataset(workdir / "results" / f"{split}.lmdb")
    assert ds.classes == expected.classes and ds.class_to_idx == expected.class_to_idx
    assert [(os.path.join(ds.root, path), label) for path, label in ds.samples] == expected.samples
    assert len(ds) == len(expected) > 0
    assert ds.extensions == expected.extensions  # DatasetFolder's: the given ones, None for a predicate
    # recorded as made from these settings (the predicate by name and the digest of its source)
    recorded = ds.meta_document[MADE_FROM]["recipe"]["listing"]
    assert {key: value for key, value in recorded.items() if key != "is_valid_file"} == {
        key: value for key, value in settings.items() if key != "is_valid_file"
    }
    if "is_valid_file" in settings:
        assert recorded["is_valid_file"]["name"] == settings["is_valid_file"]
        assert len(recorded["is_valid_file"]["source_sha256"]) == 64


def test_the_predicate_gets_the_strings_imagefolder_passes(
    converted: tuple[Path, dict[str, tuple[Path, dict[str, Any]]], Run], filters_importable: Path
) -> None:
    _workdir, made, run = converted
    run.check()
    root, settings = made["seen"]
    torchvision_listing(root, settings)  # ImageFolder given the folder's absolute path
    passed_here = set((filters_importable / "seen_here.log").read_text().splitlines())
    passed_in_the_jobs = set((filters_importable / "seen.log").read_text().splitlines())
    assert passed_in_the_jobs == passed_here
    assert str(root / "a" / "2.txt") in passed_here  # every file, not only images


def test_the_predicate_drops_half(converted: tuple[Path, Any, Run]) -> None:
    workdir, _made, run = converted
    run.check()
    assert len(LMDBReader(workdir / "results" / "half.lmdb")) == 5  # 0, 2 of a; 0, 2, 6 of b


def test_an_empty_class_without_allow_empty_stops_as_imagefolder_does(tmp_path: Path) -> None:
    root = write_files(tmp_path / "tree", {"a/0.jpg": jpeg_bytes(1, (16, 16)), "c/1.jpg": jpeg_bytes(2, (16, 16))})
    (root / "b").mkdir()
    with pytest.raises(FileNotFoundError, match="Found no valid file for the classes b"):
        ImageFolder(str(root))
    with pytest.raises(ConvertError) as raised:
        convert(root, tmp_path / "out", split="train", cores=1)
    assert "found no valid file for the classes b" in str(raised.value).lower() + " ".join(raised.value.lines).lower()


def not_importable_lambda() -> Callable[[str], bool]:
    return lambda path: True


def test_a_predicate_other_processes_cannot_import_is_refused_before_anything_runs(tmp_path: Path) -> None:
    def nested(path: str) -> bool:
        return True

    for predicate, words in ((not_importable_lambda(), "lambda"), (nested, "inside another")):
        with pytest.raises(ConvertError, match=words) as raised:
            convert(tmp_path / "absent", tmp_path / "out", split="train", is_valid_file=predicate)
        assert raised.value.returncode == 2
    assert not (tmp_path / "out").exists()


def test_the_command_line_takes_the_predicate_from_the_folder_it_runs_in(tmp_path: Path) -> None:
    root = write_files(tmp_path / "tree", {f"{c}/{i}.jpg": jpeg_bytes(i, (16, 16)) for c in "ab" for i in range(2)})
    (tmp_path / "listing_filters.py").write_text(FILTERS)
    command = [str(BIN / "imagefolder-lmdb"), "convert", str(root), "out", "--split", "train", "--cores", "1"]
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [*command, "--is-valid-file", "listing_filters:keep_even"],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    ds = LMDBReader(tmp_path / "out" / "train.lmdb")
    assert [path for path, _ in ds.samples] == ["a/0.jpg", "b/0.jpg"]
    # a name that does not import: refused before anything runs, with the fix
    refused = subprocess.run(
        [*command, "--is-valid-file", "listing_filters:absent", "--overwrite"],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )
    assert refused.returncode != 0 and "listing_filters has no absent" in refused.stderr, refused.stderr[-2000:]


#: The last commit before the listing settings: a dataset it made must read as up to date after the upgrade.
BEFORE_LISTING_OPTIONS = "e2ffe91"


@pytest.mark.slow  # an earlier workflow runs again
def test_a_dataset_made_before_the_listing_settings_is_up_to_date_after_the_upgrade(
    image_tree: Path, tmp_path: Path
) -> None:
    snakefile = workflow_at(BEFORE_LISTING_OPTIONS, tmp_path / "before")
    if snakefile is None:
        pytest.skip(f"commit {BEFORE_LISTING_OPTIONS} is not in this clone's history")
    workdir = tmp_path / "run"
    convert_with(
        snakefile, workdir, {"train": {"source": str(image_tree), "shards": 2}}, package=snakefile.parent / "src"
    )
    made = (workdir / "results" / "train.lmdb").read_bytes()
    again = run_snakemake(workdir, "--configfile", str(workdir / "config.yaml")).check()
    assert "Nothing to be done" in again.output, again.output[-3000:]
    assert (workdir / "results" / "train.lmdb").read_bytes() == made
