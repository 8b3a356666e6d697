"""Decoding stored bytes: ``pil_decode`` (ImageFolder's pixels), ``tensor_decode`` and
``encoded_tensor_decode`` (TorchCodec, or Pillow where TorchCodec would apply an EXIF orientation)."""

from __future__ import annotations

import functools
import io
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from PIL import Image, JpegImagePlugin

from imagefolder_lmdb.reader.jpeg_markers import ANY_SOF, APP1, EOI, SEQUENTIAL_SOF, SOS, segments, starts_as_jpeg

if TYPE_CHECKING:
    import torch


Decode = Literal["pil", "tensor", "bytes"]
DECODE_CHOICES: tuple[str, ...] = ("pil", "tensor", "bytes")
#: How records are decoded for a ``decode="pil"`` dataset whose transform decodes JPEGs lazily
#: (imagefolder_lmdb.transforms): lazy_jpeg_decode. Internal, never a ``decode=`` choice.
LAZY = "lazy"
#: The TorchCodec release decode="tensor" is tested with (image decoders from 0.16 on); the
#: install hint of the error raised without it.
TORCHCODEC_PIN = "torchcodec==0.17.0"


def pil_decode(data: bytes | bytearray | memoryview) -> Image.Image:
    """Decode stored bytes exactly as torchvision's ``pil_loader`` decodes a file.

    Args:
        data (bytes or memoryview): a stored value (an LMDB buffer is read once, then released).

    Returns:
        PIL.Image.Image: an RGB image, the pixels ImageFolder gives.
    """
    image = Image.open(io.BytesIO(data))  # BytesIO copies a memoryview once; Pillow reads that copy
    image.load()
    if image.mode == "RGB":
        # What convert("RGB") returns for an RGB image (a copy: Image.copy is _new(im.copy())),
        # without copying the decoded pixels that nothing else holds.
        return image._new(image.im)
    return image.convert("RGB")


def lazy_jpeg_decode(data: bytes | bytearray | memoryview, jpeg: bool = True) -> Image.Image:
    """An RGB JPEG opened but not decoded: a PIL image whose pixels load on first access, so that a
    transform can ask for a DCT-reduced decode first (imagefolder_lmdb.transforms). Anything else
    (a value stored as-is, PNG, a JPEG that is not 3-component RGB) is decoded as ``pil_decode`` does.

    The bytes are copied once (BytesIO), so an LMDB buffer may be passed while its transaction is
    alive; a damaged JPEG raises when the transform first touches its pixels."""
    image = Image.open(io.BytesIO(data))
    if jpeg and image.format == "JPEG" and image.mode == "RGB" and len(image.tile) == 1:
        return image
    image.load()
    return image._new(image.im) if image.mode == "RGB" else image.convert("RGB")


def lazy_jpeg_transforms(transform: Any) -> list[Any]:
    """The transforms in ``transform`` that ask for lazily opened JPEGs (``decodes_lazy_jpeg = True``, as
    imagefolder_lmdb.transforms have), itself or inside a ``Compose``, ``RandomApply``, ``RandomChoice``
    or ``RandomOrder`` (v1 or v2: anything with a ``transforms`` list)."""
    if getattr(transform, "decodes_lazy_jpeg", False) is True:
        return [transform]
    inner = getattr(transform, "transforms", None)
    return [found for t in inner for found in lazy_jpeg_transforms(t)] if isinstance(inner, list | tuple) else []


def wants_lazy_jpeg(transform: Any) -> bool:
    """Whether ``transform`` holds a transform that asks for lazily opened JPEGs (lazy_jpeg_transforms)."""
    return bool(lazy_jpeg_transforms(transform))


def is_lazy_jpeg(image: Any) -> bool:
    """Whether ``image`` is an RGB JPEG opened by Pillow whose pixels are not loaded yet (draft still applies)."""
    return (
        isinstance(image, JpegImagePlugin.JpegImageFile)
        and image.mode == "RGB"
        and len(image.tile) == 1
        and not image.decoderconfig
    )


def decoded_unless_reduced(image: Any, wanting: list[Any]) -> Any:
    """``image``, or where it is a lazily opened JPEG that no transform of ``wanting`` could decode at a
    reduced size (each one's ``reduces(width, height)``: too small), decoded now as ``pil_decode`` does,
    so that images of ImageNet's size reach the transforms exactly as before."""
    if not is_lazy_jpeg(image) or any(t.reduces(*image.size) for t in wanting):
        return image
    image.load()
    return image._new(image.im)


def pil_to_chw(image: Image.Image) -> torch.Tensor:
    """An RGB PIL image as a contiguous uint8 ``(3, H, W)`` tensor, the layout decode_jpeg returns."""
    import torch

    return torch.from_numpy(np.array(image.convert("RGB"), dtype=np.uint8)).permute(2, 0, 1).contiguous()


@functools.cache
def torchcodec_jpeg_decoder() -> Callable[..., Any]:
    """TorchCodec's JPEG decoder, imported on first use (it needs no FFmpeg for images)."""
    try:
        from torchcodec.decoders import decode_jpeg
    except ImportError as exc:
        raise ImportError(
            f'decode="tensor" decodes JPEGs with TorchCodec, which is not installed here: `pip install '
            f'{TORCHCODEC_PIN}` (or a release compatible with your torch), or use decode="pil"'
        ) from exc
    return decode_jpeg


