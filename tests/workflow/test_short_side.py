"""``encode.short_side`` (issue 23): a copy prepared for training at the size its transforms use.

Images of many sizes, aspect ratios, formats and modes (support/odd_images.py) are converted with
``short_side`` and without it: each stored image's shorter side is min(its own, N), its aspect the
source's within a pixel, and everything else (labels, order, names, the bytes of images within N)
is the pass-through conversion's. The file says what it is; resumed and failed runs give the clean
run's file; a file converted before the setting existed reads exactly as before.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import lmdb
import numpy as np
import pytest
from PIL import Image
from torchvision.datasets import ImageFolder

from imagefolder_lmdb.reader import META_KEYS, LMDBDataset, close_all_envs
from support import REPO
from support.commands import run_script
from support.datasets import assert_same_dataset, every_key_and_value, records_and_meta, without_later_additions
from support.odd_images import EXIF_ORIENTATION, make_odd_tree
from support.workflow import (
    Converted,
    convert,
    convert_with,
    kill_group,
    run_snakemake,
    start_snakemake,
    wait_for_hold,
    workflow_at,
    write_config,
)

N = 64
SHARDS = 3
PREPARED = {"short_side": N, "quality": 90}
#: The workflow just before short_side existed.
BEFORE_SHORT_SIDE = "cf509c58eafeb78da87cfe443edf055bbe7c013a"


@pytest.fixture(scope="module")
def odd_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_odd_tree(tmp_path_factory.mktemp("odd") / "train")


@pytest.fixture(scope="module")
def as_is(odd_tree: Path, tmp_path_factory: pytest.TempPathFactory) -> Converted:
    """The same tree converted without short_side (the pass-through conversion)."""
    result = convert(tmp_path_factory.mktemp("as-is"), odd_tree, shards=SHARDS, encode={"quality": 90})
    result.run.check()
    return result


@pytest.fixture(scope="module")
def prepared(odd_tree: Path, tmp_path_factory: pytest.TempPathFactory) -> Converted:
    result = convert(tmp_path_factory.mktemp("prepared"), odd_tree, shards=SHARDS, encode=PREPARED)
    result.run.check()
    return result


def mean_difference(stored: Image.Image, source: Image.Image) -> float:
    """Mean absolute pixel difference between ``stored`` and ``source`` brought to its size."""
    expected = np.asarray(source.resize(stored.size, Image.Resampling.BILINEAR), dtype=np.float64)
    return float(np.abs(np.asarray(stored, dtype=np.float64) - expected).mean())


def test_shorter_side_is_min_of_its_own_and_n_aspect_kept(prepared: Converted, odd_tree: Path) -> None:
    reference, ds = ImageFolder(str(odd_tree)), LMDBDataset(prepared.lmdb)
    assert len(ds) == len(reference)
    for index in range(len(ds)):
        source, stored = reference[index][0], ds[index][0]
        (width, height), (stored_width, stored_height) = source.size, stored.size
        name = ds.samples[index][0]
        assert tuple(ds.image_sizes[index]) == stored.size, name
        assert min(stored.size) == min(width, height, N), name
        exact_longer = max(width, height) * min(stored.size) / min(width, height)
        assert abs(max(stored.size) - exact_longer) < 1, name
        assert stored_width >= stored_height if width >= height else stored_width <= stored_height, name
        resized = min(width, height) > N
        assert (ds.storage_reason(index) == "reencoded:resized") == resized, name
        if resized:  # the source's pixels, as ImageFolder's loader sees them (not rotated), smaller
            assert mean_difference(stored, source) < 4, name


def test_labels_order_and_small_images_are_the_pass_through_conversions(
    prepared: Converted, as_is: Converted, odd_tree: Path
) -> None:
    ds, plain = LMDBDataset(prepared.lmdb), LMDBDataset(as_is.lmdb)
    assert ds.samples == plain.samples and ds.targets == plain.targets and ds.classes == plain.classes
    reference = ImageFolder(str(odd_tree))
    assert [path for path, _ in ds.samples] == [Path(p).relative_to(odd_tree).as_posix() for p, _ in reference.samples]
    kept = [i for i in range(len(ds)) if ds.storage_reason(i) != "reencoded:resized"]
    assert len(kept) >= 8, "images within N of every kind: passed through or re-encoded as without short_side"
    for index in kept:
        assert ds.get_bytes(index) == plain.get_bytes(index), ds.samples[index][0]
        assert ds.storage_reason(index) == plain.storage_reason(index)
    assert {plain.storage_reason(i) for i in kept} >= {"passthrough", "reencoded:grayscale", "reencoded:not-jpeg"}


def test_exif_orientation_is_left_as_imagefolder_leaves_it(prepared: Converted, odd_tree: Path) -> None:
    ds = LMDBDataset(prepared.lmdb)
    index = {path: i for i, (path, _) in enumerate(ds.samples)}
    rotated = ds.get_bytes(index["c_exif/rotated_6.JPEG"])  # 320x160 in the file, a viewer shows it upright
    assert Image.open(io.BytesIO(rotated)).size == (128, 64), "the pixels as they lie in the file"
    assert EXIF_ORIENTATION not in Image.open(io.BytesIO(rotated)).getexif(), "no tag that would rotate them"
    small = ds.get_bytes(index["c_exif/rotated_small.JPEG"])  # within N: the source's bytes, tag and all
    assert small == (odd_tree / "c_exif" / "rotated_small.JPEG").read_bytes()


def test_the_file_says_what_it_is(prepared: Converted, as_is: Converted) -> None:
    ds, plain = LMDBDataset(prepared.lmdb), LMDBDataset(as_is.lmdb)
    assert (ds.short_side, ds.max_side) == (N, None)
    assert (plain.short_side, plain.max_side) == (None, None)
    assert f"Resized at conversion: shorter side <= {N}" in repr(ds)
    assert "Resized" not in repr(plain)
    assert ds.meta_document["settings"]["encode"]["short_side"] == N
    assert plain.meta_document["settings"]["encode"]["short_side"] is None
    resized = sum(ds.storage_reason(i) == "reencoded:resized" for i in range(len(ds)))
    report = json.loads(prepared.verify_report.read_text())
    assert report["ok"] is True
    assert report["storage"]["reencoded:resized"] == resized > 0
    assert report["settings"]["encode"]["short_side"] == N
    assert f"resized: {resized} images shrunk to a shorter side at most {N}" in prepared.run.output
    assert "resized:" not in as_is.run.output
    assert report["stored_bytes"] < json.loads(as_is.verify_report.read_text())["stored_bytes"]


def stored_size_by_the_rules(width: int, height: int, short_side: int, max_side: int) -> tuple[int, int]:
    """The documented rules (docs/FORMAT.md), written out again: short_side first, rounded down,
    then max_side caps the longer side, rounded to nearest."""
    size = (width, height)
    if min(size) > short_side:
        size = (
            (short_side, height * short_side // width)
            if width <= height
            else (width * short_side // height, short_side)
        )
    if max(size) > max_side:
        scale = max_side / max(width, height)
        size = (max(1, round(width * scale)), max(1, round(height * scale)))
    return size


def test_max_side_caps_the_longer_side_after_short_side(odd_tree: Path, convert_in_tmp) -> None:
    result = convert_in_tmp(odd_tree, shards=2, encode={"short_side": N, "max_side": 100, "quality": 90})
    result.run.check()
    reference, ds = ImageFolder(str(odd_tree)), LMDBDataset(result.lmdb)
    capped = 0
    for index in range(len(ds)):
        width, height = reference[index][0].size
        stored = ds[index][0].size
        assert stored == stored_size_by_the_rules(width, height, N, 100), ds.samples[index][0]
        assert min(stored) <= N and max(stored) <= 100
        capped += max(stored) == 100 and min(width, height) > N
        assert (ds.storage_reason(index) == "reencoded:resized") == (stored != (width, height))
    assert capped >= 3, "images whose shorter side was brought to N and whose longer side was still too long"
    assert "shorter side <= 64, longer side <= 100" in repr(ds)


@pytest.mark.parametrize("moment", ["encode_shard:1", "write_meta"])
def test_killed_then_rerun_gives_the_clean_runs_file(
    moment: str, odd_tree: Path, prepared: Converted, tmp_path: Path
) -> None:
    write_config(
        tmp_path, {"train": {"source": str(odd_tree), "shards": SHARDS, "layout": "imagefolder"}}, encode=PREPARED
    )
    process, marker = start_snakemake(tmp_path, hold=moment)
    wait_for_hold(marker, process)
    kill_group(process)
    run_snakemake(tmp_path, "--configfile", str(tmp_path / "config.yaml")).check()
    assert_same_dataset(tmp_path / "results" / "train.lmdb", prepared.lmdb)


def test_failed_shard_fixed_then_rerun_gives_the_clean_runs_file(
    odd_tree: Path, prepared: Converted, tmp_path: Path
) -> None:
    source = tmp_path / "train"
    shutil.copytree(odd_tree, source)
    victim = source / "a_rgb" / "big_portrait.JPEG"  # one that is resized
    original = victim.read_bytes()
    victim.write_bytes(original[: len(original) // 2])  # cut short, as an interrupted download
    config = write_config(tmp_path, {"train": {"source": str(source), "shards": SHARDS}}, encode=PREPARED)
    failed = run_snakemake(tmp_path, "--configfile", str(config), "--keep-going")
    assert failed.returncode != 0 and str(victim) in failed.output
    assert len(list((tmp_path / "work" / "train" / "parts").glob("*.json"))) == SHARDS - 1
    victim.write_bytes(original)
    run_snakemake(tmp_path, "--configfile", str(config)).check()
    assert_same_dataset(tmp_path / "results" / "train.lmdb", prepared.lmdb)


#: What a reader makes of a file, printed as JSON: run with the reader of one version or another.
DESCRIBE = """
import json, sys, zlib
import numpy as np
sys.path.insert(0, sys.argv[1])
from imagefolder_lmdb.reader import LMDBDataset
ds = LMDBDataset(sys.argv[2])
print(json.dumps({
    "repr": repr(ds), "classes": ds.classes, "samples": ds.samples, "targets": ds.targets, "root": ds.root,
    "sizes": ds.image_sizes.tolist(), "storage": [ds.storage_reason(i) for i in range(len(ds))],
    "bytes": [zlib.crc32(ds.get_bytes(i)) for i in range(len(ds))],
    "pixels": [zlib.crc32(np.asarray(ds[i][0]).tobytes()) for i in range(len(ds))],
    "by_offset": ds.reads_by_offset, "document": ds.meta_document,
}))
"""


def described(scripts: Path, path: Path) -> dict:
    """The DESCRIBE of ``path`` by the reader in ``scripts``."""
    completed = subprocess.run(
        [sys.executable, "-c", DESCRIBE, str(scripts), str(path)], capture_output=True, text=True, check=False
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    return json.loads(completed.stdout)


def test_a_file_converted_before_short_side_reads_exactly_as_before(
    odd_tree: Path, as_is: Converted, tmp_path: Path
) -> None:
    snakefile = workflow_at(BEFORE_SHORT_SIDE, tmp_path / "repo-before")
    if snakefile is None:
        pytest.skip(f"commit {BEFORE_SHORT_SIDE[:10]} is not in this clone's history")
    convert_with(
        snakefile, tmp_path / "run", {"train": {"source": str(odd_tree), "shards": SHARDS}}, encode={"quality": 90}
    )
    old_file = tmp_path / "run" / "results" / "train.lmdb"
    assert described(REPO / "scripts", old_file) == described(tmp_path / "repo-before" / "scripts", old_file)
    ds = LMDBDataset(old_file)
    assert "short_side" not in ds.meta_document["settings"]["encode"]
    assert (ds.short_side, ds.max_side) == (None, None)
    # and the workflow now, without short_side, writes what it wrote then (and says it was unset)
    items_now, meta_now = records_and_meta(as_is.lmdb)
    items_before, meta_before = records_and_meta(old_file)
    assert meta_now["settings"]["encode"].pop("short_side") is None
    # records in a leaf page are located too since issue 21 (tiny images here): locations are
    # checked by the locations tests, not here
    meta_now.pop("locations")
    meta_before.pop("locations")
    items_now.pop(b"meta/locations")
    items_before.pop(b"meta/locations")
    assert without_later_additions(meta_now) == without_later_additions(meta_before)
    assert items_now == items_before
    assert every_key_and_value(old_file).keys() == every_key_and_value(as_is.lmdb).keys()


def test_verify_finds_images_larger_than_the_file_says(as_is: Converted, tmp_path: Path) -> None:
    # a file at the source's sizes whose meta claims short_side: what verify must not let pass
    path = tmp_path / "claims.lmdb"
    shutil.copy(as_is.lmdb, path)
    close_all_envs()
    with lmdb.open(str(path), subdir=False, map_size=2 * path.stat().st_size) as env, env.begin(write=True) as txn:
        document = json.loads(txn.get(META_KEYS["json"]))
        document["settings"]["encode"]["short_side"] = N
        txn.put(META_KEYS["json"], json.dumps(document).encode())
    result = run_script("verify.py", path, "--sample", "0")
    assert result.returncode == 1
    assert (
        "records larger than encode.short_side: 64, the first record 1 (a_rgb/big_landscape.JPEG) at 640x480"
        in result.stdout
    )
