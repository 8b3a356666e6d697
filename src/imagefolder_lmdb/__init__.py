# SPDX-License-Identifier: MIT
"""imagefolder-lmdb's reader, installed with pip: ``from imagefolder_lmdb import LMDBDataset``.

The reader is the subpackage ``imagefolder_lmdb.reader`` (``scripts/dataset.py`` re-exports it inside a
checkout, ``imagefolder_lmdb.dataset`` where it was before). The rest of the package is the
workflow's library (``steps``: one module per rule), the workflow itself (``workflow/``), run by
``convert()`` and the ``imagefolder-lmdb`` command. This module re-exports the reader's public
names, each on first use, so importing the package imports no torch: ``LMDBDataset`` does, as in the
file itself. ``ElasticDistributedSampler`` (imagefolder_lmdb.sampler, issue 32) is imported on first use too.
"""

from __future__ import annotations

from importlib import metadata
from typing import TYPE_CHECKING, Any

from imagefolder_lmdb import reader as _reader

# Bound after the import of its module, so ``imagefolder_lmdb.convert`` is the function (the module's
# other names: ``from imagefolder_lmdb.convert import ...``). Imports nothing but the standard library.
from imagefolder_lmdb.convert import SNAKEFILE, WORKFLOW, ConvertError, SplitOutputs, convert

# The module's own paths stay reachable through the name that now is the function (a host's
# ``module ...: snakefile: imagefolder_lmdb.convert.SNAKEFILE`` keeps working).
convert.SNAKEFILE, convert.WORKFLOW = SNAKEFILE, WORKFLOW  # type: ignore[attr-defined]

if TYPE_CHECKING:
    from imagefolder_lmdb.reader import *  # noqa: F403
    from imagefolder_lmdb.sampler import ElasticDistributedSampler, sampler_state_from_loader

#: The elastic sampler's names, from imagefolder_lmdb.sampler (which imports torch).
_SAMPLER_NAMES = ("ElasticDistributedSampler", "sampler_state_from_loader")

__all__ = [
    *_reader.__all__,
    "ElasticDistributedSampler",
    "sampler_state_from_loader",
    "SNAKEFILE",
    "WORKFLOW",
    "ConvertError",
    "SplitOutputs",
    "convert",
]


def __getattr__(name: str) -> Any:
    # PEP 562: LMDBDataset is built (importing torch) only when asked for, by the reader itself; the
    # version is looked up when asked for, so a checkout on PYTHONPATH imports without an install.
    if name in _reader.__all__:
        return getattr(_reader, name)
    if name in _SAMPLER_NAMES:
        from imagefolder_lmdb import sampler

        return getattr(sampler, name)
    if name == "__version__":
        return metadata.version("imagefolder-lmdb")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public API (what ``__all__`` names and ``__version__``), not the module's internals."""
    return sorted({*__all__, "__version__"})
