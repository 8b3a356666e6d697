"""Generate an ImageNet-like ImageFolder tree: photographic-looking JPEGs of varied sizes, plus the
oddities real datasets hold (a PNG named .JPEG, CMYK and grayscale JPEGs, an RGBA PNG).

    python -m benchmarks.make_images OUT --images 20000 --classes 100   # from the checkout

The command only: the generator is tests/support/images.py, shared by the tests and the benchmarks.
"""

from __future__ import annotations

from tests.support.images import main

if __name__ == "__main__":
    main()
