"""The restructuring into one home per concept (issue 15), and the move into one package with one
import root (issue 22), changed no output: the same sources converted by the workflow as it was
before each (a fixed commit, taken from git) and as it is now give the same records and meta, byte
for byte, apart from the creation time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from imagefolder_lmdb.dataset import LMDBDataset
from support import REPO
from support.archives import make_tar
from support.datasets import every_key_and_value, without_later_additions
from support.workflow import convert_with, workflow_at

#: The last commit before the restructuring (the shared class list had just landed).
BEFORE = "a0e36bc2f8a9066df0c5a9c541f1e2c726dfaf9f"
#: The last commit before the package with one import root (issue 22): it wrote everything this
#: workflow writes, so the whole file is compared, record locations and source root included.
BEFORE_PACKAGE = "cf509c58eafeb78da87cfe443edf055bbe7c013a"
#: What the record locations (issue 14, which landed between the two) add to a file; the workflow
#: before them wrote none, so these are left out of the comparison.
LOCATIONS_KEY = b"meta/locations"


def workflow_before(into: Path, commit: str = BEFORE) -> Path:
    """The repository as it was at ``commit``, unpacked into ``into``; returns its Snakefile."""
    snakefile = workflow_at(commit, into)
    if snakefile is None:
        pytest.skip(f"commit {commit[:10]} is not in this clone's history")
    return snakefile


def comparable(path: Path) -> tuple[dict[bytes, bytes], dict]:
    """Every key and value, the meta JSON parsed, without what may differ: the creation time, and
    what the workflow before did not write yet: the record locations and the source's root (issue 17)."""
    items = every_key_and_value(path)
    items.pop(LOCATIONS_KEY, None)
    document = without_later_additions(json.loads(items.pop(b"meta/json")))
    document.pop("created")
    document.pop("locations", None)
    document["source"].pop("root", None)
    return items, document


def test_output_is_byte_identical_to_the_workflow_before_the_restructuring(image_tree: Path, tmp_path: Path) -> None:
    splits = {
        "train": {"source": str(image_tree), "shards": 3},  # a folder, with every oddity of the test tree
        "val": {"source": str(make_tar(image_tree, tmp_path / "val.tar")), "shards": 2},  # read in place
    }
    before, now = tmp_path / "before", tmp_path / "now"
    convert_with(workflow_before(tmp_path / "repo-before"), before, splits)
    convert_with(REPO / "Snakefile", now, splits)
    for split in splits:
        items_before, meta_before = comparable(before / "results" / f"{split}.lmdb")
        items_now, meta_now = comparable(now / "results" / f"{split}.lmdb")
        assert meta_now == meta_before, split
        assert items_now.keys() == items_before.keys(), split
        assert all(items_now[key] == items_before[key] for key in items_now), f"{split}: a record or meta array differs"
        assert LOCATIONS_KEY in every_key_and_value(now / "results" / f"{split}.lmdb"), "located now"
    # a file that predates source.root: unknown, not guessed; the folder source has one now
    assert LMDBDataset(before / "results" / "train.lmdb").root is None
    assert LMDBDataset(now / "results" / "train.lmdb").root == str(image_tree)
    assert LMDBDataset(now / "results" / "val.lmdb").root is None


def test_output_is_byte_identical_to_the_workflow_before_the_package(image_tree: Path, tmp_path: Path) -> None:
    splits = {
        "train": {"source": str(image_tree), "shards": 3},
        "val": {"source": str(make_tar(image_tree, tmp_path / "val.tar")), "shards": 2},
    }
    before, now = tmp_path / "before", tmp_path / "now"
    convert_with(workflow_before(tmp_path / "repo-before", BEFORE_PACKAGE), before, splits)
    convert_with(REPO / "Snakefile", now, splits)
    for split in splits:
        items_before = every_key_and_value(before / "results" / f"{split}.lmdb")
        items_now = every_key_and_value(now / "results" / f"{split}.lmdb")
        meta_before, meta_now = (
            without_later_additions(json.loads(items.pop(b"meta/json"))) for items in (items_before, items_now)
        )
        meta_before.pop("created")
        meta_now.pop("created")
        assert meta_now == meta_before, split
        assert items_now.keys() == items_before.keys(), split
        assert all(items_now[key] == items_before[key] for key in items_now), f"{split}: a record or meta array differs"
        assert LOCATIONS_KEY in items_now, "located"
