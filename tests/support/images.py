"""Generated images for the tests: the ImageNet-like tree of ``make demo`` and the benchmarks
(benchmarks/make_images.py, re-exported here), its size in the tests, and single JPEG/PNG values for
tests that write datasets directly."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

from benchmarks.make_images import class_names, make_images, photo_like

__all__ = ["TREE_CLASSES", "TREE_IMAGES", "class_names", "jpeg_bytes", "make_images", "photo_like", "png_bytes"]

#: The tests' generated tree (conftest.py's ``image_tree``): 4 classes, so each of the four oddities
#: (PNG named .JPEG, CMYK, grayscale, RGBA PNG) lands in its own class, and ImageFolder order is exercised.
TREE_IMAGES = 40
TREE_CLASSES = 4


def jpeg_bytes(seed: int, size: tuple[int, int] = (120, 90), mode: str = "RGB") -> bytes:
    """A JPEG of random pixels, ``size`` = (width, height)."""
    pixels = np.random.default_rng(seed).integers(0, 256, (size[1], size[0], len(mode)), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels.squeeze(), mode).save(buffer, format="JPEG", quality=90)
    return buffer.getvalue()


def png_bytes(seed: int, size: tuple[int, int] = (100, 80)) -> bytes:
    """An RGBA PNG of random pixels, ``size`` = (width, height)."""
    pixels = np.random.default_rng(seed).integers(0, 256, (size[1], size[0], 4), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels, "RGBA").save(buffer, format="PNG")
    return buffer.getvalue()
