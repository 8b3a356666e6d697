"""WebP as a stored codec through the real CLI (issue 62, point 2): ``imagefolder-lmdb convert --set
encode.codec=webp`` writes a version-7 file whose re-encoded images are WebP and whose valid RGB JPEGs
are still the source's bytes; LMDBDataset reads it (decode="pil" and "tensor"), ``verify`` passes it,
and the reader before WebP refuses it by its version. Without the setting, images of every format and
mode the writer re-encodes are stored byte for byte as the workflow before the codec registry stored them."""

from __future__ import annotations

import importlib.util
import io
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from imagefolder_lmdb.reader import LMDBDataset, LMDBReader, close_all_envs, dataset, decoding
from support import BIN, REPO
from support.datasets import every_key_and_value
from support.earlier_readers import open_with_reader_at
from support.http_range import RangeServer
from support.odd_images import make_odd_tree
from support.workflow import convert_with, workflow_at

#: main when WebP was added: its reader knows versions 1 to 4 and 6.
BEFORE_WEBP = "40933bd"
SHORT_SIDE = 20
#: Each source image and how it is stored with codec webp and short_side 20.
STORED = {
    "a/big.jpg": "reencoded-webp:resized",  # 60x40: shrunk
    "a/x.jpg": "passthrough",  # a valid RGB JPEG within the bound: the source's bytes
    "b/g.jpg": "reencoded-webp:grayscale",  # 30x20: within the bound, but no RGB JPEG
    "b/p.png": "reencoded-webp:resized",  # 100x80: shrunk
}


def imagefolder_lmdb(*arguments: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [str(BIN / "imagefolder-lmdb"), *map(str, arguments)]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, check=False, cwd=cwd)


def write_tree(source: Path) -> None:
    rng = np.random.default_rng(62)
    sizes = {"a/big.jpg": (60, 40), "a/x.jpg": (24, 16), "b/g.jpg": (30, 20), "b/p.png": (100, 80)}
    for name, (width, height) in sizes.items():
        image = Image.fromarray(rng.integers(0, 255, (height, width, 3), dtype=np.uint8))
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (image.convert("L") if name == "b/g.jpg" else image).save(source / name, quality=90)


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("webp")
    write_tree(root / "src")
    arguments = ["--split", "train", "--set", "encode.codec=webp", "--short-side", str(SHORT_SIDE)]
    done = imagefolder_lmdb("convert", "src", "out", *arguments, cwd=root)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert "resized: 2 images shrunk to a shorter side at most 20" in done.stdout + done.stderr
    return root


def test_a_webp_conversion_reads_back_with_pil(converted: Path) -> None:
    path = converted / "out" / "train.lmdb"
    ds, raw = LMDBDataset(path), LMDBReader(path, decode="bytes")
    assert [Path(sample).as_posix()[-9:] for sample, _ in ds.samples] == list(STORED) and ds.targets == [0, 0, 1, 1]
    assert [ds.storage_reason(i) for i in range(len(ds))] == list(STORED.values())
    assert ds.meta_document["version"] == 7 and ds.meta_document["settings"]["encode"]["codec"] == "webp"
    for index, name in enumerate(STORED):
        stored = raw[index][0]
        if STORED[name] == "passthrough":
            assert stored == (converted / "src" / name).read_bytes()
        else:
            assert Image.open(io.BytesIO(stored)).format == "WEBP"
        image = ds[index][0]
        assert image.mode == "RGB" and min(image.size) <= SHORT_SIDE
        assert np.array_equal(np.asarray(image), np.asarray(decoding.pil_decode(stored)))
    close_all_envs()


def test_a_webp_conversion_reads_back_as_tensors(converted: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """WebP records are decoded with Pillow: the same pixels as decode="pil", no TorchCodec needed
    (the JPEG records need it: read where it is installed)."""
    has_torchcodec = importlib.util.find_spec("torchcodec") is not None
    if not has_torchcodec:  # LMDBDataset asks for it at once; the WebP records never call it
        monkeypatch.setattr(dataset, "torchcodec_jpeg_decoder", lambda: None)
    path = converted / "out" / "train.lmdb"
    ds, pil = LMDBDataset(path, decode="tensor"), LMDBDataset(path)
    for index, reason in enumerate(STORED.values()):
        if reason == "passthrough" and not has_torchcodec:
            continue
        tensor = ds[index][0]
        assert tensor.dtype == torch.uint8 and torch.equal(tensor, decoding.pil_to_chw(pil[index][0]))
    close_all_envs()


def test_a_webp_file_reads_from_a_url_as_in_place(converted: Path) -> None:
    """The remote reader decodes each record by its code's codec too."""
    pytest.importorskip("obstore")
    path = converted / "out" / "train.lmdb"
    server = RangeServer().start()
    try:
        remote, local = LMDBDataset(server.put("train.lmdb", path.read_bytes())), LMDBDataset(path)
        for index in range(len(local)):
            assert np.array_equal(np.asarray(remote[index][0]), np.asarray(local[index][0]))
    finally:
        server.stop()
        close_all_envs()


def test_verify_passes_a_webp_file(converted: Path) -> None:
    checked = imagefolder_lmdb("verify", "out/train.lmdb", "--full", cwd=converted)
    assert checked.returncode == 0 and "OK " in checked.stdout, checked.stdout + checked.stderr


def test_the_reader_before_webp_refuses_version_7_by_its_version(converted: Path, tmp_path: Path) -> None:
    done = open_with_reader_at(BEFORE_WEBP, converted / "out" / "train.lmdb", tmp_path)
    assert done.returncode == 1 and "FormatError" in done.stderr
    assert (
        "imagefolder-lmdb version 7, but this reader knows version 1 and version 2 and version 3 and version 4 "
        "and version 6 only" in done.stderr
    )


def test_a_conversion_without_a_codec_is_byte_identical_to_the_workflow_before_webp(tmp_path: Path) -> None:
    """Every format and mode the writer checks and re-encodes (PNG, palette, RGBA, CMYK, grayscale, MPO,
    EXIF-turned and progressive JPEGs), through the codec registry now and the code before it."""
    splits = {"train": {"source": str(make_odd_tree(tmp_path / "odd" / "train")), "shards": 2}}
    snakefile = workflow_at(BEFORE_WEBP, tmp_path / "repo")
    if snakefile is None:
        pytest.skip(f"commit {BEFORE_WEBP} is not in this clone's history")
    convert_with(snakefile, tmp_path / "before", splits, package=snakefile.parent / "src")
    convert_with(REPO / "Snakefile", tmp_path / "now", splits)
    before, now = (every_key_and_value(tmp_path / run / "results" / "train.lmdb") for run in ("before", "now"))
    documents = [json.loads(items.pop(b"meta/json")) for items in (before, now)]
    for document in documents:
        document.pop("created")
    assert documents[0] == documents[1] and documents[1]["version"] == 1
    assert before == now, [key for key in before if before[key] != now.get(key)][:5]
