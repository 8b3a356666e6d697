"""Every restructuring changed no output: the same sources, one split of every kind, converted by the
workflow as it was at a fixed earlier commit (taken from git, run with its own package) and as it is
now give the same records and meta, byte for byte, apart from the creation time; the earlier commit's
work folder, given to today's workflow, reruns nothing new.

One earlier commit is run: the last one this test passed at in CI. Each earlier constant was in its
turn compared by this module with the ones before it, so the chain holds by transitivity and costs
one earlier conversion, not one per restructuring: 42ef07b (issue 62 started from it) equals e2bcdc0
and d783f5d (sources as two axes, issue 52) and e2ffe91 (the house, issue 51), which equalled 4437b24
(the floor plan, issue 42) and 49bd12b (subpackages, issue 29); cf509c5 (one import root, issue 22:
the whole file, record locations included) and a0e36bc (one home per concept, issue 15) were compared
on a folder and a tar sharing one class list, which the folder and tar splits below still are."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from imagefolder_lmdb.reader import LMDBDataset
from support import BIN, REPO
from support.archives import make_tar, make_zip
from support.datasets import every_key_and_value
from support.ilsvrc import make_train_tar, make_val_split
from support.images import jpeg_bytes
from support.kaggle import DATA as KAGGLE_DATA
from support.kaggle import make_kaggle_zip
from support.parquet import Row, write_hf_parquet
from support.wds_shards import make_shards, make_wds_devkit, tree_samples
from support.workflow import convert_with, executed_jobs, workflow_at

pytestmark = pytest.mark.slow  # earlier workflows run again: make test runs it, -m "not slow" leaves it out

#: The commit this round (issues 58-62) started from, which passed this module in CI; see the docstring.
BEFORE = "42ef07b78dd634f8e03a5481b27b0fddb1bb2351"
#: Sizes kept small: every kind of source is converted twice, by the workflow then and now.
WDS_PER_FILE, PARQUET_ROWS, PARQUET_GROUP = 15, 10, 4


def workflow_before(into: Path, commit: str = BEFORE) -> Path:
    """The repository as it was at ``commit``, unpacked into ``into``; returns its Snakefile."""
    snakefile = workflow_at(commit, into)
    if snakefile is None:
        pytest.skip(f"commit {commit[:10]} is not in this clone's history")
    return snakefile


def every_kind_of_source(tree: Path, base: Path) -> dict[str, dict[str, Any]]:
    """One split per kind of source, made of small generated data: a folder, a tar, a zip, the
    ILSVRC2012 train tar of class tars and val tar with its devkit, Kaggle's zip (train and val read
    in place), WebDataset tar files and Hugging Face Parquet files. Each split its own classes, but the
    folder and the tar of the same tree, which share one class list (the default). A few shards each
    (the schema's default, 16, would be an encode job per image or two, run twice), one split with
    more shards than images."""
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
        "folder": {"source": str(tree), "shards": 3},
        "tar": {"source": str(make_tar(tree, base / "tree.tar")), "shards": 2},
        "zip": {"source": str(make_zip(tree, base / "tree.zip")), "shards": 2, **own},
        "ilsvrc_train": {
            "source": str(base / "ILSVRC2012_img_train.tar"),
            "layout": "ilsvrc-train",
            "shards": 2,
            **own,
        },
        # more shards than images: empty shards, merged as before
        "ilsvrc_val": {
            "source": str(val.val_tar),
            "layout": "ilsvrc-val",
            "devkit": str(val.devkit),
            "shards": 8,
            **own,
        },
        "kaggle_train": {"source": str(kaggle.zip), "root": f"{KAGGLE_DATA}/train", "shards": 2, **own},
        "kaggle_val": {
            "source": str(kaggle.zip),
            "root": f"{KAGGLE_DATA}/val",
            "layout": "ilsvrc-val",
            "val_labels": "LOC_val_solution.csv",
            "shards": 2,
            **own,
        },
        "webdataset": {
            "source": str(wds.folder / "*.tar"),
            "layout": "webdataset",
            "devkit": str(wds_devkit),
            "shards": 2,
            **own,
        },
        "parquet": {"source": str(parquet), "layout": "parquet", "shards": 2, **own},
    }


def test_every_kind_of_source_is_byte_identical_to_the_workflow_before(image_tree: Path, tmp_path: Path) -> None:
    """Every record and meta value, byte for byte, the creation time apart, against the earlier workflow,
    run with its own package (its rules import it), not today's. Its work folder, given to today's
    workflow, reruns nothing; its datasets, given to today's command, have nothing to convert."""
    splits = every_kind_of_source(image_tree, tmp_path / "sources")
    skip_bad = {"encode": {"on_error": "skip"}}  # Kaggle's zip holds a truncated JPEG
    now = tmp_path / "now"
    convert_with(REPO / "Snakefile", now, splits, **skip_bad)
    snakefile = workflow_before(tmp_path / "repo-before", BEFORE)
    before = tmp_path / "before"
    convert_with(snakefile, before, splits, package=snakefile.parent / "src", **skip_bad)
    for split in splits:
        assert_same_split(before / "results" / f"{split}.lmdb", now / "results" / f"{split}.lmdb", split)
    upgraded = [BIN / "imagefolder-lmdb", "convert", "--configfile", "config.yaml"]
    rerun = subprocess.run(list(map(str, upgraded)), capture_output=True, text=True, check=False, cwd=before)
    assert rerun.returncode == 0 and "every output is up to date" in rerun.stdout + rerun.stderr, rerun.stderr[-3000:]
    assert_reruns_nothing_new(before)


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
