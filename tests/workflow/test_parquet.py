"""Layout parquet: Parquet files in the Hugging Face hub's form (an ``image`` struct {bytes, path},
an int64 ``label``, ClassLabel names in the ``huggingface`` schema metadata, several row groups)
convert in place, record for record what a plain pyarrow reading of the files gives; damaged or
mislabelled files stop the run naming the file and what to do; a killed run finishes identically."""

from __future__ import annotations

import io
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from imagefolder_lmdb.reader import LMDBDataset, close_all_envs
from support import REPO
from support.datasets import assert_same_dataset
from support.ilsvrc import make_devkit
from support.images import jpeg_bytes
from support.parquet import (
    Row,
    cut_short,
    plain_reading,
    smooth_image_bytes,
    stored_names,
    write_hf_parquet,
    write_plain_parquet,
)
from support.workflow import Run, kill_group, run_snakemake, start_snakemake, wait_for_hold, write_config

#: As imagenet-1k: human-readable names, one of them ("crane") given to two labels.
NAMES = ["tench, Tinca tinca", "goldfish, Carassius auratus", "crane", "crane"]
WNIDS = ["n01440764", "n01443537", "n02012849", "n03126707"]
#: The file rows (of the first file) that hold the oddities.
PNG_ROW, CMYK_ROW, NO_PATH_ROW, TRUNCATED_ROW = 2, 5, 7, 9
ROWS_PER_FILE = (13, 11)
ROW_GROUP = 4
SHARDS = 3


