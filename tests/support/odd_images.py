"""An ImageFolder tree of images of many sizes, aspect ratios, formats and modes, for the resizing
settings (``encode.short_side``, ``encode.max_side``): large and small, square and extreme, one
pixel wide and high, grayscale, CMYK, PNG (also named .JPEG), RGBA, palette, progressive, MPO, and
EXIF-rotated JPEGs. The content is smooth (colour gradients), so a resized copy can be compared
with the source by its pixels despite JPEG loss.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

#: The EXIF tag of the orientation a viewer would apply (ImageFolder's loader does not).
EXIF_ORIENTATION = 0x0112


@dataclass(frozen=True)
class OddImage:
    name: str  # file name inside its class folder
    size: tuple[int, int]  # (width, height) as stored in the file, before any EXIF rotation
    kind: str  # how it is written: see write_odd_image


#: The tree, class by class. With ``short_side: 64`` they cover: far above it (DCT scaling at 1/4
#: and 1/2), just above it, equal to it, below it, one pixel wide or high, extreme aspect ratios.
ODD_TREE: dict[str, list[OddImage]] = {
    "a_rgb": [
        OddImage("big_landscape.JPEG", (640, 480), "jpeg"),
        OddImage("big_portrait.JPEG", (300, 1000), "jpeg"),
        OddImage("twice.JPEG", (129, 1000), "jpeg"),
        OddImage("just_above.JPEG", (65, 65), "jpeg"),
        OddImage("equal.JPEG", (64, 300), "jpeg"),
        OddImage("below.JPEG", (63, 500), "jpeg"),
        OddImage("small.JPEG", (40, 30), "jpeg"),
        OddImage("one_wide.JPEG", (1, 700), "jpeg"),
        OddImage("one_high.JPEG", (700, 1), "jpeg"),
        OddImage("wide.JPEG", (3000, 70), "jpeg"),
        OddImage("progressive.JPEG", (300, 257), "progressive"),
    ],
    "b_modes": [
        OddImage("gray.JPEG", (300, 200), "grayscale"),
        OddImage("gray_small.JPEG", (50, 50), "grayscale"),
        OddImage("cmyk.JPEG", (200, 300), "cmyk"),
        OddImage("png_named.JPEG", (250, 150), "png"),
        OddImage("rgba.png", (180, 120), "rgba-png"),
        OddImage("palette.png", (90, 200), "palette-png"),
        OddImage("png_small.png", (60, 20), "png"),
        OddImage("camera.JPEG", (400, 300), "mpo"),
    ],
    "c_exif": [
        OddImage("rotated_6.JPEG", (320, 160), "exif-6"),
        OddImage("rotated_8.JPEG", (90, 400), "exif-8"),
        OddImage("rotated_small.JPEG", (50, 40), "exif-6"),
        OddImage("plain.JPEG", (256, 512), "jpeg"),
    ],
}


def smooth_rgb(width: int, height: int, seed: int) -> Image.Image:
    """Colour gradients: a few random colours interpolated over the image."""
    coarse = np.random.default_rng(seed).integers(0, 256, (3, 4, 3), dtype=np.uint8)
    return Image.fromarray(coarse, "RGB").resize((width, height), Image.Resampling.BICUBIC)


def encoded(image: OddImage, seed: int) -> bytes:
    """The file's bytes."""
    rgb = smooth_rgb(*image.size, seed)
    buffer = io.BytesIO()
    if image.kind in ("jpeg", "progressive"):
        rgb.save(buffer, format="JPEG", quality=95, progressive=image.kind == "progressive")
    elif image.kind == "grayscale":
        rgb.convert("L").save(buffer, format="JPEG", quality=95)
    elif image.kind == "cmyk":
        rgb.convert("CMYK").save(buffer, format="JPEG", quality=95)
    elif image.kind == "png":
        rgb.save(buffer, format="PNG")
    elif image.kind == "rgba-png":
        rgba = rgb.convert("RGBA")
        rgba.putalpha(Image.linear_gradient("L").resize(rgb.size))
        rgba.save(buffer, format="PNG")
    elif image.kind == "palette-png":
        rgb.convert("P", palette=Image.Palette.ADAPTIVE).save(buffer, format="PNG")
    elif image.kind == "mpo":
        rgb.save(buffer, format="MPO", save_all=True, append_images=[smooth_rgb(*image.size, seed + 1)], quality=95)
    elif image.kind.startswith("exif-"):
        exif = Image.Exif()
        exif[EXIF_ORIENTATION] = int(image.kind.split("-")[1])
        rgb.save(buffer, format="JPEG", quality=95, exif=exif.tobytes())
    else:
        raise ValueError(f"unknown kind {image.kind!r}")
    return buffer.getvalue()


def make_odd_tree(root: Path) -> Path:
    """Write ODD_TREE under ``root`` (class folders of images); returns ``root``."""
    seed = 0
    for class_name, images in ODD_TREE.items():
        (root / class_name).mkdir(parents=True, exist_ok=True)
        for image in images:
            seed += 1
            (root / class_name / image.name).write_bytes(encoded(image, seed))
    return root
