"""End to end: an ImageFolder tree through the real snakemake CLI, compared with torchvision."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from torchvision.datasets import ImageFolder

from imagefolder_lmdb.board.rule_table import TIMED_RULES
from imagefolder_lmdb.reader import LMDBDataset
from support.images import TREE_CLASSES, TREE_IMAGES
from support.workflow import Converted, run_snakemake, write_config

#: The rules every run has (board/rule_table.py); report_split runs only for --report.
RULES = [rule.name for rule in TIMED_RULES if rule.runs(merging=True)]  # a run of the default: one file, merged


def relative(path: str, root: Path) -> str:
    return os.path.relpath(path, root).replace(os.sep, "/")


def test_parity_with_imagefolder(converted: Converted) -> None:
    reference = ImageFolder(str(converted.source))
    ds = LMDBDataset(converted.lmdb)
    assert len(ds) == len(reference) == TREE_IMAGES
    assert ds.classes == reference.classes
    assert ds.class_to_idx == reference.class_to_idx
    assert ds.targets == reference.targets
    assert [path for path, _ in ds.samples] == [relative(path, converted.source) for path, _ in reference.samples]
    assert ds.imgs == ds.samples
    for index in range(len(ds)):
        image, target = ds[index]
        expected, expected_target = reference[index]
        assert target == expected_target
        assert image.mode == "RGB"
        if ds.storage_reason(index) == "passthrough":
            assert np.array_equal(np.asarray(image), np.asarray(expected)), ds.samples[index]
        else:
            assert image.size == expected.size, ds.samples[index]


def test_passthrough_values_are_the_source_bytes(converted: Converted) -> None:
    ds = LMDBDataset(converted.lmdb)
    passed = [i for i in range(len(ds)) if ds.storage_reason(i) == "passthrough"]
    assert len(passed) == TREE_IMAGES - 4  # all but the four oddities the generator plants
    for index in passed:
        assert ds.get_bytes(index) == (converted.source / ds.samples[index][0]).read_bytes()


def test_oddities_are_found_by_content_and_reencoded(converted: Converted) -> None:
    ds = LMDBDataset(converted.lmdb)
    reasons = {ds.samples[i][0]: ds.storage_reason(i) for i in range(len(ds)) if ds.storage_reason(i) != "passthrough"}
    assert sorted(reasons.values()) == [
        "reencoded:cmyk",
        "reencoded:grayscale",
        "reencoded:not-jpeg",
        "reencoded:not-jpeg",
    ]
    png_named_jpeg = [
        path for path, reason in reasons.items() if reason == "reencoded:not-jpeg" and path.endswith(".JPEG")
    ]
    assert len(png_named_jpeg) == 1
    for index in range(len(ds)):
        assert ds.get_bytes(index)[:2] == b"\xff\xd8", "every stored value is a JPEG"
        assert ds.check_crc(index)


def test_reencode_never_keeps_every_pixel(image_tree: Path, convert_in_tmp) -> None:
    result = convert_in_tmp(image_tree, encode={"reencode": "never"})
    result.run.check()
    reference = ImageFolder(str(image_tree))
    ds = LMDBDataset(result.lmdb)
    for index in range(len(ds)):
        assert ds.get_bytes(index) == Path(reference.samples[index][0]).read_bytes()
        assert np.array_equal(np.asarray(ds[index][0]), np.asarray(reference[index][0]))


def test_max_side_shrinks_larger_images(image_tree: Path, convert_in_tmp) -> None:
    result = convert_in_tmp(image_tree, encode={"max_side": 400})
    result.run.check()
    ds = LMDBDataset(result.lmdb)
    reference = ImageFolder(str(image_tree))
    shrunk = 0
    for index in range(len(ds)):
        image, _ = ds[index]
        width, height = reference[index][0].size
        assert max(image.size) <= 400
        assert tuple(ds.image_sizes[index]) == image.size
        if max(width, height) > 400:
            shrunk += 1
            assert ds.storage_reason(index) in (
                "reencoded:resized",
                "reencoded:cmyk",
                "reencoded:grayscale",
                "reencoded:not-jpeg",
            )
    assert shrunk > 0


def test_verify_report_and_contact_sheet(converted: Converted) -> None:
    report = json.loads(converted.verify_report.read_text())
    assert report["ok"] is True
    assert report["images"] == TREE_IMAGES
    assert report["classes"] == TREE_CLASSES
    assert report["storage"]["passthrough"] == TREE_IMAGES - 4
    assert report["skipped"] == []
    assert report["source_bytes"] > 0 and report["stored_bytes"] > 0
    assert report["checked"]["failed"] == 0
    contact = converted.lmdb.with_suffix(".contact.png")
    assert contact.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "train: 40 images, 4 classes, verified" in converted.run.output


# The tests that run snakemake in the shared conversion's folder, or copy it: one after the other, on
# one worker (two snakemake runs at once in one folder would contend for its lock).
SHARED_WORKDIR = pytest.mark.xdist_group("converted-workdir")


@SHARED_WORKDIR
def test_second_run_has_nothing_to_do(converted: Converted) -> None:
    outputs = sorted((converted.workdir / "results").iterdir())
    before = {path: (path.stat().st_mtime_ns, path.read_bytes()) for path in outputs}
    run = run_snakemake(converted.workdir, "--configfile", str(converted.workdir / "config.yaml")).check()
    assert "Nothing to be done" in run.output
    assert {path: (path.stat().st_mtime_ns, path.read_bytes()) for path in outputs} == before


def test_dry_run_lists_the_six_rules(image_tree: Path, tmp_path: Path) -> None:
    config = write_config(tmp_path, {"train": {"source": str(image_tree), "shards": 5}})
    run = run_snakemake(tmp_path, "-n", "--configfile", str(config)).check()
    for rule in RULES:  # count_check is a checkpoint
        assert any(f"{kind} {rule}:" in run.output for kind in ("rule", "localrule", "checkpoint")), rule
    assert run.output.count("rule encode_shard:") == 5
    assert not (tmp_path / "work").exists(), "a dry run writes nothing"


def test_no_temporary_files_left_and_no_parts(converted: Converted) -> None:
    leftovers = [p for p in converted.workdir.rglob("*") if p.name.endswith((".incomplete", ".lmdb-lock"))]
    assert leftovers == []
    assert not (converted.workdir / "work" / "train" / "merged.lmdb").exists(), "merged is temp()"
    parts = sorted(p.name for p in (converted.workdir / "work" / "train" / "parts").glob("*.lmdb"))
    assert parts == [], "temp(): removed once merged (keep_parts: false)"


@SHARED_WORKDIR  # copies that folder: never while another test runs snakemake in it
def test_notemp_keeps_the_merged_file_and_fewer_shards_leave_no_other_parts(
    converted: Converted, tmp_path: Path
) -> None:
    # the shared run's folder (3 shards) copied, rather than a conversion of its own: the 2-shard run
    # must remove the third shard's files that the first run left
    workdir = tmp_path / "run"
    shutil.copytree(converted.workdir, workdir, symlinks=True)
    assert (workdir / "work" / "train" / "parts" / "00002.json").exists(), "the first run had a third shard"
    config = write_config(workdir, {"train": {"source": str(converted.source), "shards": 2}})
    run_snakemake(workdir, "--configfile", str(config), "--notemp").check()
    names = sorted(p.name for p in (workdir / "work" / "train" / "parts").iterdir())
    assert names == [f"0000{n}.{suffix}" for n in range(2) for suffix in ("json", "lmdb", "progress")]
    assert (workdir / "work" / "train" / "merged.lmdb").exists()


@SHARED_WORKDIR
def test_html_report_holds_verify_contact_histogram_and_benchmarks(converted: Converted, tmp_path: Path) -> None:
    report = tmp_path / "report.html"
    config = str(converted.workdir / "config.yaml")
    run_snakemake(converted.workdir, "--configfile", config, "--report", str(report)).check()
    html = report.read_text()
    for label in ("verify report", "contact sheet", "images per class", "job benchmarks"):
        assert label in html, label
    benchmarks = (converted.workdir / "results" / "train.benchmarks.tsv").read_text().splitlines()
    jobs = {line.split("\t")[0] for line in benchmarks[1:]}
    assert {"extract/train", "count_check/train", "merge/train", "write_meta/train", "verify/train"} <= jobs
    assert len([job for job in jobs if job.startswith("encode_shard/train/")]) == 3
    assert benchmarks[0].split("\t")[:4] == ["job", "s", "h:m:s", "max_rss"]
