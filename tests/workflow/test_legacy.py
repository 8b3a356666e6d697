"""LEGACY folder2lmdb files (pickled (image bytes, label) values): refused by default without
unpickling anything, readable with allow_pickle=True, and convertible with convert_legacy.py.

The legacy files (support/legacy.py) hold records of the converted test set.
"""

from __future__ import annotations

import io
import os
import pickle
from pathlib import Path

import lmdb
import numpy as np
import pytest
import torch
from PIL import Image

from imagefolder_lmdb.commands.convert_legacy import LegacyConvertError
from imagefolder_lmdb.reader import FormatError, LMDBDataset, close_all_envs
from support.commands import run_script
from support.images import png_bytes
from support.legacy import CreatesAFile, pickled, write_legacy
from support.workflow import Converted

#: Records of the converted test set put into the legacy files: every third one, so all four
#: classes occur. With the PNG added that makes 14, more than ten, so that the legacy keys' byte
#: order ("0", "1", "10", "11", "2", ...) differs from their index order.
SOURCE_RECORDS = range(0, 39, 3)


def legacy_items(converted: Converted) -> list[tuple[bytes, int]]:
    """(image bytes, label) pairs: JPEGs from the converted test set, one RGBA PNG, labels 0..3."""
    source = LMDBDataset(converted.lmdb)
    items = [(source.get_bytes(i), source.targets[i]) for i in SOURCE_RECORDS]
    items.insert(5, (png_bytes(5, (40, 24)), 2))
    return items


@pytest.fixture
def legacy(converted: Converted, tmp_path: Path) -> tuple[Path, list[tuple[bytes, int]]]:
    """A single-file legacy LMDB and the (image bytes, label) pairs it holds."""
    items = legacy_items(converted)
    path = tmp_path / "legacy.lmdb"
    write_legacy(path, pickled(items))
    return path, items


# -- refusal and safety -----------------------------------------------------------------------------


def test_refused_by_default_with_the_reason(legacy: tuple[Path, list[tuple[bytes, int]]]) -> None:
    path, _ = legacy
    with pytest.raises(FormatError) as refusal:
        LMDBDataset(path)
    message = str(refusal.value)
    assert "Unpickling runs code stored in the file" in message
    assert "allow_pickle=True" in message and "convert_legacy.py" in message


def test_a_malicious_pickle_never_runs(converted: Converted, tmp_path: Path) -> None:
    marker = tmp_path / "pwned.txt"
    evil = pickle.dumps(CreatesAFile(str(marker)))
    assert b"open" in evil
    path = tmp_path / "evil.lmdb"
    with lmdb.open(str(path), subdir=False, map_size=1 << 24) as env, env.begin(write=True) as txn:
        txn.put(b"0", evil)
        txn.put(b"__len__", evil)  # even the count is hostile
        txn.put(b"__keys__", evil)

    with pytest.raises(FormatError, match="Unpickling runs code"):
        LMDBDataset(path)
    # Opted in, the restricted unpickler still refuses the global instead of calling it.
    with pytest.raises(FormatError, match=r"refusing to load the global io\.open"):
        LMDBDataset(path, allow_pickle=True)
    verify = run_script("verify.py", path, "--full")
    assert verify.returncode == 1 and "Unpickling runs code" in verify.stdout
    convert = run_script("convert_legacy.py", path, tmp_path / "out.lmdb")
    assert convert.returncode == 1 and "refusing to load the global" in convert.stderr
    assert not (tmp_path / "out.lmdb").exists()
    assert not marker.exists(), "unpickling the file ran code from it"


def test_a_hostile_record_behind_honest_keys_is_refused(converted: Converted, tmp_path: Path) -> None:
    marker = tmp_path / "pwned.txt"
    items = legacy_items(converted)[:3]
    values = [*pickled(items), pickle.dumps((CreatesAFile(str(marker)), 0))]
    path = tmp_path / "mixed.lmdb"
    write_legacy(path, values)
    with pytest.raises(FormatError, match=r"legacy record '3'.*refusing to load the global io\.open"):
        LMDBDataset(path, allow_pickle=True)
    assert not marker.exists()


# -- reading with allow_pickle=True -----------------------------------------------------------------


@pytest.mark.parametrize("subdir", [False, True], ids=["single-file", "directory"])
def test_allow_pickle_reads_every_record(converted: Converted, tmp_path: Path, subdir: bool) -> None:
    items = legacy_items(converted)
    path = tmp_path / "legacy.lmdb"
    write_legacy(path, pickled(items, protocol=2), subdir=subdir)  # protocol 2: bytes via _codecs
    ds = LMDBDataset(path, allow_pickle=True, decode="bytes")
    assert ds.is_legacy and len(ds) == len(items)
    assert ds.targets == [label for _, label in items]
    assert ds.classes == ["0", "1", "2", "3"] and ds.class_to_idx["3"] == 3
    assert ds.samples[12] == ("12", items[12][1]) and ds.root is None, "keys, no files under a folder"
    assert [ds[i][0] for i in range(len(ds))] == [data for data, _ in items]
    pil = LMDBDataset(path, allow_pickle=True)
    image, target = pil[5]
    assert image.mode == "RGB" and image.size == (40, 24) and target == 2
    tensors = LMDBDataset(path, allow_pickle=True, decode="tensor")
    assert torch.equal(tensors[5][0], torch.from_numpy(np.array(image)).permute(2, 0, 1))
    assert ds.class_counts().tolist() == np.bincount([label for _, label in items]).tolist()
    with pytest.raises(FormatError, match="stores no image sizes"):
        ds.aspect_ratios()


