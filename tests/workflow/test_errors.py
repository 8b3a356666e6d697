"""Bad input: broken images (fail or skip) and config mistakes, caught before any job runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from imagefolder_lmdb.reader import LMDBDataset
from support.images import TREE_IMAGES
from support.workflow import run_snakemake, write_config


def truncate_one_jpeg(tree: Path) -> Path:
    victim = sorted(tree.glob("*/*.JPEG"))[17]
    data = victim.read_bytes()
    victim.write_bytes(data[: len(data) // 2])
    return victim


def test_truncated_jpeg_stops_its_shard_naming_the_file(tree_copy: Path, convert_in_tmp) -> None:
    victim = truncate_one_jpeg(tree_copy)
    result = convert_in_tmp(tree_copy, shards=4)
    assert result.run.returncode != 0
    assert str(victim) in result.run.output
    assert "truncated" in result.run.output
    assert not result.lmdb.exists()


def test_a_failing_shard_names_every_bad_image_in_it(tree_copy: Path, convert_in_tmp) -> None:
    # one round of fixes must be enough: the shard checks all of its images before it fails
    images = sorted(tree_copy.glob("*/*.JPEG"))
    victims = [images[5], images[30]]
    for victim in victims:
        victim.write_text("not a picture")
    result = convert_in_tmp(tree_copy, shards=1)
    assert result.run.returncode != 0
    assert "2 bad images in this shard" in result.run.output
    assert all(str(victim) in result.run.output for victim in victims)
    assert "Fix or remove the files named and run the same command again" in result.run.output


def test_macos_metadata_file_is_named_as_such(tree_copy: Path, convert_in_tmp) -> None:
    class_folder = next(p for p in sorted(tree_copy.iterdir()) if p.is_dir())
    metadata = class_folder / "._photo.JPEG"  # what macOS leaves beside photo.JPEG in a tar
    metadata.write_bytes(b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X        " + bytes(4000))
    result = convert_in_tmp(tree_copy)
    assert result.run.returncode != 0
    assert str(metadata) in result.run.output and "macOS metadata file" in result.run.output


def test_truncated_jpeg_skipped_and_listed(tree_copy: Path, convert_in_tmp) -> None:
    victim = truncate_one_jpeg(tree_copy)
    result = convert_in_tmp(tree_copy, shards=4, encode={"on_error": "skip"})
    result.run.check()
    ds = LMDBDataset(result.lmdb)
    assert len(ds) == TREE_IMAGES - 1
    relative = victim.relative_to(tree_copy).as_posix()
    assert relative not in [path for path, _ in ds.samples]
    report = json.loads(result.verify_report.read_text())
    assert [entry["path"] for entry in report["skipped"]] == [relative]
    assert "truncated" in report["skipped"][0]["reason"]
    assert report["ok"] is True


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"splits": {"train": {"source": "does/not/exist"}}}, "splits.train.source"),
        ({"encode": {"qualty": 90}}, "qualty"),
        ({"encode": {"quality": 101}}, "quality"),
        ({"encode": {"reencode": "sometimes"}}, "reencode"),
        ({"encode": {"reencode": "never", "short_side": 256}}, "encode.short_side: resizing re-encodes"),
        ({"encode": {"short_side": 0}}, "short_side"),
        ({"splits": {"train": {"source": "{tree}", "shards": 0}}}, "shards"),
        ({"splits": {"train": {"source": "{tree}", "expected_images": "many"}}}, "expected_images"),
        ({"splits": {"train": {"source": "{tree}", "classes": ["a"]}}}, "splits.train.classes: classes is a top-level"),
        ({"splits": {"train": {"source": "{tree}/*.parquet"}}}, "are read with layout: webdataset or layout: parquet"),
        ({"splits": {"train": {"source": "{tree}", "layout": "parquet"}}}, "is a folder; name its shard files"),
    ],
)
def test_config_errors_stop_before_any_job(image_tree: Path, tmp_path: Path, change: dict, named: str) -> None:
    splits = change.pop("splits", {"train": {"source": "{tree}"}})
    for split in splits.values():
        split["source"] = split["source"].format(tree=image_tree)
    config = write_config(tmp_path, splits, **change)
    run = run_snakemake(tmp_path, "--configfile", str(config))
    assert run.returncode != 0
    assert named in run.output
    assert not (tmp_path / "work").exists() and not (tmp_path / "results").exists()


def test_count_mismatch_names_the_numbers(image_tree: Path, tmp_path: Path) -> None:
    config = write_config(tmp_path, {"train": {"source": str(image_tree), "expected_images": TREE_IMAGES + 2}})
    run = run_snakemake(tmp_path, "--configfile", str(config))
    assert run.returncode != 0
    assert f"{TREE_IMAGES} images found, expected_images is {TREE_IMAGES + 2} (2 missing)" in run.output


def test_no_config_file_explains_how_to_run(tmp_path: Path) -> None:
    run = run_snakemake(tmp_path)
    assert run.returncode != 0
    assert "--configfile config/demo.yaml" in run.output


def test_files_that_are_no_images_are_named_in_words(tree_copy: Path, convert_in_tmp) -> None:
    # A class whose every file is bad ends up with no record: its label never occurs, so say so.
    bad_class = tree_copy / "zz_bad"
    bad_class.mkdir()
    (bad_class / "empty.jpg").write_bytes(b"")
    (bad_class / "notes.jpg").write_text("not a picture")
    result = convert_in_tmp(tree_copy, encode={"on_error": "skip"})
    result.run.check()
    report = json.loads(result.verify_report.read_text())
    reasons = {Path(entry["path"]).name: entry["reason"] for entry in report["skipped"]}
    assert reasons["empty.jpg"].endswith("an empty file (0 bytes)")
    assert "not an image Pillow can read" in reasons["notes.jpg"] and "BytesIO" not in reasons["notes.jpg"]
    assert report["class_counts"]["zz_bad"] == 0
    assert report["warnings"] == ["class 'zz_bad' has no images: all of its files were skipped as bad (see skipped)"]
    assert "warning: class 'zz_bad' has no images" in result.run.output
