"""Generated images: an ImageNet-like ImageFolder tree of photographic-looking JPEGs of varied sizes,
plus the oddities real datasets hold (a PNG named .JPEG, CMYK and grayscale JPEGs, an RGBA PNG):
the data of ``make demo``, the benchmarks and the tests (tests/support/images.py takes it from here).

    python -m benchmarks.make_images OUT --images 20000 --classes 100   # from the checkout

Content is smooth colour fields with soft shapes and film grain, so JPEG sizes and decode costs
resemble real photos (~110 KB at ~480x400, quality 90) rather than flat synthetic tiles.
Deterministic for a given seed.
"""

from __future__ import annotations

import argparse
import io
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

#: Odd files every generated tree gets (one each, in the first classes): name suffix -> kind.
SPECIALS = ("png-named-jpeg", "cmyk", "grayscale", "rgba-png")


@dataclass(frozen=True)
class ImageSpec:
    path: str
    seed: int
    kind: str  # "jpeg" or one of SPECIALS
    quality: int
    grain: float


def photo_like(rng: np.random.Generator, width: int, height: int, grain: float) -> Image.Image:
    """Smooth colour gradients, a few blurred shapes and Gaussian grain."""
    coarse = rng.integers(0, 256, size=(rng.integers(2, 6), rng.integers(2, 6), 3), dtype=np.uint8)
    image = Image.fromarray(coarse, "RGB").resize((width, height), Image.Resampling.BICUBIC)
    draw = ImageDraw.Draw(image)
    for _ in range(int(rng.integers(3, 9))):
        x0, y0 = int(rng.integers(0, width)), int(rng.integers(0, height))
        x1, y1 = x0 + int(rng.integers(20, width // 2 + 21)), y0 + int(rng.integers(20, height // 2 + 21))
        colour = tuple(int(c) for c in rng.integers(0, 256, size=3))
        if rng.random() < 0.5:
            draw.ellipse((x0, y0, x1, y1), fill=colour)
        else:
            draw.rectangle((x0, y0, x1, y1), fill=colour)
    image = image.filter(ImageFilter.GaussianBlur(radius=float(rng.uniform(1.0, 4.0))))
    pixels = np.asarray(image, dtype=np.float32)
    pixels += rng.normal(0.0, grain, size=pixels.shape).astype(np.float32)
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8), "RGB")


def render(spec: ImageSpec) -> int:
    """Write one image file; returns its size in bytes."""
    rng = np.random.default_rng(spec.seed)
    width, height = int(rng.integers(360, 601)), int(rng.integers(300, 501))
    image = photo_like(rng, width, height, spec.grain)
    buffer = io.BytesIO()
    if spec.kind == "png-named-jpeg":
        image.save(buffer, format="PNG")
    elif spec.kind == "cmyk":
        image.convert("CMYK").save(buffer, format="JPEG", quality=spec.quality)
    elif spec.kind == "grayscale":
        image.convert("L").save(buffer, format="JPEG", quality=spec.quality)
    elif spec.kind == "rgba-png":
        rgba = image.convert("RGBA")
        rgba.putalpha(Image.linear_gradient("L").resize(image.size))
        rgba.save(buffer, format="PNG")
    else:
        image.save(buffer, format="JPEG", quality=spec.quality)
    os.makedirs(os.path.dirname(spec.path), exist_ok=True)
    with open(spec.path, "wb") as stream:
        stream.write(buffer.getvalue())
    return buffer.tell()


def class_names(classes: int, seed: int) -> list[str]:
    """WordNet-style ids like ImageNet's, distinct and deterministic."""
    rng = np.random.default_rng(seed)
    ids = rng.choice(np.arange(1_000_000, 15_000_000), size=classes, replace=False)
    return [f"n{int(i):08d}" for i in sorted(ids)]


def special_kind(i: int, classes: int) -> str:
    """The first images of the first classes are the oddities, one of each kind."""
    round_, label = divmod(i, classes)
    return SPECIALS[label] if round_ == 0 and label < len(SPECIALS) else "jpeg"


def plan(
    out: str, images: int, classes: int, seed: int, first_index: int, quality: int, grain: float
) -> list[ImageSpec]:
    names = class_names(classes, seed)
    specs = []
    for i in range(images):
        label = i % classes
        kind = special_kind(i, classes)
        number = first_index + i
        suffix = ".png" if kind == "rgba-png" else ".JPEG"
        path = os.path.join(out, names[label], f"{names[label]}_{number:06d}{suffix}")
        specs.append(ImageSpec(path=path, seed=seed * 1_000_003 + number, kind=kind, quality=quality, grain=grain))
    return specs


def make_images(
    out: str,
    images: int,
    classes: int,
    seed: int = 0,
    first_index: int = 0,
    quality: int = 90,
    grain: float = 26.0,
    workers: int | None = None,
) -> int:
    """Generate the tree; returns the total bytes written."""
    specs = plan(out, images, classes, seed, first_index, quality, grain)
    with ProcessPoolExecutor(max_workers=workers or os.cpu_count()) as pool:
        return sum(pool.map(render, specs, chunksize=32))


def main() -> None:
    """The command ``python -m benchmarks.make_images OUT [--images N --classes K ...]``."""
    parser = argparse.ArgumentParser(
        description="Generate an ImageNet-like ImageFolder tree: photographic-looking JPEGs of varied sizes, "
        "plus a PNG named .JPEG, a CMYK and a grayscale JPEG and an RGBA PNG."
    )
    parser.add_argument("out", help="folder to create the class folders in")
    parser.add_argument("--images", type=int, default=20000)
    parser.add_argument("--classes", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0, help="decides class names and pixels")
    parser.add_argument(
        "--first-index", type=int, default=0, help="number of the first file; give a val split other numbers than train"
    )
    parser.add_argument("--quality", type=int, default=90)
    parser.add_argument("--grain", type=float, default=26.0, help="noise sigma; more grain = bigger JPEGs")
    args = parser.parse_args()
    if args.images < args.classes:
        parser.error("--images must be at least --classes (every class needs an image)")
    total = make_images(args.out, args.images, args.classes, args.seed, args.first_index, args.quality, args.grain)
    print(f"{args.images} images in {args.classes} classes, {total / 1e6:.1f} MB, under {args.out}")


if __name__ == "__main__":
    main()
