"""imagefolder_lmdb.transforms (issue 45): torchvision's RandomResizedCrop and Resize, decoding a lazily
opened JPEG at the largest DCT reduction that keeps the crop at least the output size. The box is
torchvision's under a seed, a decoded input gives torchvision's output exactly, the dataset hands
over lazy JPEGs only when its transform asks, and torchvision's own transforms still give
ImageFolder's pixels. Real photographs (PSNR against a full decode) are in the ``slow`` set."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from PIL import Image
from torch.utils.data import DataLoader
from torchvision import transforms as v1
from torchvision.datasets.folder import pil_loader
from torchvision.transforms import v2

from imagefolder_lmdb import transforms as T
from imagefolder_lmdb.reader import STORAGE_CODES, LMDBDataset, pil_decode
from imagefolder_lmdb.reader.decoding import lazy_jpeg_decode
from support.datasets import write_dataset
from support.images import jpeg_bytes
from support.photos import INSTALL, photo_paths

pytestmark = pytest.mark.usefixtures("fresh_envs")

PASSTHROUGH = STORAGE_CODES["passthrough"]
SIZES = [(1200, 900), (900, 1200), (640, 480), (300, 200)]  # the last two: little or no reduction applies


@pytest.fixture(scope="module")
def jpegs() -> list[bytes]:
    return [jpeg_bytes(seed, size) for seed, size in enumerate(SIZES)]


@pytest.fixture
def stored(tmp_path: Path, jpegs: list[bytes]) -> Path:
    """The JPEGs as pass-through records, and as files (``tmp_path/files/<i>.jpg``) for ImageFolder's loader."""
    path = tmp_path / "d.lmdb"
    write_dataset(path, jpegs, storage=[PASSTHROUGH] * len(jpegs))
    (tmp_path / "files").mkdir()
    for index, data in enumerate(jpegs):
        (tmp_path / "files" / f"{index}.jpg").write_bytes(data)
    return path


def seeded(transform: Callable[[Any], Any], image: Any, seed: int) -> Any:
    torch.manual_seed(seed)
    return transform(image)


def as_array(image: Any) -> np.ndarray:
    return image.numpy() if isinstance(image, torch.Tensor) else np.asarray(image)


def test_the_box_is_torchvisions_under_a_seed_and_the_output_its_size_and_type(jpegs: list[bytes]) -> None:
    for data in jpegs:
        for seed in range(10):
            ours, theirs = T.RandomResizedCrop(224), v2.RandomResizedCrop(224)
            lazy = lazy_jpeg_decode(data)
            assert T.is_lazy_jpeg(lazy)
            box = seeded(lambda image, t=ours: t.make_params([image]), lazy, seed)  # reads only the size
            assert T.is_lazy_jpeg(lazy)
            assert box == seeded(lambda image, t=theirs: t.make_params([image]), pil_decode(data), seed)
            out, ref = seeded(ours, lazy_jpeg_decode(data), seed), seeded(theirs, pil_decode(data), seed)
            assert type(out) is type(ref) is Image.Image and (out.size, out.mode) == (ref.size, ref.mode)


@pytest.mark.parametrize(
    "ours, theirs",
    [
        (T.RandomResizedCrop(96), v2.RandomResizedCrop(96)),
        (T.RandomResizedCrop((64, 80), scale=(0.5, 1.0), interpolation=v2.InterpolationMode.BICUBIC), None),
        (T.Resize(100), v2.Resize(100)),
        (T.Resize((70, 90)), v2.Resize((70, 90))),
        (T.Resize(None, max_size=150), v2.Resize(None, max_size=150)),
    ],
    ids=["rrc", "rrc-bicubic", "resize", "resize-hw", "resize-max"],
)
def test_decoded_inputs_give_exactly_torchvisions_output(jpegs: list[bytes], ours: Any, theirs: Any) -> None:
    if theirs is None:
        theirs = v2.RandomResizedCrop((64, 80), scale=(0.5, 1.0), interpolation=v2.InterpolationMode.BICUBIC)
    for data in jpegs:
        pil = pil_decode(data)
        tensor = torch.from_numpy(np.array(pil)).permute(2, 0, 1).contiguous()
        for image in (pil, tensor):
            out, ref = seeded(ours, image, 3), seeded(theirs, image, 3)
            assert type(out) is type(ref) and np.array_equal(as_array(out), as_array(ref))


