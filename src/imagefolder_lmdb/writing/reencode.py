"""The image policy: how an image is checked, why it is re-encoded, how, and the words for a bad one.

One home for what decides the stored bytes, used by rule encode_shard and by the convert-legacy
command (commands/convert_legacy.py):

- ``encode.reencode: auto``: a valid RGB JPEG is stored byte for byte; anything else (PNG even
  when named .JPEG, CMYK, grayscale, MPO, other formats) is re-encoded as ImageFolder's loader
  would see it: ``convert("RGB")``, then JPEG (or ``encode.codec: webp``: WebP) at ``encode.quality``.
- ``always``: every image is re-encoded; ``never``: every readable image is stored as it is.
- ``encode.short_side`` and ``encode.max_side`` shrink larger images (re-encoding them): see
  :func:`stored_size` for the size, :func:`reencode` for the resampling. Every image is checked
  first (``encode.check``: a full decode, or headers and the JPEG end marker).
- An image to re-encode with a side above its codec's limit falls back (WebP's 16,383: JPEG; libjpeg's
  65,500: a lossless RGB PNG, ``reencoded:png-too-large-for-jpeg``): a valid image is never dropped
  for its size.

The storage codes and what each codec does are the format's: reader/codec.py (its registry). Which
stored values a shard's part holds, and which merge copies from the source: ``kept_in_part``.
"""

import io
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from PIL import Image, UnidentifiedImageError

from imagefolder_lmdb.reader.codec import (
    CODECS,
    JPEG,
    PNG,
    STORAGE_CODES,
    Codec,
    codec_for_format,
    reencoded_code,
)
from imagefolder_lmdb.reader.codec import jpeg_end as jpeg_end  # the JPEG marker walk, long imported from here


class BadImageError(ValueError):
    """An image that cannot be stored; the message names the file and the reason."""


@dataclass(frozen=True)
class EncodeSettings:
    """``encode.*`` of the config (config/schema.yaml, their one home, defaults included): rules
    encode_shard and write_meta take them from the checked config (config/step_settings.py), and
    convert-legacy from the schema's defaults and its flags."""

    reencode: str  # auto | always | never
    quality: int
    max_side: int | None
    short_side: int | None
    check: str  # decode | header
    on_error: str  # fail | skip
    #: What a re-encode writes (reader/codec.py, ENCODE_CHOICES); absent from a config: JPEG.
    codec: str = JPEG.name

    @classmethod
    def from_config(cls, encode: Mapping[str, Any]) -> "EncodeSettings":
        """The settings of a checked config's encode section (every key there, the defaults filled in;
        ``codec`` has none in the schema, so that a config without it keeps its params)."""
        return cls(**{key: encode[key] for key in cls.__dataclass_fields__ if key in encode})

    def recorded(self) -> dict[str, Any]:
        """The settings as meta/json's ``settings.encode`` records them: ``codec`` only where it is not
        JPEG, so that a file written without WebP keeps its bytes."""
        recorded = asdict(self)
        if self.codec == JPEG.name:
            del recorded["codec"]
        return recorded


@dataclass
class Encoded:
    value: bytes
    storage: int  # a storage code (reader/codec.py, STORAGE)
    width: int
    height: int


#: Storage codes whose stored value is the source file itself. encode_shard checks those images but
#: leaves their bytes out of its part; merge copies them from the source, checking each against the
#: CRC-32 taken when it was checked. So the bulk of a dataset is written once, not twice, and the
#: work folder never holds a second copy of it.
SOURCE_BYTES_CODES = frozenset({STORAGE_CODES["passthrough"], STORAGE_CODES["stored-as-is"]})


def kept_in_part(storage_code: int) -> bool:
    """Whether a shard's part holds the stored value (a re-encoded image), not the source."""
    return storage_code not in SOURCE_BYTES_CODES


def open_checked(data: bytes, check: str) -> Image.Image:
    """Open ``data`` with Pillow (headers only) and run the cheap structural checks; raise on damage.

    The full decode that ``check: decode`` asks for happens later, in :func:`check_decodes` for
    images stored as they are, or in re-encoding for the others.
    """
    image = Image.open(io.BytesIO(data))  # Pillow's decompression-bomb guard stays on
    if check == "header":  # a JPEG reaches its end marker; any other format passes Pillow's verify
        codec_for_format(image.format).header_check(data)
    return image


def check_decodes(image: Image.Image) -> None:
    """Decode ``image`` (just opened, not loaded) completely; raise if its compressed stream is
    damaged or cut short. Afterwards ``image`` holds reduced pixels: read its size before.

    A JPEG is decoded at 1/8 scale: libjpeg still reads and Huffman-decodes every coefficient of
    the whole stream (where truncation and corrupt markers are found) but skips the full-size
    inverse DCT, upsampling and colour conversion, which are most of the work of a decode and can
    only fail on data the entropy decoder already accepted (1.4x less CPU measured here).
    """
    codec_for_format(image.format).decode_check(image)


