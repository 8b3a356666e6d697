"""The codec registry (issue 62, point 2): one line per codec, one per storage code; today's storage
codes keep their words, and each codec decodes what it holds the way the readers did before."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from PIL import Image

from imagefolder_lmdb.reader import decoding
from imagefolder_lmdb.reader.codec import (
    AS_IS,
    CODECS,
    JPEG,
    PNG,
    REENCODE_WHYS,
    STORAGE,
    STORAGE_REASONS,
    codec_for_format,
    codec_of,
    format_version_of,
    reencoded_code,
)

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
    assert codec_for_format("PNG") is PNG
    assert codec_for_format("GIF") is codec_for_format(None) is AS_IS


@pytest.mark.parametrize("name", sorted(CODECS))
def test_each_codec_decodes_to_pil_bytes_and_lazily_as_before(name: str) -> None:
    codec = CODECS[name]
    data = saved(picture(), "JPEG" if codec is JPEG else "PNG")
    want = decoding.pil_decode(data)
    assert np.array_equal(np.asarray(codec.decode(memoryview(data), "pil")), np.asarray(want))
    assert codec.decode(memoryview(data), "bytes") == data
    lazy = codec.decode(data, decoding.LAZY)
    assert decoding.is_lazy_jpeg(lazy) == (codec is JPEG)  # DCT-scaled decode: JPEG's alone
    assert np.array_equal(np.asarray(lazy.convert("RGB")), np.asarray(want))


@pytest.mark.parametrize("name", sorted(set(CODECS) - {"jpeg"}))
def test_a_codec_without_torchcodec_decodes_tensors_with_pillow(name: str) -> None:
    data = saved(picture(), "PNG")
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
