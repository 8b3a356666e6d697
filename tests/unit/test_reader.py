"""The reader on files written here, no conversion: clear refusals of what is no dataset, decoding
(tensor equals PIL for every kind of JPEG, stored-as-is values through Pillow)."""

from __future__ import annotations

import io
from pathlib import Path

import lmdb
import numpy as np
import pytest
import torch
from PIL import Image

from imagefolder_lmdb import dataset
from imagefolder_lmdb.dataset import FormatError, LMDBDataset, record_key
from support.datasets import pil_as_tensor

#: torchvision 0.29 deprecates its image decoders in favour of TorchCodec and says so on every call.
pytestmark = pytest.mark.filterwarnings("ignore:The image decoding and encoding capabilities:DeprecationWarning")


def test_refuses_a_file_that_is_not_lmdb(tmp_path: Path) -> None:
    path = tmp_path / "photo.lmdb"
    path.write_bytes(b"\xff\xd8 this is not a database" * 500)
    with pytest.raises(FormatError, match="is not an LMDB file"):
        LMDBDataset(path)


def test_refuses_an_unfinished_conversion(tmp_path: Path) -> None:
    path = tmp_path / "merged.lmdb"
    with lmdb.open(str(path), subdir=False, map_size=1 << 20) as env, env.begin(write=True) as txn:
        txn.put(record_key(0), b"\xff\xd8\xff\xd9")
    with pytest.raises(FormatError, match=r"did not finish.*Run the same snakemake command"):
        LMDBDataset(path)


def test_refuses_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no such file"):
        LMDBDataset(tmp_path / "absent.lmdb")


# -- decode choices ---------------------------------------------------------------------------------


@pytest.mark.parametrize("subsampling", [0, 1, 2], ids=["4:4:4", "4:2:2", "4:2:0"])
@pytest.mark.parametrize("progressive", [False, True], ids=["baseline", "progressive"])
def test_tensor_decode_equals_pil_for_jpeg_variants(subsampling: int, progressive: bool) -> None:
    pixels = np.random.default_rng(subsampling).integers(0, 256, (9, 7, 3), dtype=np.uint8)
    image = Image.fromarray(pixels).resize((203, 117), Image.Resampling.BICUBIC)
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=90, subsampling=subsampling, progressive=progressive)
    data = buffer.getvalue()
    assert torch.equal(dataset.tensor_decode(data), pil_as_tensor(dataset.pil_decode(data)))


def test_stored_as_is_values_decode_to_tensors_through_pillow() -> None:
    buffer = io.BytesIO()
    Image.new("P", (5, 3), 7).save(buffer, format="PNG")
    data = buffer.getvalue()
    tensor = dataset.tensor_decode(data, jpeg=False)
    assert tensor.shape == (3, 3, 5) and torch.equal(tensor, pil_as_tensor(dataset.pil_decode(data)))
