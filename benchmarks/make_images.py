"""Generate an ImageNet-like ImageFolder tree: photographic-looking JPEGs of varied sizes, plus the
oddities real datasets hold (a PNG named .JPEG, CMYK and grayscale JPEGs, an RGBA PNG).

    python benchmarks/make_images.py OUT --images 20000 --classes 100

The command only: the generator is tests/support/images.py, shared by the tests and the benchmarks.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.images import main

if __name__ == "__main__":
    main()
