"""What a command-line conversion makes of its SOURCE and of what OUTDIR already holds, without
running anything: the split a lone folder becomes, which differences from an existing dataset
refuse a replacement, and the words for an archive's estimated image count."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from imagefolder_lmdb.config.shards import choose_shards
from imagefolder_lmdb.run.existing import Existing, differences
from imagefolder_lmdb.run.plan import PlanError, plan, split_note, splits_of
from imagefolder_lmdb.run.request import ConvertRequest

ENCODE = {"quality": 95, "on_error": "fail"}


def class_folders(root: Path) -> Path:
    for name in ("cat", "dog"):
        (root / name).mkdir(parents=True)
        (root / name / "a.jpg").write_bytes(b"")
    return root


def test_a_lone_folder_named_after_a_split_is_that_split_and_says_so(tmp_path: Path) -> None:
    val = class_folders(tmp_path / "data" / "val")
    request = ConvertRequest(source=str(val), outdir=str(tmp_path / "out"))
    splits = splits_of(request)
    assert list(splits) == ["val"] and splits["val"]["source"] == str(val)
    assert split_note(request, splits) == [
        f"{val}: treated as split 'val', after its folder's name (--split NAME to choose)"
    ]
    flat = class_folders(tmp_path / "flat")
    assert list(splits_of(ConvertRequest(source=str(flat), outdir=str(tmp_path / "out")))) == ["train"]
    assert list(splits_of(ConvertRequest(source=str(val), outdir=str(tmp_path / "out"), split="test"))) == ["test"]


def existing(skipped: list[dict[str, Any]], on_error: str = "fail") -> Existing:
    document = {
        "classes": ["cat", "dog"],
        "source": {"path": "/data/train"},
        "settings": {"encode": {**ENCODE, "on_error": on_error}},
        "stats": {"skipped": skipped},
    }
    return Existing("/out/train.lmdb", document)


def test_on_error_differs_only_for_a_dataset_that_set_images_aside() -> None:
    split = {"source": "/data/train"}
    skip = {**ENCODE, "on_error": "skip"}
    assert differences(existing([]), split, skip) == []  # nothing set aside: what either setting makes
    bad = [{"index": 3, "path": "cat/x.jpg", "reason": "truncated"}]
    assert differences(existing(bad, "skip"), split, ENCODE) == ["with encode on_error 'skip', not 'fail'"]
    assert differences(existing([]), split, {**ENCODE, "quality": 90}) == ["with encode quality 95, not 90"]


def test_an_archives_count_is_said_to_be_an_estimate_from_its_size(tmp_path: Path) -> None:
    archive = tmp_path / "data.tar"
    archive.write_bytes(b"\0" * 1_100_000)
    config = {"splits": {"train": {"source": str(archive), "root": "data/train"}}}
    [note] = choose_shards(config, 2)
    assert note.startswith(
        "train: 1 shard for an archive of 1.1 MB holding every split (~10 images of ImageNet's mean 110 kB)"
    )


def test_cores_below_one_are_refused_before_anything_runs(tmp_path: Path) -> None:
    # --cores 0 reached Snakemake, which then waited forever for a core to run a job on
    flat = class_folders(tmp_path / "flat")
    for cores, cli, words in [(0, True, "--cores 0"), ("-1", True, "--cores -1"), ("x", False, "cores=... x")]:
        with pytest.raises(PlanError, match=f"^{re.escape(words)}: give a whole number of at least 1, or all$"):
            plan(ConvertRequest(source=str(flat), outdir=str(tmp_path / "out"), cli=cli, cores=cores))
