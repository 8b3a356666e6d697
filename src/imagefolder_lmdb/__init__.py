# SPDX-License-Identifier: MIT
"""imagefolder-lmdb's reader, installed with pip: ``from imagefolder_lmdb import LMDBDataset``.

The reader is the repository's ``scripts/dataset.py``, the same file that can be copied on its own:
the wheel ships it, with the modules the ``imagefolder-lmdb`` command needs, as
``imagefolder_lmdb._scripts`` (pyproject.toml maps scripts/ there; no second copy exists). This
module re-exports its public names, each on first use, so importing the package imports no torch:
``LMDBDataset`` does, as in the file itself.
"""

from __future__ import annotations

from importlib import metadata
from typing import TYPE_CHECKING, Any

from imagefolder_lmdb._scripts import dataset as _dataset

if TYPE_CHECKING:
    from imagefolder_lmdb._scripts.dataset import *  # noqa: F403
    from imagefolder_lmdb._scripts.dataset import LMDBReader

__all__ = [*_dataset.__all__, "LMDBReader"]
__version__ = metadata.version("imagefolder-lmdb")


def __getattr__(name: str) -> Any:
    # PEP 562: LMDBDataset is built (importing torch) only when asked for, by the reader itself.
    if name in __all__:
        return getattr(_dataset, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
