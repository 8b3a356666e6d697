"""The reader on files written here, no conversion: clear refusals of what is no dataset, decoding
(tensor equals PIL for every kind of JPEG and every storage kind, EXIF orientations included,
stored-as-is values through Pillow; TorchCodec optional), malloc settings for batches."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import lmdb
import numpy as np
import pytest
import torch
from PIL import Image

from imagefolder_lmdb.reader import STORAGE_CODES, FormatError, LMDBDataset, dataset, decoding, memory, record_key
from imagefolder_lmdb.writing import lmdb_writer
from imagefolder_lmdb.writing.reencode import encode_image
from support import REPO
from support.datasets import pil_as_tensor
from support.settings import encode_settings


def test_refuses_a_file_that_is_not_lmdb(tmp_path: Path) -> None:
    path = tmp_path / "photo.lmdb"
    path.write_bytes(b"\xff\xd8 this is not a database" * 500)
    with pytest.raises(FormatError, match="is not an LMDB file"):
        LMDBDataset(path)


@pytest.mark.parametrize(
    ("content", "error", "words"),
    [
        (b"hello\n", FormatError, "is not an LMDB file"),  # too short to hold a meta page, but no LMDB start
        (b"", FormatError, "holds 0 bytes, not even LMDB's two meta pages. The copy is incomplete"),
        (None, FileNotFoundError, "is a folder holding no dataset: no data.mdb"),  # an empty folder x.lmdb
    ],
)
def test_a_short_file_or_an_empty_folder_is_named_for_what_it_is(
    tmp_path: Path, content: bytes | None, error: type[Exception], words: str
) -> None:
    path = tmp_path / "x.lmdb"
    path.mkdir() if content is None else path.write_bytes(content)
    with pytest.raises(error, match=words):
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
    assert torch.equal(decoding.tensor_decode(data), pil_as_tensor(decoding.pil_decode(data)))


def test_stored_as_is_values_decode_to_tensors_through_pillow() -> None:
    buffer = io.BytesIO()
    Image.new("P", (5, 3), 7).save(buffer, format="PNG")
    data = buffer.getvalue()
    tensor = decoding.tensor_decode(data, jpeg=False)
    assert tensor.shape == (3, 3, 5) and torch.equal(tensor, pil_as_tensor(decoding.pil_decode(data)))


def photo(size: tuple[int, int] = (61, 43), seed: int = 0) -> Image.Image:
    pixels = np.random.default_rng(seed).integers(0, 256, (7, 5, 3), dtype=np.uint8)
    return Image.fromarray(pixels).resize(size, Image.Resampling.BICUBIC)


def saved(image: Image.Image, fmt: str = "JPEG", **options: object) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **options)
    return buffer.getvalue()


def oriented_jpeg(orientation: int | None, progressive: bool = False) -> bytes:
    """A JPEG whose EXIF says ``orientation`` (None: no EXIF at all)."""
    exif = Image.Exif()
    if orientation is not None:
        exif[0x0112] = orientation
    options = {"exif": exif.tobytes()} if orientation is not None else {}
    return saved(photo(), quality=90, progressive=progressive, **options)


def app1_after_the_first_scan(jpeg: bytes, orientation: int) -> bytes:
    """A progressive JPEG with its EXIF segment between its first and second scans, where libjpeg
    still reads it before decoding (it buffers every scan of a progressive file first)."""
    exif = Image.Exif()
    exif[0x0112] = orientation
    payload = exif.tobytes()  # "Exif\0\0" and the TIFF structure
    segment = b"\xff\xe1" + (len(payload) + 2).to_bytes(2, "big") + payload
    first_scan = jpeg.index(b"\xff\xda")
    second_scan = jpeg.index(b"\xff\xc4", first_scan)  # the next scan's Huffman tables
    return jpeg[:second_scan] + segment + jpeg[second_scan:]


@pytest.mark.parametrize("progressive", [False, True], ids=["baseline", "progressive"])
@pytest.mark.parametrize("orientation", [None, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
def test_tensor_decode_ignores_exif_orientation_as_imagefolder_does(orientation: int | None, progressive: bool) -> None:
    """TorchCodec turns images by their EXIF orientation, Pillow's loader (ImageFolder's) does not:
    the reader gives Pillow's pixels, and hands only the JPEGs TorchCodec would turn to Pillow."""
    from torchcodec.decoders import decode_jpeg

    data = oriented_jpeg(orientation, progressive)
    want = pil_as_tensor(decoding.pil_decode(data))
    assert torch.equal(decoding.tensor_decode(data), want)
    turned_by_torchcodec = not torch.equal(decode_jpeg(data), want)
    assert turned_by_torchcodec == (orientation in range(2, 9))
    assert decoding._may_be_turned(memoryview(data)) == (orientation not in (None, 1))


