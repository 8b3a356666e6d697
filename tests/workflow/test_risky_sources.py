"""Sources as users meet them (issue 21): a split that would end empty or short, Parquet holding
paths where the image bytes should be, a folder linked into itself, valid images JPEG cannot hold
or whose end marker lies before a phone's trailer, and files the file system cannot read. Each
test starts from the fault and checks the words said, the exit status (never a signal), what is
left behind and, where the run succeeds, every record against a clean run's."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from imagefolder_lmdb.reader import LMDBDataset, close_all_envs
from imagefolder_lmdb.run.made_from import RECORDED_VARIABLE
from support import REPO
from support.datasets import every_key_and_value, stored_records
from support.images import TREE_IMAGES
from support.parquet import Row, write_hf_parquet
from support.workflow import Converted, published, run_snakemake, write_config

pytestmark = pytest.mark.usefixtures("fresh_envs")  # the tests open their files afresh

#: The reader just before format version 2 existed (it knows version 1 only).
BEFORE_VERSION_2 = "deae3ccfcf2292e0effd9aa59a0fff3693bf7e70"


def run_split(workdir: Path, split: dict[str, Any], *args: str, **sections: Any) -> Any:
    """One split ``train`` converted in ``workdir`` (not checked)."""
    workdir.mkdir(parents=True, exist_ok=True)
    config = write_config(workdir, {"train": {"shards": 3, **split}}, **sections)
    return run_snakemake(workdir, "--configfile", str(config), *args)


def spoil(images: list[Path]) -> None:
    for image in images:
        image.write_text("not a picture")


def records(path: Path) -> list[bytes]:
    found, _, document = stored_records(path)
    return [found[i] for i in range(document["length"])]


def reasons_line(first: str) -> str:
    return f"(the first: {first}); every one is listed with its reason in the shard reports work/train/parts/*.json."


# -- a split never ends empty or short in silence -----------------------------------------------------


def test_parquet_of_paths_only_stops_in_extract_naming_each_file(image_tree: Path, tmp_path: Path) -> None:
    # what `Dataset.from_dict({"image": paths}).cast_column("image", Image()).to_parquet(...)` writes:
    # the Image struct with its path set and its bytes null, and the Hugging Face metadata
    images = sorted(image_tree.glob("*/*"))
    classes = sorted({image.parent.name for image in images})
    halves = [images[: len(images) // 2], images[len(images) // 2 :]]
    files = []
    for number, half in enumerate(halves):
        rows = [Row(None, str(image), classes.index(image.parent.name)) for image in half]
        files.append(write_hf_parquet(tmp_path / f"train-{number:05d}.parquet", rows, classes, row_group_size=8))
    run = run_split(
        tmp_path / "run",
        {"source": str(tmp_path / "train-*.parquet"), "layout": "parquet", "expected_images": TREE_IMAGES},
        encode={"on_error": "skip"},  # what the earlier message advised: it must not end in an empty file
    )
    assert run.returncode == 1, run.output[-3000:]
    expected = "\n".join(
        [
            "ERROR in rule extract: 2 of the 2 Parquet files hold no image bytes in any row, in column 'image':",
            *(
                f"  {file}: all {len(half)} rows hold a file path only (the first: '{half[0]}'), not the image's bytes"
                for file, half in zip(files, halves, strict=True)
            ),
            "Write them again with the image bytes embedded: with `datasets`, `ds = ds.with_format('arrow')"
            ".map(datasets.table.embed_table_storage, batched=True)` before `ds.to_parquet(...)` (what "
            "`push_to_hub` does), or build the column from each file's bytes.",
        ]
    )
    assert expected in run.output
    assert "on_error: skip" not in run.output and "(Nonex)" not in run.output
    assert not (tmp_path / "run" / "work" / "train" / "source").exists()
    assert published(tmp_path / "run" / "results") == []


def test_a_split_whose_every_image_is_skipped_stops_instead_of_ending_empty(tree_copy: Path, tmp_path: Path) -> None:
    images = sorted(tree_copy.glob("*/*"))
    spoil(images)
    run = run_split(tmp_path / "run", {"source": str(tree_copy)}, encode={"on_error": "skip"})
    assert run.returncode == 1, run.output[-3000:]
    first = f"{images[0]}: not an image Pillow can read (an unknown format, or damaged from its first bytes)"
    assert (
        f"ERROR in rule merge: split train: none of its {TREE_IMAGES} images could be stored, every one was "
        f"skipped as bad {reasons_line(first)[:-1]}. A dataset of no image is no result: check that "
        "splits.train.source and layout name the images themselves, fix them and run the same command again."
    ) in run.output
    assert "(Nonex)" not in run.output
    assert not (tmp_path / "run" / "results" / "train.lmdb").exists()
    assert not (tmp_path / "run" / "work" / "train" / "merged.lmdb").exists()


def test_a_split_short_of_expected_images_stops_until_allowed(
    tree_copy: Path, converted: Converted, tmp_path: Path
) -> None:
    bad = [sorted(tree_copy.glob("*/*.JPEG"))[k] for k in (7, 20, 33)]
    spoil(bad)
    split = {"source": str(tree_copy), "expected_images": TREE_IMAGES}
    run = run_split(tmp_path / "run", split, encode={"on_error": "skip"})
    assert run.returncode == 1, run.output[-3000:]
    first = f"{bad[0]}: not an image Pillow can read (an unknown format, or damaged from its first bytes)"
    assert (
        f"ERROR in rule merge: split train: {TREE_IMAGES - 3} images stored, fewer than expected_images "
        f"{TREE_IMAGES} minus allow_skipped 0: 3 were skipped as bad {reasons_line(first)} Fix or remove those "
        "images and run the same command again, or set splits.train.allow_skipped: 3 to accept the split without them."
    ) in run.output
    assert not (tmp_path / "run" / "results" / "train.lmdb").exists()

    run_split(tmp_path / "run", {**split, "allow_skipped": 3}, encode={"on_error": "skip"}).check()
    ds = LMDBDataset(tmp_path / "run" / "results" / "train.lmdb")
    clean = LMDBDataset(converted.lmdb)
    spoilt = {image.relative_to(tree_copy).as_posix() for image in bad}
    kept = [i for i, (path, _) in enumerate(clean.samples) if path not in spoilt]
    assert len(ds) == len(kept) == TREE_IMAGES - 3
    assert records(ds.path) == [records(converted.lmdb)[i] for i in kept]
    assert ds.targets == [clean.targets[i] for i in kept]


# -- each file once -----------------------------------------------------------------------------------


def test_a_folder_linked_into_itself_stops_naming_the_link(tree_copy: Path, tmp_path: Path) -> None:
    from torchvision.datasets.folder import IMG_EXTENSIONS, make_dataset

    folder = sorted(path for path in tree_copy.iterdir() if path.is_dir())[0]
    (folder / "again").symlink_to(".")  # c/again -> .
    in_folder = len(list(folder.glob("*.JPEG"))) + len(list(folder.glob("*.png")))
    imagefolder = make_dataset(str(tree_copy), {folder.name: 0}, extensions=IMG_EXTENSIONS)
    assert len(imagefolder) > 10 * in_folder, "ImageFolder reads the images again at every level of the link"
    run = run_split(tmp_path / "run", {"source": str(tree_copy)})
    assert run.returncode == 1, run.output[-3000:]
    assert (
        f"ERROR in rule count_check: {tree_copy}: 1 folder link(s) lead into folders read elsewhere, so "
        "ImageFolder would read their images twice (through a link to an enclosing folder, once per level: dozens "
        f"of times):\n  {folder}/again -> .: leads to {folder}, already read\nEach image is stored once: remove "
        "these links (or put a copy of the folder in their place, if its images are meant to be stored twice) and "
        "run the same command again."
    ) in run.output
    assert not (tmp_path / "run" / "work" / "train" / "manifest.jsonl").exists()
    assert published(tmp_path / "run" / "results") == []


# -- valid images kept --------------------------------------------------------------------------------


def tall_png() -> tuple[bytes, Image.Image]:
    """A valid 1 x 70000 PNG (a gradient), more than a JPEG's 65,535 rows."""
    pixels = np.stack([np.arange(70000) % 256, np.arange(70000) // 256 % 256, np.full(70000, 7)], axis=1)
    image = Image.fromarray(pixels.astype(np.uint8).reshape(70000, 1, 3), "RGB")
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue(), image


def old_reader(into: Path) -> Path | None:
    """scripts/dataset.py as it was before format version 2, or None when this clone lacks it."""
    shown = subprocess.run(
        ["git", "-C", str(REPO), "show", f"{BEFORE_VERSION_2}:scripts/dataset.py"], capture_output=True, check=False
    )
    if shown.returncode != 0:
        return None
    into.mkdir()
    (into / "dataset.py").write_bytes(shown.stdout)
    return into


def test_an_image_too_large_for_jpeg_is_stored_as_png(tree_copy: Path, converted: Converted, tmp_path: Path) -> None:
    folder = sorted(path for path in tree_copy.iterdir() if path.is_dir())[1]
    data, pixels = tall_png()
    (folder / "zz_tall.png").write_bytes(data)  # sorts last in its class
    run = run_split(tmp_path / "run", {"source": str(tree_copy)})
    run.check()
    path = tmp_path / "run" / "results" / "train.lmdb"
    ds = LMDBDataset(path)
    tall = next(i for i, (name, _) in enumerate(ds.samples) if name.endswith("zz_tall.png"))
    assert ds.storage_reason(tall) == "reencoded:png-too-large-for-jpeg"
    assert ds.image_sizes[tall].tolist() == [1, 70000]
    assert np.array_equal(np.asarray(ds[tall][0]), np.asarray(pixels)), "stored losslessly"
    tensors = LMDBDataset(path, decode="tensor")
    assert np.array_equal(tensors[tall][0].permute(1, 2, 0).numpy(), np.asarray(pixels))
    assert ds.meta_document["version"] == 2 and ds.meta_document["stats"]["skipped"] == []
    clean = records(converted.lmdb)
    assert records(path) == [*clean[:tall], ds.get_bytes(tall), *clean[tall:]]
    assert json.loads(every_key_and_value(converted.lmdb)[b"meta/json"])["version"] == 1, "other files stay v1"

    scripts = old_reader(tmp_path / "old")
    if scripts is None:
        pytest.skip(f"commit {BEFORE_VERSION_2[:10]} is not in this clone's history")
    close_all_envs()
    code = "import sys; sys.path.insert(0, sys.argv[1]); from dataset import LMDBDataset; LMDBDataset(sys.argv[2])"
    opened = subprocess.run([sys.executable, "-c", code, str(scripts), str(path)], capture_output=True, text=True)
    assert opened.returncode == 1
    assert opened.stderr.strip().splitlines()[-1] == (
        f"dataset.FormatError: {path}: imagefolder-lmdb version 2, but this reader knows version 1 only; "
        "use the scripts/dataset.py of the workflow that wrote it"
    )


def test_a_jpeg_with_a_long_trailer_passes_check_header(tree_copy: Path, converted: Converted, tmp_path: Path) -> None:
    clean = LMDBDataset(converted.lmdb)
    index = next(i for i in range(len(clean)) if clean.storage_reason(i) == "passthrough")
    phone = tree_copy / clean.samples[index][0]
    with_trailer = phone.read_bytes() + bytes(6000) + b"SEFT"  # a phone's trailer after the end marker
    phone.write_bytes(with_trailer)
    run_split(tmp_path / "run", {"source": str(tree_copy)}, encode={"check": "header"}).check()
    stored = records(tmp_path / "run" / "results" / "train.lmdb")
    expected = records(converted.lmdb)
    expected[index] = with_trailer
    assert stored == expected


@pytest.mark.parametrize("on_error", ["fail", "skip"])
def test_a_file_the_file_system_cannot_read_stops_its_shard(
    tree_copy: Path, tmp_path: Path, on_error: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # listed as a file, then found a folder when read: the read fails with EISDIR, an OSError of the
    # file system (as EACCES, EIO or ESTALE would), not of the image
    workdir = tmp_path / "run"
    for folder in tree_copy.iterdir():  # settled: the listing stamps cache each folder's listing by its time
        os.utime(folder, (time.time() - 60, time.time() - 60))
    run_split(workdir, {"source": str(tree_copy)}, "--until", "count_check", encode={"on_error": on_error}).check()
    victim = sorted(tree_copy.glob("*/*.JPEG"))[12]
    folder_times = victim.parent.stat()
    victim.unlink()
    victim.mkdir()
    # the class folder's times put back and the source taken as recorded (as the CLI says it has just
    # walked it): the listing stays as it was, so the shard meets the fault when it reads, as with a disk
    # or share that fails between the source's check and the read
    os.utime(victim.parent, ns=(folder_times.st_atime_ns, folder_times.st_mtime_ns))
    monkeypatch.setenv(RECORDED_VARIABLE, str(workdir / "work"))
    run = run_split(workdir, {"source": str(tree_copy)}, "--keep-going", encode={"on_error": on_error})
    assert run.returncode == 1, run.output[-3000:]
    assert (
        f"ERROR in rule encode_shard: {victim}: cannot be read: Is a directory (errno 21, EISDIR). A read error "
        "of the file system, not a damaged image: it is never skipped as one, whatever encode.on_error says. "
        "Check the file and the disk or network share it lies on (permissions, mount, hardware), then run the "
        "same command again."
    ) in run.output
    assert "bad image" not in run.output and "on_error: skip" not in run.output
    reports = [json.loads(path.read_text()) for path in (workdir / "work" / "train" / "parts").glob("*.json")]
    assert len(reports) == 2 and all(report["skipped"] == [] for report in reports), "the other shards finish"
    assert published(workdir / "results") == []
    assert os.path.isdir(victim)
