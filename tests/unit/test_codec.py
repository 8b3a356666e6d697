"""The codec registry (issue 62, point 2): one line per codec, one per storage code; today's storage
codes keep their words, and each codec decodes what it holds the way the readers did before. WebP,
the codec added through it (``encode.codec: webp``): its codes, its version 7, what the writer stores
under each ``reencode`` value and ``short_side``, and what a file without it keeps."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from PIL import Image

from imagefolder_lmdb.config.schema import load_schema
from imagefolder_lmdb.reader import decoding
from imagefolder_lmdb.reader.codec import (
    AS_IS,
    CODECS,
    ENCODE_CHOICES,
    JPEG,
    PNG,
    REENCODE_WHYS,
    STORAGE,
    STORAGE_REASONS,
    WEBP,
    codec_for_format,
    codec_of,
    format_version_of,
    listed_reasons,
    reencoded_code,
)
from imagefolder_lmdb.writing.reencode import encode_image
from support import REPO
from support.settings import encode_settings

#: The storage words every file written so far holds (meta/json's storage_reasons and stats.storage).
TODAYS_WORDS = {
    0: "passthrough",
    1: "reencoded:not-jpeg",
    2: "reencoded:cmyk",
    3: "reencoded:grayscale",
    4: "reencoded:mpo",
    5: "reencoded:other-mode",
    6: "reencoded:resized",
    7: "reencoded:always",
    8: "stored-as-is",
    9: "reencoded:png-too-large-for-jpeg",
}


def saved(image: Image.Image, pillow_format: str) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=pillow_format)
    return buffer.getvalue()


def picture() -> Image.Image:
    pixels = np.random.default_rng(62).integers(0, 255, (21, 34, 3), dtype=np.uint8)
    return Image.fromarray(pixels)


def test_todays_storage_codes_keep_their_words_and_versions() -> None:
    assert {code: STORAGE_REASONS[code] for code in TODAYS_WORDS} == TODAYS_WORDS
    assert format_version_of(range(9)) == 1 and format_version_of([0, 9]) == 2 and format_version_of([]) == 1
    for version in (1, 2, 3, 4, 6):  # meta/json's storage_reasons of every file without WebP, as it was
        assert listed_reasons(version) == {str(code): word for code, word in TODAYS_WORDS.items()}


def test_webp_takes_codes_10_to_16_and_version_7() -> None:
    assert [codec_of(code) for code in range(10, 17)] == [WEBP] * 7
    assert [STORAGE_REASONS[code] for code in (10, 15, 16)] == [
        "reencoded-webp:not-jpeg",
        "reencoded-webp:resized",
        "reencoded-webp:always",
    ]
    assert format_version_of([0, 9, 12]) == 7 and set(listed_reasons(7)) == {str(code) for code in range(17)}
    assert reencoded_code("reencoded:cmyk", WEBP) == 11


def test_each_code_says_why_and_which_codec_apart() -> None:
    assert [codec_of(code) for code in range(10)] == [JPEG] * 8 + [AS_IS, PNG]
    assert {STORAGE[code].why for code in (0, 8)} == {"kept"}
    for row in STORAGE.values():  # the summary counts re-encodes by the word after the last colon
        assert row.why not in REENCODE_WHYS or (row.name.startswith("reencoded") and row.name.endswith(":" + row.why))
    with pytest.raises(KeyError, match="storage code 200"):
        codec_of(200)


def test_a_reencode_is_named_by_its_reason_and_codec() -> None:
    assert reencoded_code("reencoded:cmyk", JPEG) == 2
    assert reencoded_code("reencoded:resized", PNG) == reencoded_code("reencoded:always", PNG) == 9


def test_a_source_format_finds_its_codec() -> None:
    assert codec_for_format("JPEG") is codec_for_format("MPO") is JPEG
    assert codec_for_format("PNG") is PNG and codec_for_format("WEBP") is WEBP
    assert codec_for_format("GIF") is codec_for_format(None) is AS_IS


@pytest.mark.parametrize("name", sorted(CODECS))
def test_each_codec_decodes_to_pil_bytes_and_lazily_as_before(name: str) -> None:
    codec = CODECS[name]
    data = saved(picture(), {"jpeg": "JPEG", "webp": "WEBP"}.get(name, "PNG"))
    want = decoding.pil_decode(data)
    assert np.array_equal(np.asarray(codec.decode(memoryview(data), "pil")), np.asarray(want))
    assert codec.decode(memoryview(data), "bytes") == data
    lazy = codec.decode(data, decoding.LAZY)
    assert decoding.is_lazy_jpeg(lazy) == (codec is JPEG)  # DCT-scaled decode: JPEG's alone
    assert np.array_equal(np.asarray(lazy.convert("RGB")), np.asarray(want))


@pytest.mark.parametrize("name", sorted(set(CODECS) - {"jpeg"}))
def test_a_codec_without_torchcodec_decodes_tensors_with_pillow(name: str) -> None:
    data = saved(picture(), "WEBP" if name == "webp" else "PNG")
    want = decoding.pil_to_chw(decoding.pil_decode(data))
    encoded = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    assert torch.equal(CODECS[name].decode(data, "tensor"), want)  # from bytes
    assert torch.equal(CODECS[name].decode(encoded, "tensor"), want)  # from a tensor read by offset


def test_the_writer_saves_with_each_codec_it_writes() -> None:
    rgb = picture()
    assert JPEG.save is not None and PNG.save is not None and AS_IS.save is None
    assert JPEG.save(rgb, 90) == saved_jpeg(rgb, 90)
    assert PNG.save(rgb, 90) == saved(rgb, "PNG")


def saved_jpeg(image: Image.Image, quality: int) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=quality)
    return buffer.getvalue()


# -- WebP through the writer -------------------------------------------------------------------------

SOURCES = {
    "rgb-jpeg": lambda: saved_jpeg(picture(), 90),
    "grayscale-jpeg": lambda: saved(picture().convert("L"), "JPEG"),
    "png": lambda: saved(picture(), "PNG"),
}
#: (source, encode settings beside codec: webp) -> the storage code: valid RGB JPEGs still pass
#: through under reencode auto; always makes every image WebP; never stores every file as it is.
EXPECTED = {
    ("rgb-jpeg", "auto"): 0,
    ("grayscale-jpeg", "auto"): 12,
    ("png", "auto"): 10,
    ("rgb-jpeg", "always"): 16,
    ("png", "always"): 10,  # why it had to be re-encoded anyway comes first
    ("rgb-jpeg", "never"): 0,
    ("png", "never"): 8,
}


@pytest.mark.parametrize(("source", "reencode"), EXPECTED, ids=[f"{s}-{r}" for s, r in EXPECTED])
def test_webp_under_each_reencode_value(source: str, reencode: str) -> None:
    data = SOURCES[source]()
    encoded = encode_image(data, encode_settings(codec="webp", reencode=reencode, quality=80))
    assert encoded.storage == EXPECTED[(source, reencode)]
    stored = Image.open(io.BytesIO(encoded.value))
    if codec_of(encoded.storage) is WEBP:
        assert stored.format == "WEBP" and stored.mode == "RGB" and stored.size == (34, 21)
    else:
        assert encoded.value == data  # kept byte for byte


def test_webp_with_short_side_and_above_its_largest_side() -> None:
    resized = encode_image(saved_jpeg(picture(), 95), encode_settings(codec="webp", short_side=10))
    assert (resized.storage, resized.width, resized.height) == (15, 16, 10)
    assert Image.open(io.BytesIO(resized.value)).format == "WEBP"
    strip = saved(Image.new("L", (16384, 1), 90), "PNG")  # one pixel wider than WebP holds: JPEG
    wide = encode_image(strip, encode_settings(codec="webp"))
    assert wide.storage == 1 and Image.open(io.BytesIO(wide.value)).format == "JPEG"


def test_the_settings_record_webp_alone() -> None:
    assert "codec" not in encode_settings().recorded() and "codec" not in encode_settings(codec="jpeg").recorded()
    assert encode_settings(codec="webp").recorded()["codec"] == "webp"
    schema = load_schema(str(REPO / "config" / "schema.yaml"))
    codec = schema["properties"]["encode"]["properties"]["codec"]
    assert tuple(codec["enum"]) == ENCODE_CHOICES and "default" not in codec  # absent: a config keeps its params