def hub_rows(first: int, count: int) -> list[Row]:
    rows = []
    for i in range(first, first + count):
        image = jpeg_bytes(i, size=(60 + i, 40 + i % 7))
        if i == PNG_ROW:
            image = smooth_image_bytes(i, "PNG")
        elif i == CMYK_ROW:
            image = smooth_image_bytes(i, "JPEG", "CMYK")
        elif i == TRUNCATED_ROW:
            image = image[: len(image) // 2]
        rows.append(Row(image, None if i == NO_PATH_ROW else f"img_{i:04d}_n0000{i % 4}.JPEG", i % len(NAMES)))
    return rows


@dataclass(frozen=True)
class Hub:
    folder: Path
    files: list[Path]  # train-*.parquet, in name order
    devkit: Path

    @property
    def pattern(self) -> str:
        return str(self.folder / "train-*.parquet")


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Hub:
    folder = tmp_path_factory.mktemp("hub") / "data"
    folder.mkdir()
    files, first = [], 0
    for number, count in enumerate(ROWS_PER_FILE):
        path = folder / f"train-{number:05d}-of-{len(ROWS_PER_FILE):05d}.parquet"
        files.append(write_hf_parquet(path, hub_rows(first, count), NAMES, ROW_GROUP))
        first += count
    devkit = folder.parent / "ILSVRC2012_devkit_t12.tar.gz"
    make_devkit(devkit, {i + 1: wnid for i, wnid in enumerate(reversed(WNIDS))}, [1], folder.parent)
    return Hub(folder, files, devkit)


def parquet_split(source: str | list[str], **keys: Any) -> dict[str, Any]:
    return {"source": source, "layout": "parquet", "shards": SHARDS, **keys}


def convert_hub(workdir: Path, splits: dict[str, dict[str, Any]], on_error: str = "skip") -> Run:
    workdir.mkdir(parents=True, exist_ok=True)
    config = write_config(workdir, splits, encode={"on_error": on_error})
    return run_snakemake(workdir, "--configfile", str(config))


@pytest.fixture(scope="module")
def converted(hub: Hub, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The hub's files converted (the truncated image skipped); the workdir."""
    workdir = tmp_path_factory.mktemp("converted")
    convert_hub(workdir, {"train": parquet_split(hub.pattern)}).check()
    return workdir


def class_folders(names: list[str]) -> list[str]:
    """The stored names as class folders: a name shared by labels gets its label."""
    return [f"{name} ({label})" if names.count(name) > 1 else name for label, name in enumerate(names)]


def same_pixels(stored: bytes, original: bytes) -> bool:
    """A re-encoded record shows the source image as ImageFolder's loader sees it (JPEG q95 aside)."""
    a = np.asarray(Image.open(io.BytesIO(stored)).convert("RGB"), dtype=np.int16)
    b = np.asarray(Image.open(io.BytesIO(original)).convert("RGB"), dtype=np.int16)
    return a.shape == b.shape and float(np.abs(a - b).mean()) < 4


def test_records_are_the_rows_of_a_plain_reading(hub: Hub, converted: Path) -> None:
    rows = plain_reading(hub.files)
    kept = [row for number, row in enumerate(rows) if number != TRUNCATED_ROW]
    classes = class_folders(stored_names(hub.files[0]))
    close_all_envs()
    ds = LMDBDataset(converted / "results" / "train.lmdb")
    assert ds.classes == classes and len(ds) == len(kept)
    for index, row in enumerate(kept):
        assert ds.targets[index] == row.label, index
        data = ds.get_bytes(index)
        if ds.storage_reason(index) == "passthrough":
            assert data == row.image, index
        else:
            assert same_pixels(data, row.image), index  # type: ignore[arg-type]
        name = row.path or f"{hub.files[0].stem}-{NO_PATH_ROW}"
        assert ds.samples[index] == (f"{classes[row.label]}/{name}", row.label)  # type: ignore[index]
    reencoded = {ds.storage_reason(i) for i in range(len(ds)) if ds.storage_reason(i) != "passthrough"}
    assert len(reencoded) == 2, "the PNG and the CMYK JPEG"


def test_the_truncated_image_is_skipped_and_named(hub: Hub, converted: Path) -> None:
    close_all_envs()
    skipped = LMDBDataset(converted / "results" / "train.lmdb").meta_document["stats"]["skipped"]
    assert [entry["index"] for entry in skipped] == [TRUNCATED_ROW]
    reason = skipped[0]["reason"]
    assert f"{hub.files[0]}, row {TRUNCATED_ROW}" in reason and f"img_{TRUNCATED_ROW:04d}" in reason


def test_no_per_image_file_is_written(converted: Path) -> None:
    files = [path for path in (converted / "work").rglob("*") if path.is_file()]
    assert not [path for path in files if path.suffix.lower() in (".jpeg", ".jpg", ".png")]
    images = [path for path in files if path.read_bytes()[:4] in (b"\xff\xd8\xff\xe0", b"\x89PNG")]
    assert images == []
    members = (converted / "work" / "train" / "source" / "members.jsonl").read_text().splitlines()
    assert len(members) == sum(ROWS_PER_FILE)


def test_devkit_names_the_labels_and_a_plain_file_with_its_own_columns(hub: Hub, tmp_path: Path) -> None:
    # train: the devkit's WNIDs win over the names the files store (same label order); val: a
    # binary column and an int32 one, named otherwise, no metadata: labels named by train's list
    plain_rows = [Row(jpeg_bytes(100 + i), None, (i * 3) % len(WNIDS)) for i in range(9)]
    plain = write_plain_parquet(tmp_path / "val.parquet", plain_rows, "jpg", "cls", row_group_size=2)
    splits = {
        "train": parquet_split(hub.pattern, devkit=str(hub.devkit)),
        "val": parquet_split([str(plain)], image_column="jpg", label_column="cls", shards=2),
    }
    convert_hub(tmp_path, splits).check()
    close_all_envs()
    train = LMDBDataset(tmp_path / "results" / "train.lmdb")
    val = LMDBDataset(tmp_path / "results" / "val.lmdb")
    assert train.classes == WNIDS and val.classes == WNIDS
    assert train.targets == [row.label for n, row in enumerate(plain_reading(hub.files)) if n != TRUNCATED_ROW]
    assert val.targets == [row.label for row in plain_reading([plain], "jpg", "cls")]
    assert [val.get_bytes(i) for i in range(len(val))] == [row.image for row in plain_rows]
    assert val.samples[4] == (f"{WNIDS[plain_rows[4].label]}/val-4", plain_rows[4].label)


def test_a_class_subset_by_wnid_with_the_devkit(hub: Hub, tmp_path: Path) -> None:
    subset = [WNIDS[3], WNIDS[2]]
    write_config(tmp_path, {"train": parquet_split(hub.pattern, devkit=str(hub.devkit))}, classes=subset)
    run_snakemake(tmp_path, "--configfile", str(tmp_path / "config.yaml")).check()
    close_all_envs()
    ds = LMDBDataset(tmp_path / "results" / "train.lmdb")
    rows = [row for row in plain_reading(hub.files) if WNIDS[row.label] in subset]  # type: ignore[index]
    assert ds.classes == sorted(subset)
    assert ds.targets == [sorted(subset).index(WNIDS[row.label]) for row in rows]  # type: ignore[index]
    assert [ds.get_bytes(i) for i in range(len(ds)) if ds.storage_reason(i) == "passthrough"] == [
        row.image for row in rows if row.image is not None and row.image[:4] == b"\xff\xd8\xff\xe0"
    ]


def copied(hub: Hub, tmp_path: Path) -> list[Path]:
    folder = tmp_path / "data"
    shutil.copytree(hub.folder, folder)
    return sorted(folder.glob("train-*.parquet"))


def failed_run(tmp_path: Path, files: list[Path], on_error: str = "skip", **keys: Any) -> str:
    run = convert_hub(tmp_path / "run", {"train": parquet_split([str(f) for f in files], **keys)}, on_error)
    assert run.returncode != 0
    assert not (tmp_path / "run" / "results" / "train.lmdb").exists()
    return run.output


def test_a_file_cut_short_is_named(hub: Hub, tmp_path: Path) -> None:
    files = copied(hub, tmp_path)
    output = failed_run(tmp_path, [*files[:1], cut_short(files[1])])
    assert f"{files[1]}: cut short or not a Parquet file" in output and "download it again" in output


@pytest.mark.parametrize(("label", "words"), [(None, "without a label (null)"), (-1, "without a label (-1")])
def test_a_sample_without_a_label_is_named(tmp_path: Path, label: int | None, words: str) -> None:
    rows = hub_rows(0, 6)
    rows[4] = Row(rows[4].image, rows[4].path, label)
    file = write_hf_parquet(tmp_path / "train.parquet", rows, NAMES, ROW_GROUP)
    output = failed_run(tmp_path, [file])
    assert f"{file}, row 4 (counted from 0): a sample {words}" in output
    assert "give the row its label and write the file again" in output


def test_a_label_outside_the_class_list_is_named(tmp_path: Path) -> None:
    rows = hub_rows(0, 6)
    rows[5] = Row(rows[5].image, rows[5].path, len(NAMES) + 3)
    file = write_hf_parquet(tmp_path / "train.parquet", rows, NAMES, ROW_GROUP)
    output = failed_run(tmp_path, [file])
    assert f"{file}, row 5 (counted from 0; row group 1), sample img_0005" in output
    assert f"label {len(NAMES) + 3} is outside the {len(NAMES)} classes" in output
    assert "The files' own class names are used (devkit: would replace them): fix the row's label" in output


def test_a_class_subset_by_wnid_without_the_devkit_says_to_set_it(hub: Hub, tmp_path: Path) -> None:
    write_config(tmp_path, {"train": parquet_split(hub.pattern)}, classes=[WNIDS[3], WNIDS[2]])
    run = run_snakemake(tmp_path, "--configfile", str(tmp_path / "config.yaml"))
    assert run.returncode != 0
    assert "names none of the classes the files store" in run.output
    assert "To select classes by WNID, set devkit:" in run.output


def test_a_file_without_the_configured_column_is_named(hub: Hub, tmp_path: Path) -> None:
    output = failed_run(tmp_path, hub.files, image_column="picture")
    assert f"{hub.files[0]}: no column 'picture'; its columns are image, label" in output
    assert "image_column and label_column" in output


def test_files_with_other_class_names_are_refused(hub: Hub, tmp_path: Path) -> None:
    other = write_hf_parquet(tmp_path / "other.parquet", hub_rows(0, 3), ["cat", "dog", "crane", "crane"], 2)
    output = failed_run(tmp_path, [hub.files[0], other])
    assert f"{other}: the class names of column 'label' (4 names: cat, dog, crane, ...) differ from" in output


def test_a_bad_image_fails_its_shard_naming_the_row(hub: Hub, tmp_path: Path) -> None:
    output = failed_run(tmp_path, hub.files, on_error="fail")
    assert f"{hub.files[0]}, row {TRUNCATED_ROW} (counted from 0; row group 2)" in output
    assert "Write the Parquet files named again without the rows named" in output


@pytest.mark.parametrize("moment", ["extract", "merge"])
def test_sigkill_then_same_command_finishes_identically(hub: Hub, converted: Path, tmp_path: Path, moment: str) -> None:
    write_config(tmp_path, {"train": parquet_split(hub.pattern)}, encode={"on_error": "skip"})
    process, marker = start_snakemake(tmp_path, hold=moment)
    wait_for_hold(marker, process)
    kill_group(process)
    run_snakemake(tmp_path, "--configfile", str(tmp_path / "config.yaml")).check()
    assert_same_dataset(tmp_path / "results" / "train.lmdb", converted / "results" / "train.lmdb")


def test_shipped_config_plans_the_run(hub: Hub, tmp_path: Path) -> None:
    folder = tmp_path / "data"
    copied(hub, tmp_path)
    shutil.copy(hub.files[0], folder / "validation-00000-of-00001.parquet")
    text = (REPO / "config" / "imagenet-parquet.yaml").read_text()
    assert "/data/imagenet-1k/data/" in text
    config = tmp_path / "imagenet-parquet.yaml"
    config.write_text(text.replace("/data/imagenet-1k/data/", f"{folder}/"))
    run = run_snakemake(tmp_path, "-n", "--configfile", str(config)).check()
    assert run.output.count("rule encode_shard:") == 16 + 2