def test_a_lazy_jpeg_too_small_to_reduce_is_torchvisions_full_decode(jpegs: list[bytes]) -> None:
    data = jpegs[3]  # 300x200: no reduction keeps 224 on both sides
    out = seeded(T.RandomResizedCrop(224), lazy_jpeg_decode(data), 5)
    assert np.array_equal(np.asarray(out), np.asarray(seeded(v2.RandomResizedCrop(224), pil_decode(data), 5)))


# -- torchvision's own transforms on lazily opened JPEGs: ImageFolder's pixels ----------------------

TORCHVISION_PIPELINES = {
    "v2 train": v2.Compose([v2.RandomResizedCrop(128), v2.RandomHorizontalFlip(), v2.PILToTensor()]),
    "v2 val": v2.Compose([v2.Resize(144), v2.CenterCrop(128), v2.ToImage(), v2.ToDtype(torch.float32, scale=True)]),
    "v1 train": v1.Compose([v1.RandomResizedCrop(128), v1.RandomHorizontalFlip(), v1.ToTensor()]),
    "v1 colour": v1.Compose([v1.ColorJitter(0.4, 0.4, 0.4), v1.RandomRotation(10), v1.PILToTensor()]),
}


@pytest.mark.parametrize("name", list(TORCHVISION_PIPELINES))
def test_torchvisions_transforms_on_a_lazy_jpeg_give_imagefolders_pixels(stored: Path, name: str) -> None:
    pipeline = TORCHVISION_PIPELINES[name]
    for index in range(len(SIZES)):
        file = stored.parent / "files" / f"{index}.jpg"
        lazy, reference = lazy_jpeg_decode(file.read_bytes()), pil_loader(str(file))
        assert torch.equal(seeded(pipeline, lazy, index), seeded(pipeline, reference, index))


# -- the dataset: lazy JPEGs when its transform asks -----------------------------------------------


class Probe:
    """Records whether each image it sees is a lazily opened JPEG, and passes it on."""

    def __init__(self) -> None:
        self.seen: list[bool] = []

    def __call__(self, image: Any) -> Any:
        self.seen.append(T.is_lazy_jpeg(image))
        return image


@pytest.mark.parametrize("compose", [v1.Compose, v2.Compose])
def test_the_dataset_hands_over_lazy_jpegs_only_when_its_transform_asks(stored: Path, compose: Any) -> None:
    probe = Probe()
    plain = LMDBDataset(stored, transform=compose([probe, v2.Resize(64)]))
    assert not plain.lazy_jpeg
    assert all(type(plain[i][0]) is Image.Image for i in range(len(plain))) and probe.seen == [False] * len(SIZES)
    probe.seen.clear()
    asking = LMDBDataset(stored, transform=compose([probe, v2.RandomApply([T.Resize(64)], p=1.0)]))
    assert asking.lazy_jpeg
    images = [image for image, _ in asking.__getitems__(list(range(len(asking))))]
    assert probe.seen == [True] * len(SIZES) and all(min(image.size) == 64 for image in images)
    assert not LMDBDataset(stored, transform=T.Resize(64), decode="tensor").lazy_jpeg


def test_images_too_small_for_any_reduction_arrive_decoded_as_imagefolders(stored: Path) -> None:
    probe = Probe()
    ds = LMDBDataset(stored, transform=v1.Compose([probe, T.RandomResizedCrop(224)]))
    assert [type(ds[i][0]) for i in range(len(ds))] == [Image.Image] * len(SIZES)
    assert probe.seen == [True, True, True, False]  # 300x200: no crop of it is 448x448
    decoded = LMDBDataset(stored, transform=lambda image: image)[3][0]
    assert type(decoded) is Image.Image and decoded.format is None
    for reduces, expected in (
        (T.RandomResizedCrop(224).reduces, [True, True, True, False]),
        (T.Resize(256).reduces, [True, True, False, False]),
    ):
        assert [reduces(*size) for size in SIZES] == expected


