"""The codec registry: what each codec a record may hold does (one ``Codec`` line each), and what each
storage code of ``meta/storage`` means (one ``StorageCode`` line each: why the bytes are what they
are, and which codec holds them). docs/FORMAT.md, "Storage codes", is its prose.

Every reader of records (through LMDB, by offset, from a URL) decodes with ``codec_of(code).decode``,
the one decode switch; the writer re-encodes with ``Codec.save`` and checks a source image with
``codec_for_format(...).header_check`` / ``decode_check``, and names what it stored with
``reencoded_code``. A new codec is one ``Codec`` line, its storage codes, and the format version
that introduced them (docs/architecture.md, "adding a codec").
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from imagefolder_lmdb.reader import jpeg_markers

# reader/decoding.py (numpy) is imported where a value is decoded: the rule jobs that only write records
# ask this registry for storage codes and Pillow's savers, and numpy is a third of a job's start.

if TYPE_CHECKING:
    import torch
    from PIL import Image

Stored = bytes | bytearray | memoryview


@dataclass(frozen=True)
class Codec:
    """One format a stored value may be in, and how each step handles it."""

    name: str
    #: Pillow's names of this format, as a source image opened by the conversion reports them.
    pillow_formats: tuple[str, ...]
    #: The largest width or height it holds (libjpeg: 65,500; libwebp: 16,383); None: never written here.
    max_side: int | None
    #: Stored bytes, held in a uint8 tensor, to a uint8 (3, H, W) RGB tensor (decode="tensor").
    tensor: Callable[[torch.Tensor], torch.Tensor]
    #: Stored bytes to a PIL image for a transform that decodes lazily (DCT-scaled where it can).
    lazy: Callable[[Stored], Image.Image]
    #: ``check: header`` of a source image in this format (raises on damage).
    header_check: Callable[[bytes], None]
    #: ``check: decode`` of a source image in this format, just opened, stored as it came (raises on damage).
    decode_check: Callable[[Image.Image], None]
    #: An RGB image encoded at ``quality``; None: this project never encodes it.
    save: Callable[[Image.Image, int], bytes] | None = None

    def decode(self, data: Any, decode: str) -> Any:
        """``data`` (stored bytes, possibly an LMDB buffer valid only inside its transaction, or for
        decode="tensor" a uint8 tensor already holding them) as a value that owns its memory: the one
        and only copy or decode of the stored bytes."""
        if decode == "bytes":  # before the import below: the per-record path that decodes nothing
            return bytes(data)
        from imagefolder_lmdb.reader.decoding import LAZY, encoded_tensor, pil_decode

        if decode == "pil":
            return pil_decode(data)
        if decode == LAZY:
            return self.lazy(data)
        if decode == "tensor":
            return self.tensor(data if hasattr(data, "numpy") else encoded_tensor(data))
        return bytes(data)


# -- what each codec does ---------------------------------------------------------------------------


def _jpeg_tensor(encoded: torch.Tensor) -> torch.Tensor:
    from imagefolder_lmdb.reader.decoding import encoded_tensor_decode

    return encoded_tensor_decode(encoded, jpeg=True)  # TorchCodec, Pillow where EXIF may turn it


def _pillow_tensor(encoded: torch.Tensor) -> torch.Tensor:
    from imagefolder_lmdb.reader.decoding import encoded_tensor_decode

    # Pillow, so that the pixels equal decode="pil"'s (TorchCodec's WebP and PNG decoders are not checked equal)
    return encoded_tensor_decode(encoded, jpeg=False)


def _jpeg_lazy(data: Stored) -> Image.Image:
    from imagefolder_lmdb.reader.decoding import lazy_jpeg_decode

    return lazy_jpeg_decode(data, jpeg=True)


def _pillow_lazy(data: Stored) -> Image.Image:
    from imagefolder_lmdb.reader.decoding import lazy_jpeg_decode

    return lazy_jpeg_decode(data, jpeg=False)  # no DCT scaling outside JPEG: decoded now


def jpeg_end(data: bytes) -> int | None:
    """Where the JPEG in ``data`` ends (the offset just after its end-of-image marker), found by
    walking its marker segments and the entropy-coded data of each scan, so that whatever follows
    (a phone's trailer, a motion photo's video) is not mistaken for the image; None if the data
    ends first (a file cut short) or stops being a JPEG."""
    return next((end for marker, _, end in jpeg_markers.segments(data) if marker == jpeg_markers.EOI), None)


def _jpeg_reaches_its_end(data: bytes) -> None:
    # Most files end with the end-of-image marker; cameras and phones may append trailers after it.
    if not data.endswith(b"\xff\xd9") and jpeg_end(data) is None:
        raise OSError("JPEG has no end-of-image marker: the file is truncated")


def _pillow_verify(data: bytes) -> None:
    from PIL import Image  # here: the format's readers of storage codes (meta, merge) open no image

    Image.open(io.BytesIO(data)).verify()  # checksums and structure, without decoding pixels


def _jpeg_decodes(image: Image.Image) -> None:
    # At 1/8 scale: libjpeg still reads and Huffman-decodes every coefficient (where truncation and
    # corrupt markers are found) but skips the full-size pixel work (1.4x less CPU measured here).
    image.draft(image.mode, (1, 1))
    image.load()


def _pillow_decodes(image: Image.Image) -> None:
    image.load()


def _saver(pillow_format: str, **options: Any) -> Callable[[Image.Image, int], bytes]:
    """An encoder of RGB images to ``pillow_format``; ``quality`` passed where the format takes one."""

    def save(image: Image.Image, quality: int) -> bytes:
        buffer = io.BytesIO()
        lossy = {} if pillow_format == "PNG" else {"quality": quality}
        image.save(buffer, format=pillow_format, **lossy, **options)
        return buffer.getvalue()

    return save


# -- the registry: one line per codec (name, Pillow's formats, largest side, tensor, lazy, checks, encode) --
_PILLOW_DECODES = (_pillow_tensor, _pillow_lazy, _pillow_verify, _pillow_decodes)
JPEG = Codec(
    "jpeg", ("JPEG", "MPO"), 65500, _jpeg_tensor, _jpeg_lazy, _jpeg_reaches_its_end, _jpeg_decodes, _saver("JPEG")
)
PNG = Codec("png", ("PNG",), 2**31 - 1, *_PILLOW_DECODES, _saver("PNG"))
WEBP = Codec("webp", ("WEBP",), 16383, *_PILLOW_DECODES, _saver("WEBP"))
#: The source's own bytes in any format Pillow reads (``reencode: never``): never written by this project.
AS_IS = Codec("as-is", (), None, *_PILLOW_DECODES)

CODECS = {codec.name: codec for codec in (JPEG, PNG, WEBP, AS_IS)}
#: The codecs ``encode.codec`` may name (config/schema.yaml): those a re-encode writes by choice.
ENCODE_CHOICES = ("jpeg", "webp")


def codec_for_format(pillow_format: str | None) -> Codec:
    """The codec of a source image Pillow opened as ``pillow_format``; any format without one is AS_IS."""
    return next((codec for codec in CODECS.values() if pillow_format in codec.pillow_formats), AS_IS)


# -- storage codes: why the bytes are what they are, and which codec holds them --------------------


@dataclass(frozen=True)
class StorageCode:
    #: The word meta/json records for it (``stats.storage``, ``storage_reasons``): fixed by the format.
    name: str
    #: Why: ``kept`` (the source's own bytes) or why it was re-encoded (``not-jpeg``, ``resized``, ...).
    why: str
    codec: Codec
    #: The format version that introduced it: a file holding it is at least that version.
    since: int = 1


#: The reasons to re-encode, in the order of their codes (JPEG's 1-7, WebP's 10-16).
REENCODE_WHYS = ("not-jpeg", "cmyk", "grayscale", "mpo", "other-mode", "resized", "always")
#: The format version that introduced the WebP codes.
WEBP_VERSION = 7
KEPT = "kept"

STORAGE: dict[int, StorageCode] = {
    0: StorageCode("passthrough", KEPT, JPEG),  # a valid RGB JPEG, stored byte for byte
    **{code: StorageCode(f"reencoded:{why}", why, JPEG) for code, why in enumerate(REENCODE_WHYS, 1)},
    8: StorageCode("stored-as-is", KEPT, AS_IS),  # encode.reencode = never, not a plain RGB JPEG
    # to re-encode (any reason), a side above JPEG's limit: a lossless RGB PNG
    9: StorageCode("reencoded:png-too-large-for-jpeg", "too-large", PNG, since=2),
    **{
        code: StorageCode(f"reencoded-webp:{why}", why, WEBP, since=WEBP_VERSION)
        for code, why in enumerate(REENCODE_WHYS, 10)
    },
}
#: The word of each code, as meta/json records it.
STORAGE_REASONS: dict[int, str] = {code: row.name for code, row in STORAGE.items()}
STORAGE_CODES = {name: code for code, name in STORAGE_REASONS.items()}
_CODE_OF_WHY = {(row.why, row.codec.name): code for code, row in STORAGE.items()}
#: The codec of each code, indexed by the code (a tuple: read for every record decoded).
_CODEC_OF_CODE = tuple(STORAGE[code].codec if code in STORAGE else None for code in range(max(STORAGE) + 1))


def codec_of(code: int) -> Codec:
    """The codec of the records of storage code ``code`` (KeyError: no such code)."""
    codec = _CODEC_OF_CODE[code] if 0 <= code < len(_CODEC_OF_CODE) else None
    if codec is None:
        raise KeyError(f"storage code {code} is none of {sorted(STORAGE)}")
    return codec


def reencoded_code(reason: str, codec: Codec) -> int:
    """The code of an image re-encoded for ``reason`` (a JPEG code's word: ``reencoded:cmyk``) into
    ``codec``: a PNG's is 9 whatever the reason."""
    if codec is PNG:
        return STORAGE_CODES["reencoded:png-too-large-for-jpeg"]
    return _CODE_OF_WHY[(STORAGE[STORAGE_CODES[reason]].why, codec.name)]


def format_version_of(storage: Iterable[int]) -> int:
    """The version a file with records of these storage codes is written as: the oldest that has them."""
    return max((STORAGE[int(code)].since for code in set(storage)), default=1)


def listed_reasons(version: int) -> dict[str, str]:
    """meta/json's ``storage_reasons`` of a file of ``version``: the codes of versions 1 and 2 in every
    file (as before WebP existed, so its bytes stay), a later version's only in files of that version."""
    return {str(code): row.name for code, row in STORAGE.items() if row.since <= max(version, 2)}