def test_allow_pickle_with_only_len_and_numpy_labels(converted: Converted, tmp_path: Path) -> None:
    items = [(data, np.int64(label)) for data, label in legacy_items(converted)[:4]]
    path = tmp_path / "legacy"
    write_legacy(path, pickled(items), subdir=True, keys=False)
    ds = LMDBDataset(path, allow_pickle=True, decode="bytes")
    assert ds.targets == [int(label) for _, label in items]
    assert ds[3][0] == items[3][0]


def test_allow_pickle_changes_nothing_for_a_normal_dataset(converted: Converted) -> None:
    ds = LMDBDataset(converted.lmdb, allow_pickle=True)
    assert not ds.is_legacy and ds.check_crc(0)


# -- conversion -------------------------------------------------------------------------------------


def test_convert_legacy_output_verifies_and_keeps_labels_and_bytes(
    legacy: tuple[Path, list[tuple[bytes, int]]], tmp_path: Path
) -> None:
    path, items = legacy
    classes = tmp_path / "classes.txt"
    classes.write_text("tench\ngoldfish\nshark\nhen\n")
    output = tmp_path / "converted" / "train.lmdb"
    output.parent.mkdir()
    result = run_script("convert_legacy.py", path, output, "--classes", classes)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"OK {output}: {len(items)} images, 4 classes")
    assert sorted(os.listdir(output.parent)) == ["train.lmdb"], "no temporary or lock file is left"

    verify = run_script("verify.py", output, "--full")
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert verify.stdout.startswith("OK ") and len(verify.stdout.strip().splitlines()) == 1

    close_all_envs()
    ds = LMDBDataset(output)
    assert ds.classes == ["tench", "goldfish", "shark", "hen"]
    assert ds.targets == [label for _, label in items]
    assert ds.samples[12] == (f"{ds.classes[items[12][1]]}/12", items[12][1])
    for index, (data, _) in enumerate(items):
        if index == 5:  # the PNG: re-encoded as ImageFolder's loader sees it
            assert ds.storage_reason(index) == "reencoded:not-jpeg"
            original = Image.open(io.BytesIO(data)).convert("RGB")
            assert ds[index][0].size == original.size
        else:  # RGB JPEGs are stored byte for byte
            assert ds.storage_reason(index) == "passthrough"
            assert ds.get_bytes(index) == data
    assert ds.meta_document["source"]["layout"] == "folder2lmdb-pickle" and ds.root is None
    assert ds.meta_document["stats"]["storage"] == {"passthrough": len(items) - 1, "reencoded:not-jpeg": 1}


def test_convert_legacy_names_classes_by_label_number(
    legacy: tuple[Path, list[tuple[bytes, int]]], tmp_path: Path
) -> None:
    path, items = legacy
    output = tmp_path / "out.lmdb"
    assert run_script("convert_legacy.py", path, output).returncode == 0
    close_all_envs()
    ds = LMDBDataset(output)
    assert ds.classes == ["0", "1", "2", "3"]
    assert ds.samples[0] == (f"{items[0][1]}/0", items[0][1])


def test_convert_legacy_leaves_no_output_when_it_fails(converted: Converted, tmp_path: Path) -> None:
    items = legacy_items(converted)
    items[9] = (items[9][0][: len(items[9][0]) // 2], items[9][1])  # a truncated JPEG, late in the file
    path = tmp_path / "legacy.lmdb"
    write_legacy(path, pickled(items))
    output = tmp_path / "out" / "train.lmdb"
    result = run_script("convert_legacy.py", path, output)
    assert result.returncode == 1
    assert "legacy record 9 (key '9')" in result.stderr and "--on-error skip" in result.stderr
    assert not output.parent.exists() or os.listdir(output.parent) == []

    skipped = run_script("convert_legacy.py", path, output, "--on-error", "skip")
    assert skipped.returncode == 0, skipped.stderr
    close_all_envs()
    ds = LMDBDataset(output)
    assert len(ds) == len(items) - 1
    assert ds.meta_document["stats"]["skipped"][0]["index"] == 9
    assert ds.get_bytes(9) == items[10][0], "the records after the skipped one move up"
    assert run_script("verify.py", output, "--full").returncode == 0


def test_convert_legacy_refuses_too_few_class_names(
    legacy: tuple[Path, list[tuple[bytes, int]]], tmp_path: Path
) -> None:
    from imagefolder_lmdb.commands.convert_legacy import read_classes

    classes = tmp_path / "classes.txt"
    classes.write_text("a\nb\n")
    with pytest.raises(LegacyConvertError, match="names 2 classes, but the labels go up to 3"):
        read_classes(str(classes), [0, 3])
    path, _ = legacy
    result = run_script("convert_legacy.py", path, tmp_path / "out.lmdb", "--classes", classes)
    assert result.returncode == 1 and "names 2 classes" in result.stderr
    assert not (tmp_path / "out.lmdb").exists() and not (tmp_path / "out.lmdb.incomplete").exists()
