"""The restructuring into one home per concept (issue 15), the move into one package with one
import root (issue 22), and the package's grouping into subpackages (issue 29, every kind of source)
changed no output: the same sources converted by the workflow as it was
before each (a fixed commit, taken from git) and as it is now give the same records and meta, byte
for byte, apart from the creation time."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from imagefolder_lmdb.reader import LMDBDataset
from support import BIN, REPO
from support.archives import make_tar, make_zip
from support.datasets import every_key_and_value, without_later_additions
from support.ilsvrc import make_train_tar, make_val_split
from support.images import jpeg_bytes
from support.kaggle import DATA as KAGGLE_DATA
from support.kaggle import make_kaggle_zip
from support.parquet import Row, write_hf_parquet
from support.wds_shards import make_shards, make_wds_devkit, tree_samples
from support.workflow import convert_with, executed_jobs, workflow_at

pytestmark = pytest.mark.slow  # earlier workflows run again: make test runs it, -m "not slow" leaves it out

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


#: The commit issue 51 starts from (one table of rules, no re-export modules, the reader's URL openers).
#: It was itself byte-identical, by this same test, to 4437b24, where the floor plan of issue 42 started
#: (settings one object per rule, a source kind one module), and that to 49bd12b, the last commit
#: before the package was grouped into subpackages (issue 29).
#: The commit issue 51 (the house) started from.
BEFORE_HOUSE = "e2ffe91ed2b3b00c572cd6386f06d1b68a6908c5"
#: The last commit before sources became two axes (issue 52: where the bytes are x how labels are found).
BEFORE_AXES = "d783f5df2e7b4198ee8d2e076f8d94dbb329a915"
#: The commit issue 62 (a labelling answers for itself: its settings one mapping) started from.
BEFORE_LABELLING = "e2bcdc01def96ae7daf2f344db7fb9ba00e022da"
#: Sizes kept small: every kind of source is converted twice, by the workflow then and now.
WDS_PER_FILE, PARQUET_ROWS, PARQUET_GROUP = 15, 10, 4


def every_kind_of_source(tree: Path, base: Path) -> dict[str, dict[str, Any]]:
    """One split per kind of source, made of small generated data: a folder, a tar, a zip, the
    ILSVRC2012 train tar of class tars and val tar with its devkit, Kaggle's zip (train and val read
    in place), WebDataset tar files and Hugging Face Parquet files. Each split its own classes."""
    own = {"share_classes": False}
    for folder in ("ilsvrc", "kaggle", "wds_scratch"):
        (base / folder).mkdir(parents=True)
    wnids = sorted(path.name for path in tree.iterdir())
    make_train_tar(tree, base / "ILSVRC2012_img_train.tar")
    val = make_val_split(base / "ilsvrc", wnids, lambda n: wnids[n % len(wnids)], 6, seed=6, first_index=500)
    kaggle = make_kaggle_zip(base / "kaggle", classes=2, train_images=6, val_images=4, test_images=1)
    names, samples = tree_samples(tree)
    wds = make_shards(base / "wds", names, samples, WDS_PER_FILE)
    wds_devkit = make_wds_devkit(base / "wds_devkit.tar.gz", names, base / "wds_scratch")
    rows = [Row(jpeg_bytes(i), f"img_{i:03d}.JPEG", i % len(wnids)) for i in range(PARQUET_ROWS)]
    parquet = write_hf_parquet(base / "train-00000-of-00001.parquet", rows, wnids, PARQUET_GROUP)
    return {
        "folder": {"source": str(tree), "shards": 3, **own},
        "tar": {"source": str(make_tar(tree, base / "tree.tar")), "shards": 2, **own},
        "zip": {"source": str(make_zip(tree, base / "tree.zip")), "shards": 2, **own},
        "ilsvrc_train": {"source": str(base / "ILSVRC2012_img_train.tar"), "layout": "ilsvrc-train", **own},
        "ilsvrc_val": {"source": str(val.val_tar), "layout": "ilsvrc-val", "devkit": str(val.devkit), **own},
        "kaggle_train": {"source": str(kaggle.zip), "root": f"{KAGGLE_DATA}/train", "shards": 2, **own},
        "kaggle_val": {
            "source": str(kaggle.zip),
            "root": f"{KAGGLE_DATA}/val",
            "layout": "ilsvrc-val",
            "val_labels": "LOC_val_solution.csv",
            **own,
        },
        "webdataset": {"source": str(wds.folder / "*.tar"), "layout": "webdataset", "devkit": str(wds_devkit), **own},
        "parquet": {"source": str(parquet), "layout": "parquet", "shards": 2, **own},
    }


@pytest.mark.timeout(2400)  # four workflows convert every kind (pyproject's 900 s ran out on a loaded 2-core machine)
def test_every_kind_of_source_is_byte_identical_to_the_workflows_before_the_house_the_two_axes_and_the_labelling(
    image_tree: Path, tmp_path: Path
) -> None:
    """Every record and meta value, byte for byte, the creation time apart, against each earlier
    workflow, run with its own package (its rules import it), not today's. The work folders of the
    commits before the two axes and before the labelling's one mapping, given to today's workflow,
    rerun nothing; the datasets of each, given to today's command, have nothing to convert."""
    splits = every_kind_of_source(image_tree, tmp_path / "sources")
    skip_bad = {"encode": {"on_error": "skip"}}  # Kaggle's zip holds a truncated JPEG
    now = tmp_path / "now"
    convert_with(REPO / "Snakefile", now, splits, **skip_bad)
    for commit in (BEFORE_HOUSE, BEFORE_AXES, BEFORE_LABELLING):
        snakefile = workflow_before(tmp_path / f"repo-{commit[:7]}", commit)
        before = tmp_path / f"before-{commit[:7]}"
        convert_with(snakefile, before, splits, package=snakefile.parent / "src", **skip_bad)
        for split in splits:
            assert_same_split(before / "results" / f"{split}.lmdb", now / "results" / f"{split}.lmdb", split)
        # its datasets, made before label files were recorded in made_from, read as made from the same
        upgraded = [BIN / "imagefolder-lmdb", "convert", "--configfile", "config.yaml"]
        rerun = subprocess.run(list(map(str, upgraded)), capture_output=True, text=True, check=False, cwd=before)
        assert rerun.returncode == 0 and "every output is up to date" in rerun.stdout + rerun.stderr, commit
    for commit in (BEFORE_AXES, BEFORE_LABELLING):
        assert_reruns_nothing_new(tmp_path / f"before-{commit[:7]}")