def tensor_decode(data: bytes | memoryview, jpeg: bool = True) -> torch.Tensor:
    """Decode stored bytes to a uint8 ``(3, H, W)`` RGB tensor, ready for transforms v2.

    Args:
        data (bytes or memoryview): a stored value. With ``jpeg=True`` TorchCodec's ``decode_jpeg``
            reads it in place (no copy, so it may be an LMDB buffer while its transaction is alive).
        jpeg (bool): the value is an RGB JPEG (a storage code of reader/codec.py's JPEG). False:
            Pillow decodes it (PNG, BMP, CMYK JPEG, ...), as ImageFolder would.

    Returns:
        torch.Tensor: uint8 ``(3, H, W)``, pixel-equal to ``pil_decode`` with the pinned decoders.

    Raises:
        ImportError: a JPEG to decode and no TorchCodec installed.
    """
    if not jpeg:
        return pil_to_chw(pil_decode(data))
    return encoded_tensor_decode(encoded_tensor(data), jpeg=True)


def encoded_tensor(data: bytes | bytearray | memoryview) -> torch.Tensor:
    """Stored bytes as a uint8 tensor over the same memory (no copy: an LMDB buffer stays one)."""
    import torch

    with warnings.catch_warnings():
        # LMDB's mapped memory is read-only, which torch warns about once; the decoders only read it.
        warnings.filterwarnings("ignore", message="The given buffer is not writable", category=UserWarning)
        return torch.frombuffer(data, dtype=torch.uint8)


def encoded_tensor_decode(encoded: torch.Tensor, jpeg: bool = True) -> torch.Tensor:
    """``tensor_decode`` of stored bytes already held in a uint8 tensor (the fast path reads into one).

    TorchCodec always turns an image as its EXIF orientation says, which ImageFolder's Pillow
    loader never does: a JPEG that may carry an orientation other than "as stored" is decoded with
    Pillow instead, so that every decode choice gives ImageFolder's pixels."""
    if not jpeg or _may_be_turned(encoded.numpy().data):
        return pil_to_chw(pil_decode(encoded.numpy().data))
    return torchcodec_jpeg_decoder()(encoded, mode="RGB")


# -- the EXIF orientation TorchCodec would apply ---------------------------------------------------
# TorchCodec (its DecodeJpeg.cpp and Exif.h) reads the orientation from the first APP1 segment that
# libjpeg saw by the time decoding starts: those before the first scan, and for progressive or
# multi-scan files those between scans too. _may_be_turned mirrors that reading and errs towards
# Pillow: anything it cannot follow counts as "may be turned".


def _may_be_turned(data: memoryview) -> bool:
    """Whether TorchCodec might turn this JPEG for its EXIF orientation (see above)."""
    header = _jpeg_header(data)
    if header is None:
        return True
    app1, single_scan, scan_start = header
    if app1 is not None:
        return _exif_orientation(app1) not in (-1, 1)
    # APP1 segments after the first scan are read only when libjpeg buffers every scan first
    return not single_scan and data[scan_start:].tobytes().find(b"\xff\xe1") >= 0


def _jpeg_header(data: memoryview) -> tuple[memoryview | None, bool, int] | None:
    """(the first APP1 segment's payload or None, whether the first scan is the only one, where the
    scan starts), from the markers up to the first start of scan; None where the bytes are not
    laid out as that walk expects."""
    if not starts_as_jpeg(data):
        return None
    app1, frame, components = None, None, 0
    for marker, start, end in segments(data):
        length = end - start - 2
        if length < 2 and marker != EOI:
            return None
        if marker == APP1 and app1 is None:
            app1 = data[start + 4 : end]
        elif marker in ANY_SOF and length >= 8:
            frame, components = marker, data[start + 9]
        elif marker == SOS:
            single = frame in SEQUENTIAL_SOF and length >= 3 and data[start + 4] == components
            return app1, single, end
    return None


def _exif_orientation(segment: memoryview) -> int:
    """The orientation TorchCodec reads from an APP1 payload, -1 for none (fetch_exif_orientation)."""
    if len(segment) <= 6:
        return -1
    exif = segment[6:]  # after "Exif\0\0", which TorchCodec does not check
    size = len(exif)
    intel = size >= 1 and (size == 1 or exif[0] == exif[1]) and exif[0] == ord("I")

    def number(offset: int, width: int) -> int:  # out of range: the C code's INCORRECT_TAG
        if offset + width - 1 >= size:
            return 0xFFFF
        raw = bytes(exif[offset : offset + width])
        return int.from_bytes(raw, "little" if intel else "big")

    if number(2, 2) != 0x2A:
        return -1
    offset = number(4, 4)
    entries = number(offset, 2)
    offset = (offset + 2) & 0xFFFFFFFF  # uint32_t arithmetic, as in the C code
    for _ in range(entries):
        tag = number(offset, 2)
        if tag == 0xFFFF:
            break
        if tag == 0x0112:
            return number((offset + 8) & 0xFFFFFFFF, 2)
        offset = (offset + 12) & 0xFFFFFFFF
    return -1
