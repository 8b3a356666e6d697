"""ImageFolder's listing arguments in the converter (issue 53): ``extensions``, ``allow_empty`` and
``is_valid_file`` as split settings, tested differentially: each tree converted with a setting lists,
in ``LMDBDataset.samples`` and ``classes``, exactly what torchvision lists called with the same
argument (``DatasetFolder(root, default_loader, extensions=...)``, ``ImageFolder(root, ...)``).

The trees are splits of one run shared with tests/workflow/test_torchvision_checks.py
(tests/support/listing_trees.py); the predicates live in a module of the folder the run starts from
(on PYTHONPATH, as ``imagefolder-lmdb convert`` puts it). An empty class folder without
``allow_empty`` stops the conversion as DatasetFolder stops: test_torchvision_checks.py."""

from __future__ import annotations

import importlib
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
from support.images import jpeg_bytes
from support.listing_trees import PREDICATES, cases_of, listing_run, write_files
from support.workflow import convert_with, run_snakemake, workflow_at

pytestmark = pytest.mark.usefixtures("fresh_envs")

ODD_TREES = ["odd_extensions", "upper_case", "empty_allowed", "half", "seen"]


def torchvision_listing(root: Path, settings: dict[str, Any]) -> DatasetFolder:
    """torchvision's dataset for ``root`` called with the same arguments as the split's settings."""
    if "extensions" in settings:
        return DatasetFolder(str(root), default_loader, extensions=tuple(settings["extensions"]))
    predicate = None
    if "is_valid_file" in settings:
        module, name = settings["is_valid_file"].split(":")
        predicate = getattr(importlib.import_module(module), name)
    return ImageFolder(str(root), is_valid_file=predicate, allow_empty=settings.get("allow_empty", False))


@pytest.fixture
def run(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The shared run (tests/support/listing_trees.py), its predicates importable here; what they are
    given here is logged to this test's own file."""
    folder = listing_run(tmp_path_factory)
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setenv("SEEN_LOG", str(tmp_path / "seen_here.log"))
    return folder


@pytest.mark.parametrize("split", ODD_TREES)
def test_each_tree_lists_what_torchvision_lists_with_the_same_arguments(run: Path, split: str) -> None:
    settings = cases_of(run)[split]["settings"]
    expected = torchvision_listing(run / "trees" / split, settings)
    ds = LMDBDataset(run / "run" / "results" / f"{split}.lmdb")
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


def test_the_predicate_gets_the_strings_imagefolder_passes(run: Path, tmp_path: Path) -> None:
    root = run / "trees" / "seen"
    torchvision_listing(root, cases_of(run)["seen"]["settings"])  # ImageFolder given the folder's absolute path
    passed_here = set((tmp_path / "seen_here.log").read_text().splitlines())
    assert set((run / "seen.log").read_text().splitlines()) == passed_here
    assert str(root / "a" / "2.txt") in passed_here  # every file, not only images
    # the deliberate difference: always the absolute path, as ImageFolder passes for an absolute root
    # (given a relative root, ImageFolder passes relative strings; jobs run in the work folder)
    assert all(os.path.isabs(path) for path in passed_here)


def test_the_predicate_drops_half(run: Path) -> None:
    assert len(LMDBReader(run / "run" / "results" / "half.lmdb")) == 5  # 0, 2 of a; 0, 2, 6 of b


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
    (tmp_path / "listing_filters.py").write_text(PREDICATES)
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