def assert_reruns_nothing_new(before: Path) -> None:
    """The work folder an earlier workflow left, given to today's: nothing to be done; listed again
    by today's count_check, each split's manifest keeps its bytes: no merge or encode runs."""
    command = [BIN / "snakemake", "-s", REPO / "Snakefile", "-d", before, "--configfile", before / "config.yaml"]
    dry = subprocess.run([*map(str, command), "--cores", "2", "--dry-run"], capture_output=True, text=True, check=False)
    assert dry.returncode == 0 and "Nothing to be done" in dry.stdout + dry.stderr, (dry.stdout + dry.stderr)[-3000:]
    relisted = subprocess.run(
        [*map(str, command), "--cores", "2", "--forcerun", "count_check"], capture_output=True, text=True, check=False
    )
    jobs = executed_jobs(relisted.stdout + relisted.stderr)
    assert relisted.returncode == 0 and "count_check" in jobs, (relisted.stdout + relisted.stderr)[-3000:]
    assert not [job for job in jobs if job.startswith(("encode_shard", "merge"))], jobs


def assert_same_split(before: Path, now: Path, split: str) -> None:
    """Every key and value of the two files equal, the meta's creation time apart."""
    items_before, items_now = every_key_and_value(before), every_key_and_value(now)
    meta_before, meta_now = (json.loads(items.pop(b"meta/json")) for items in (items_before, items_now))
    meta_before.pop("created")
    meta_now.pop("created")
    assert meta_now == meta_before, split
    assert items_now.keys() == items_before.keys(), split
    assert all(items_now[key] == items_before[key] for key in items_now), f"{split}: a record or meta array differs"
    assert len(LMDBDataset(now)) > 0, split