def test_an_exif_segment_between_progressive_scans_is_seen() -> None:
    from torchcodec.decoders import decode_jpeg

    data = app1_after_the_first_scan(oriented_jpeg(None, progressive=True), orientation=6)
    want = pil_as_tensor(decoding.pil_decode(data))
    assert decode_jpeg(data).shape == (3, 61, 43), "TorchCodec turns it"
    assert decoding._may_be_turned(memoryview(data))
    assert torch.equal(decoding.tensor_decode(data), want)


def test_jpegs_without_a_turn_are_decoded_by_torchcodec(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_pillow(data: object) -> None:
        raise AssertionError("decoded with Pillow")

    monkeypatch.setattr(decoding, "pil_decode", no_pillow)
    for data in (
        oriented_jpeg(None),
        oriented_jpeg(1),
        oriented_jpeg(1, progressive=True),
        saved(photo(), xmp=b"<x/>"),
    ):
        assert decoding.tensor_decode(data).shape == (3, 43, 61)


def storage_kinds() -> dict[str, tuple[bytes, int]]:
    """Each kind of source image as the workflow stores it (encode_image, the defaults): the bytes
    and the storage code; ``reencode: never`` keeps the odd ones as they are."""
    image = photo((203, 117), seed=3)
    sources = {
        "rgb-jpeg": saved(image, quality=90),
        "progressive-jpeg": saved(image, quality=90, progressive=True),
        "exif-turned-jpeg": oriented_jpeg(6),
        "cmyk-jpeg": saved(image.convert("CMYK"), quality=90),
        "grayscale-jpeg": saved(image.convert("L"), quality=90),
        "png": saved(image, "PNG"),
        "rgba-png": saved(image.convert("RGBA"), "PNG"),
    }
    kinds = {}
    for name, data in sources.items():
        for reencode in ("auto", "always", "never"):
            stored = encode_image(data, encode_settings(reencode=reencode))
            kinds[f"{name}, reencode {reencode}"] = (stored.value, stored.storage)
    return kinds


@pytest.mark.parametrize(("value", "storage"), storage_kinds().values(), ids=storage_kinds().keys())
def test_tensor_decode_equals_pil_for_every_storage_kind(value: bytes, storage: int) -> None:
    tensor = decoding.tensor_decode(value, jpeg=storage != STORAGE_CODES["stored-as-is"])
    assert tensor.dtype == torch.uint8 and torch.equal(tensor, pil_as_tensor(decoding.pil_decode(value)))


def test_decode_tensor_without_torchcodec_names_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torchcodec", None)
    monkeypatch.setitem(sys.modules, "torchcodec.decoders", None)
    decoding.torchcodec_jpeg_decoder.cache_clear()
    try:
        with pytest.raises(ImportError, match=rf"pip install {decoding.TORCHCODEC_PIN}.*decode=\"pil\""):
            dataset._check_options("tensor", lock=False, max_readers=None)
        assert decoding.tensor_decode(saved(photo(), "PNG"), jpeg=False).shape == (3, 43, 61)
    finally:
        decoding.torchcodec_jpeg_decoder.cache_clear()


def test_the_reader_imports_and_decodes_without_torchcodec_and_torchvision() -> None:
    script = (
        "import sys; sys.modules['torchcodec'] = sys.modules['torchvision'] = None\n"
        "import dataset, io; from PIL import Image; buffer = io.BytesIO()\n"
        "Image.new('RGB', (4, 3)).save(buffer, 'JPEG'); print(dataset.pil_decode(buffer.getvalue()).size)"
    )
    scripts = REPO / "scripts"  # scripts/dataset.py, as the workflow and users in a checkout import it
    done = subprocess.run([sys.executable, "-c", script], cwd=scripts, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "(4, 3)"


def test_the_reader_and_its_shared_homes_import_only_the_readers_dependencies() -> None:
    """The reader's modules, and the homes it shares with the writers (the LMDB layout, the JPEG walk,
    malloc tuning), import lmdb, numpy, Pillow and the standard library: not the workflow's snakemake,
    torchvision or PyYAML, and torch only when LMDBDataset is asked for."""
    script = (
        "import sys\n"
        "from imagefolder_lmdb.reader import jpeg_markers, lmdb_layout, memory, LMDBReader\n"
        "print(sorted(name for name in ('snakemake', 'torchvision', 'yaml', 'torch') if name in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# -- memory for batches -----------------------------------------------------------------------------


class FakeLibc:
    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []

    def mallopt(self, parameter: int, value: int) -> int:
        self.calls.append((parameter, value))
        return 1


@pytest.mark.parametrize(
    ("environment", "tuned"),
    [({}, True), ({"IMAGEFOLDER_LMDB_MALLOC": "default"}, False), ({"MALLOC_TRIM_THRESHOLD_": "1"}, False)],
    ids=["default", "opted-out", "user-tuned"],
)
def test_malloc_keeps_freed_memory_once_per_process_unless_told_not_to(
    monkeypatch: pytest.MonkeyPatch, environment: dict[str, str], tuned: bool
) -> None:
    libc = FakeLibc()
    monkeypatch.setattr(memory.ctypes, "CDLL", lambda name: libc)
    monkeypatch.setattr(memory, "_malloc_settled", False)
    for name in ("IMAGEFOLDER_LMDB_MALLOC", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    memory.keep_freed_memory_for_reuse()
    memory.keep_freed_memory_for_reuse()
    expected = [(-1, memory.KEEP_FREED_BYTES), (-3, memory.HEAP_BLOCKS_UP_TO)]
    assert libc.calls == (expected if tuned else [])


def test_reader_and_writer_share_one_malloc_setting_the_largest_ask_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    """One definition (reader/memory.py) for the reader and the LMDB writer: a writer's larger limits
    replace a reader's, and a smaller ask after them changes nothing."""
    libc = FakeLibc()
    monkeypatch.setattr(memory.ctypes, "CDLL", lambda name: libc)
    monkeypatch.setattr(memory, "_malloc_settled", False)
    monkeypatch.setattr(memory, "_settled_for", (0, 0))
    for name in ("IMAGEFOLDER_LMDB_MALLOC", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES"):
        monkeypatch.delenv(name, raising=False)
    writer = (lmdb_writer.WRITER_KEEP_FREED_BYTES, lmdb_writer.WRITER_HEAP_BLOCKS_UP_TO)
    memory.keep_freed_memory_for_reuse()
    memory.keep_freed_memory_for_reuse(*writer)
    memory.keep_freed_memory_for_reuse()
    reader = [(-1, memory.KEEP_FREED_BYTES), (-3, memory.HEAP_BLOCKS_UP_TO)]
    assert libc.calls == [*reader, (-1, writer[0]), (-3, writer[1])]


@pytest.mark.parametrize(("value", "storage"), storage_kinds().values(), ids=storage_kinds().keys())
def test_pil_decode_returns_what_imagefolder_loader_returns(value: bytes, storage: int) -> None:
    """The same object as torchvision's pil_loader (Image.open + convert("RGB")) makes: class, mode,
    size, info and pixels (the reader spares the copy convert makes of an RGB image)."""
    want = Image.open(io.BytesIO(value)).convert("RGB")
    got = decoding.pil_decode(value)
    assert type(got) is type(want) is Image.Image
    assert (got.mode, got.size, got.info, got.palette) == (want.mode, want.size, want.info, want.palette)
    assert np.array_equal(np.asarray(got), np.asarray(want))