def test_records_that_are_no_rgb_jpeg_arrive_decoded(tmp_path: Path) -> None:
    grey, png = io.BytesIO(), io.BytesIO()
    Image.new("L", (600, 400), 90).save(grey, format="JPEG")
    Image.new("RGB", (600, 400), (1, 2, 3)).save(png, format="PNG")
    path = tmp_path / "d.lmdb"
    write_dataset(path, [grey.getvalue(), png.getvalue()], storage=[PASSTHROUGH, STORAGE_CODES["stored-as-is"]])
    probe = Probe()
    ds = LMDBDataset(path, transform=v2.Compose([probe, T.Resize(100)]))
    assert [ds[i][0].mode for i in range(2)] == ["RGB", "RGB"] and probe.seen == [False, False]


def test_a_jpeg_that_fails_to_decode_names_the_record_and_the_file(tmp_path: Path, jpegs: list[bytes]) -> None:
    path = tmp_path / "d.lmdb"
    write_dataset(path, [jpegs[0], jpegs[0][: len(jpegs[0]) // 2]], storage=[PASSTHROUGH] * 2)  # CRC of the cut one
    ds = LMDBDataset(path, transform=v2.Compose([T.RandomResizedCrop(64), v2.PILToTensor()]))
    assert ds[0][0].shape == (3, 64, 64)
    with pytest.raises(OSError, match="truncated") as caught:
        ds[1]
    assert caught.value.__notes__ == [
        f"while transforming record 1 (b/1.bin) of {path}, whose JPEG the transform decodes (a lazily opened "
        "image, imagefolder_lmdb.transforms)"
    ]


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_workers_under_fork_and_spawn(stored: Path, context: str) -> None:
    val = v2.Compose([T.Resize(72), v2.CenterCrop(64), v2.PILToTensor()])
    ds = LMDBDataset(stored, transform=val)
    expected = torch.stack([ds[i][0] for i in range(len(ds))])
    loader = DataLoader(ds, batch_size=2, num_workers=2, multiprocessing_context=context)
    assert torch.equal(torch.cat([images for images, _ in loader]), expected)


# -- real photographs (slow): PSNR against torchvision's output from a full decode, same box ---------


def psnr(a: Image.Image, b: Image.Image) -> float:
    error = np.mean((np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)) ** 2)
    return 99.0 if error == 0 else float(10 * np.log10(255.0**2 / error))


@pytest.fixture(scope="module")
def photos() -> list[bytes]:
    found = photo_paths()
    if len(found) < 4:
        pytest.skip(f"{len(found)} of the real photographs found (4 or more needed): {INSTALL}")
    return [path.read_bytes() for path in found]


@pytest.mark.slow
def test_real_photographs_train_crop_within_40_db_median_30_worst(photos: list[bytes]) -> None:
    scores = []
    for data in photos:
        assert Image.open(io.BytesIO(data)).size[0] * Image.open(io.BytesIO(data)).size[1] >= 2_000_000
        for seed in range(8):
            ours, theirs = T.RandomResizedCrop(224), v2.RandomResizedCrop(224)
            box = seeded(lambda image, t=ours: t.make_params([image]), lazy_jpeg_decode(data), seed)
            assert box == seeded(lambda image, t=theirs: t.make_params([image]), pil_decode(data), seed)
            out = ours.transform(lazy_jpeg_decode(data), box)
            ref = theirs.transform(pil_decode(data), box)
            assert (type(out), out.size) == (type(ref), ref.size)
            scores.append(psnr(out, ref))
    assert np.median(scores) >= 40 and min(scores) >= 30, sorted(scores)[:5]


@pytest.mark.slow
def test_real_photographs_val_resize_center_crop_within_40_db_median_30_worst(
    photos: list[bytes], tmp_path: Path
) -> None:
    path = tmp_path / "photos.lmdb"
    write_dataset(path, photos, storage=[PASSTHROUGH] * len(photos))
    ours = LMDBDataset(path, transform=v1.Compose([T.Resize(256), v1.CenterCrop(224)]))  # v1, as PyTorch's example
    theirs = LMDBDataset(path, transform=v2.Compose([v2.Resize(256), v2.CenterCrop(224)]))
    assert ours.lazy_jpeg and not theirs.lazy_jpeg
    pairs = [(ours[i][0], theirs[i][0]) for i in range(len(photos))]
    assert all(a.size == b.size == (224, 224) and type(a) is type(b) for a, b in pairs)
    scores = [psnr(a, b) for a, b in pairs]
    assert np.median(scores) >= 40 and min(scores) >= 30, scores
