"""JPEG's marker syntax, walked in one place: the reader looks up a JPEG's EXIF orientation before
its first scan (decoding.py), the writer finds where a JPEG's image ends (image_policy.py).

A JPEG is SOI, then marker segments (0xFF, the marker, a big-endian u16 length that counts itself,
the payload); fill bytes 0xFF may precede a marker, TEM and RST0-RST7 have no length, and after
each start of scan (SOS) its entropy-coded data runs to the next marker that is not a stuffed
0xFF00, a restart marker or a fill byte. EOI ends the image.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

SOI, EOI, SOS, APP1 = 0xD8, 0xD9, 0xDA, 0xE1
#: Markers without a length field (TEM, RST0-RST7).
BARE_MARKERS = frozenset({0x01, *range(0xD0, 0xD8)})
#: Start-of-frame markers of single-scan-capable sequential JPEGs (baseline, extended Huffman).
SEQUENTIAL_SOF = frozenset({0xC0, 0xC1})
ANY_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}  # DHT, JPG and DAC are not frames
#: Inside a scan's entropy-coded data, the next marker: 0xFF followed by neither a stuffed 0x00,
#: a restart marker (RST0-7) nor another fill byte 0xFF.
MARKER_AFTER_SCAN = re.compile(rb"\xff[^\x00\xd0-\xd7\xff]")


def starts_as_jpeg(data: bytes | memoryview) -> bool:
    """Whether ``data`` begins with SOI and has room for a marker after it."""
    return len(data) >= 4 and data[0] == 0xFF and data[1] == SOI


def segments(data: bytes | memoryview, position: int = 2) -> Iterator[tuple[int, int, int]]:
    """``(marker, start, end)`` of each marker segment of the JPEG in ``data`` from ``position``
    (just after SOI) on, in order: ``data[start:end]`` is the whole segment, marker included; EOI's
    is the last. A scan's entropy-coded data is skipped. Stops early, without an error, where the
    bytes end first or stop following the syntax (the callers' answer is then "not found"). A
    length below 2 is passed on as it is (``end - start < 4``): each caller judges it."""
    while position + 1 < len(data):
        if data[position] != 0xFF:
            return
        marker = data[position + 1]
        if marker == 0xFF or marker in BARE_MARKERS:  # a fill byte, or a marker without a length
            position += 1 if marker == 0xFF else 2
            continue
        if marker == EOI:
            yield marker, position, position + 2
            return
        if position + 4 > len(data):
            return
        end = position + 2 + int.from_bytes(data[position + 2 : position + 4], "big")
        if end > len(data):
            return
        yield marker, position, end
        position = end
        if marker == SOS:
            found = MARKER_AFTER_SCAN.search(data, position)
            if found is None:
                return
            position = found.start()
