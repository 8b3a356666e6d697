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

import importlib
from typing import TYPE_CHECKING, Any

# Bound after the import of its module, so ``imagefolder_lmdb.convert`` is the function (the module's
# other names: ``from imagefolder_lmdb.convert import ...``). Imports nothing but the standard library.
from imagefolder_lmdb.convert import SNAKEFILE as SNAKEFILE
from imagefolder_lmdb.convert import WORKFLOW as WORKFLOW
from imagefolder_lmdb.convert import ConvertError as ConvertError
from imagefolder_lmdb.convert import SplitOutputs as SplitOutputs
from imagefolder_lmdb.convert import convert as convert

# The module's own paths stay reachable through the name that now is the function (a host's
# ``module ...: snakefile: imagefolder_lmdb.convert.SNAKEFILE`` keeps working).
convert.SNAKEFILE, convert.WORKFLOW = SNAKEFILE, WORKFLOW  # type: ignore[attr-defined]

if TYPE_CHECKING:
    from imagefolder_lmdb.reader import *  # noqa: F403
    from imagefolder_lmdb.sampler import ElasticDistributedSampler as ElasticDistributedSampler
    from imagefolder_lmdb.sampler import sampler_state_from_loader as sampler_state_from_loader

#: The elastic sampler's names, from imagefolder_lmdb.sampler (which imports torch).
_SAMPLER_NAMES = ("ElasticDistributedSampler", "sampler_state_from_loader")
#: This module's names besides the reader's.
_OWN_NAMES = (*_SAMPLER_NAMES, "SNAKEFILE", "WORKFLOW", "ConvertError", "SplitOutputs", "convert")


def __getattr__(name: str) -> Any:
    # PEP 562: the reader's names (``__all__`` too) are looked up in imagefolder_lmdb.reader on first
    # use, so that importing the package imports neither numpy nor PIL: every Snakemake start loads
    # the logger plugin, which imports it, and most rule jobs need the reader's format only later.
    # LMDBDataset itself is built (importing torch) only when asked for, by the reader.
    if name in _SAMPLER_NAMES:
        from imagefolder_lmdb import sampler

        return getattr(sampler, name)
    if name == "__version__":  # looked up when asked for: a checkout on PYTHONPATH imports without an install
        from importlib import metadata

        return metadata.version("imagefolder-lmdb")
    if name == "__all__" or not name.startswith("__"):
        # not ``from imagefolder_lmdb import reader``: that asks this function for ``reader`` first
        reader = importlib.import_module("imagefolder_lmdb.reader")
        if name == "__all__":
            return [*reader.__all__, *_OWN_NAMES]
        if name in reader.__all__:
            return getattr(reader, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public API (what ``__all__`` names and ``__version__``), not the module's internals."""
    return sorted({*__getattr__("__all__"), "__version__"})