def reencode_reason(image: Image.Image, settings: EncodeSettings) -> str | None:
    """Why ``image`` must be re-encoded (a STORAGE_REASONS value), or None to keep its bytes.

    A shrunk image is ``reencoded:resized`` whatever its format or mode: every re-encode converts
    to RGB (JPEG, or ``encode.codec``'s: ``reencoded_code``), and the change of size is what a reader
    of a resized dataset must be able to see."""
    if stored_size(*image.size, settings) != image.size:
        reason = "reencoded:resized"
    elif image.format == "MPO":
        reason = "reencoded:mpo"
    elif image.format != "JPEG":
        reason = "reencoded:not-jpeg"
    elif image.mode == "CMYK":
        reason = "reencoded:cmyk"
    elif image.mode in ("L", "LA", "I", "I;16", "1"):
        reason = "reencoded:grayscale"
    elif image.mode != "RGB":
        reason = "reencoded:other-mode"
    elif settings.reencode == "always":
        reason = "reencoded:always"
    else:
        return None
    return reason if settings.reencode != "never" else "stored-as-is"


def shrunk_size(width: int, height: int, max_side: int) -> tuple[int, int]:
    """``max_side``: the longer side becomes ``max_side``, the other in proportion, rounded to nearest."""
    scale = max_side / max(width, height)
    return max(1, round(width * scale)), max(1, round(height * scale))


def short_side_size(width: int, height: int, short_side: int) -> tuple[int, int]:
    """``short_side``: the shorter side becomes ``short_side``, the longer one in proportion, rounded
    down, exactly as torchvision's ``Resize(short_side)`` sizes an image (so that transform, run
    again on the stored image, finds nothing to resize)."""
    if width <= height:
        return short_side, height * short_side // width
    return width * short_side // height, short_side


def stored_size(width: int, height: int, settings: EncodeSettings) -> tuple[int, int]:
    """The size an image of ``width`` x ``height`` is stored at: first ``short_side`` (a shorter
    side above it is brought down to it), then ``max_side`` (a longer side still above it is
    brought down to it, which then decides the scale). Never larger than the source."""
    size = (width, height)
    if settings.short_side is not None and min(size) > settings.short_side:
        size = short_side_size(width, height, settings.short_side)
    if settings.max_side is not None and max(size) > settings.max_side:
        size = shrunk_size(width, height, settings.max_side)
    return size


def reencode(image: Image.Image, settings: EncodeSettings) -> Image.Image:
    """The pixels ImageFolder's loader would return (no EXIF rotation, as it applies none), shrunk
    to :func:`stored_size`, ready to save as JPEG.

    With ``short_side`` set, a JPEG is first decoded at the strongest of 1/2, 1/4, 1/8 reduction
    that keeps both sides at least the stored size (libjpeg's DCT scaling: every coefficient is still
    read, the full-size pixel work is skipped), then resampled with Pillow's antialiased BILINEAR
    filter, torchvision's ``Resize`` default: an image decoded at full size (shorter side under
    twice ``short_side``) is stored as ``Resize(short_side)`` makes it, up to JPEG loss.
    ``max_side`` alone resizes as it always has: full decode, LANCZOS."""
    size = stored_size(*image.size, settings)
    if size == image.size:
        return image.convert("RGB")
    if settings.short_side is None:
        return image.convert("RGB").resize(size, Image.Resampling.LANCZOS)
    if codec_for_format(image.format) is JPEG:
        image.draft(image.mode, size)  # picks the largest reduction whose result is still >= size
    rgb = image.convert("RGB")
    return rgb if rgb.size == size else rgb.resize(size, Image.Resampling.BILINEAR)


def encode_image(data: bytes, settings: EncodeSettings) -> Encoded:
    """Decide how to store one image and produce the bytes; raises on an unusable image."""
    image = open_checked(data, settings.check)
    reason = reencode_reason(image, settings)
    if reason is None or reason == "stored-as-is":
        width, height = image.size
        if settings.check == "decode":
            check_decodes(image)
        return Encoded(data, STORAGE_CODES[reason or "passthrough"], width, height)
    rgb = reencode(image, settings)
    codec = stored_codec(settings.codec, rgb.size)
    assert codec.save is not None  # every codec stored_codec picks is one this project writes
    return Encoded(codec.save(rgb, settings.quality), reencoded_code(reason, codec), *rgb.size)


def stored_codec(name: str, size: tuple[int, int]) -> Codec:
    """The codec a re-encoded image of ``size`` is saved in: ``encode.codec``'s where it holds the
    size, else JPEG, else (a side above 65,500) a lossless PNG: kept whole, never dropped for its size."""
    return next(codec for codec in (CODECS[name], JPEG, PNG) if max(size) <= (codec.max_side or 0))


#: What Pillow (and our own checks) raise for an image that cannot be stored.
UNUSABLE_IMAGE = (OSError, SyntaxError, ValueError, Image.DecompressionBombError)


def what_went_wrong(exc: Exception) -> str:
    """The reason, in words (Pillow's own names an in-memory buffer, not the file)."""
    if isinstance(exc, UnidentifiedImageError):
        return "not an image Pillow can read (an unknown format, or damaged from its first bytes)"
    if type(exc) is ValueError:  # ours
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def likely_cause(path: str) -> str:
    """A hint for bad files that are no image at all but look like one to ImageFolder."""
    if os.path.basename(path).startswith("._"):
        # macOS writes "._name" resource-fork files beside every file it copies to other filesystems
        # or packs into tars; they carry the image's extension, so ImageFolder lists them too
        return " (a macOS metadata file, not an image: delete the ._* files from the source)"
    return ""
