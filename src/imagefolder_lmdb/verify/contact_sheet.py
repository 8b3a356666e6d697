"""The contact sheet of a verified dataset: the checked records' images in a grid, each labelled
``index: class`` and, where the file has them, the class's words (rule verify and ``verify --contact``)."""

from __future__ import annotations

import io
import random
from typing import Any

from PIL import Image, ImageDraw, ImageFont

from imagefolder_lmdb.reader import LMDBReader
from imagefolder_lmdb.reader.format_unlabelled import NO_LABEL
from imagefolder_lmdb.writing.atomic import atomic_file

CELL = 160  # contact sheet thumbnail box, pixels
LABEL_HEIGHT = 18
WORDS_HEIGHT = 14  # a second caption line, the class's words, for files that have them
MAX_SHEET_IMAGES = 64


def thumbnail(data: bytes) -> Image.Image:
    """A record's image fitted into a cell. Decoded for the cell's size (a JPEG's DCT scaling, as
    PIL's ``thumbnail`` does with an image not yet loaded): the full decode is the check's, already done."""
    encoded = Image.open(io.BytesIO(data))
    encoded.draft("RGB", (CELL, CELL))
    image = encoded.convert("RGB")
    image.thumbnail((CELL, CELL))
    return image


def sheet_indices(indices: list[int], seed: int = 0) -> list[int]:
    """The checked records to show: all of a sample, a random few when every record was checked."""
    if len(indices) <= MAX_SHEET_IMAGES:
        return indices
    return sorted(random.Random(seed).sample(indices, MAX_SHEET_IMAGES))


def fitted(text: str, draw: ImageDraw.ImageDraw, font: ImageFont.ImageFont | ImageFont.FreeTypeFont) -> str:
    """``text``, cut short with "..." where it is wider than a cell's caption."""
    width = CELL - 6
    if draw.textlength(text, font=font) <= width:
        return text
    while text and draw.textlength(text + "...", font=font) > width:
        text = text[:-1]
    return text.rstrip(" ,") + "..."


def caption(ds: LMDBReader, index: int, target: Any, words: list[str] | None) -> list[str]:
    """``index: class`` and the class's words; for several labels, ``index: class, class`` alone; for
    a split without labels (each target -1), ``index: (no label)``."""
    if target == NO_LABEL:
        return [f"{index}: (no label)"]
    if isinstance(target, list):
        return [f"{index}: " + (", ".join(ds.classes[label] for label in target) or "(no label)")]
    return [f"{index}: {ds.classes[target]}", *([words[target]] if words else [])]


def contact_sheet(ds: LMDBReader | None, indices: list[int], output: str) -> None:
    """A grid of the sampled images, each labelled ``index: class`` and, where the file has them,
    the class's words below (``tench, Tinca tinca``)."""
    shown = sheet_indices(indices)
    words = ds.class_words if ds is not None else None
    label_height = LABEL_HEIGHT + (WORDS_HEIGHT if words else 0)
    columns = max(1, min(8, len(shown)))
    rows = max(1, -(-len(shown) // columns))
    sheet = Image.new("RGB", (columns * CELL, rows * (CELL + label_height)), "white")
    draw = ImageDraw.Draw(sheet)
    font = ImageFont.load_default(size=12)
    for position, index in enumerate(shown):
        assert ds is not None
        x, y = (position % columns) * CELL, (position // columns) * (CELL + label_height)
        try:
            target = ds.targets[index]
            thumb = thumbnail(ds.get_bytes(index))
            sheet.paste(thumb, (x + (CELL - thumb.width) // 2, y + (CELL - thumb.height) // 2))
            lines = caption(ds, index, target, words)
        except Exception:  # noqa: BLE001 - a broken record is reported; show the gap
            lines = [f"{index}: UNREADABLE"]
        for number, line in enumerate(lines):
            draw.text((x + 3, y + CELL + 2 + number * WORDS_HEIGHT), fitted(line, draw, font), fill="black", font=font)
    if not shown:
        draw.text((4, 4), "no images", fill="black", font=font)
    with atomic_file(output, "wb") as stream:
        sheet.save(stream, format="PNG")
