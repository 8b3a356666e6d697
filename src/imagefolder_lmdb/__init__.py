# SPDX-License-Identifier: MIT
"""imagefolder-lmdb's reader, installed with pip: ``from imagefolder_lmdb import LMDBDataset``.

The reader is the subpackage ``imagefolder_lmdb.reader`` (``scripts/dataset.py`` re-exports it inside a
checkout, ``imagefolder_lmdb.dataset`` where it was before). The rest of the package is the
workflow's library (``steps``: one module per rule), the workflow itself (``workflow/``), run by
``convert()`` and the ``imagefolder-lmdb`` command. ``__all__`` is the user API: the dataset and
reader classes and the errors and warning the docs name, ``convert`` with ``ConvertError``, ``SplitOutputs``,
``SNAKEFILE`` and ``WORKFLOW``, ``ElasticDistributedSampler`` with ``sampler_state_from_loader``
(imagefolder_lmdb.sampler, issue 32), and ``collate_label_lists`` with ``multi_hot`` for several
labels per image (imagefolder_lmdb.reader.targets, issue 52). Each is imported on first use, so
importing the package imports no torch: ``LMDBDataset`` does, as in the file itself. The reader's
other names still resolve here, with a DeprecationWarning, for one release: import them from
``imagefolder_lmdb.reader``.
"""

from __future__ import annotations

# First: a Ctrl-C while the command is still importing ends as one before any work does (run/early_interrupt.py).
from imagefolder_lmdb.run.early_interrupt import guard_the_start

guard_the_start()

import importlib  # noqa: E402
import warnings  # noqa: E402
from typing import TYPE_CHECKING, Any  # noqa: E402

# Bound after the import of its module, so ``imagefolder_lmdb.convert`` is the function (the module's
# other names: ``from imagefolder_lmdb.convert import ...``).
from imagefolder_lmdb.convert import SNAKEFILE as SNAKEFILE  # noqa: E402
from imagefolder_lmdb.convert import WORKFLOW as WORKFLOW  # noqa: E402
from imagefolder_lmdb.convert import ConvertError as ConvertError  # noqa: E402
from imagefolder_lmdb.convert import convert as convert  # noqa: E402

# The module's own paths stay reachable through the name that now is the function (a host's
# ``module ...: snakefile: imagefolder_lmdb.convert.SNAKEFILE`` keeps working).
convert.SNAKEFILE, convert.WORKFLOW = SNAKEFILE, WORKFLOW  # type: ignore[attr-defined]

if TYPE_CHECKING:
    from imagefolder_lmdb.reader import (
        DamagedRecordError,
        FileChangedError,
        FormatError,
        LMDBDataset,
        LMDBReader,
        LocationsWarning,
        ReadersFullError,
        TruncatedFileError,
    )
    from imagefolder_lmdb.reader.targets import collate_label_lists as collate_label_lists
    from imagefolder_lmdb.reader.targets import multi_hot as multi_hot
    from imagefolder_lmdb.run.outputs import SplitOutputs as SplitOutputs
    from imagefolder_lmdb.sampler import ElasticDistributedSampler as ElasticDistributedSampler
    from imagefolder_lmdb.sampler import sampler_state_from_loader as sampler_state_from_loader

#: The elastic sampler's names, from imagefolder_lmdb.sampler (which imports torch).
_SAMPLER_NAMES = ("ElasticDistributedSampler", "sampler_state_from_loader")
#: A batch of several labels per image (imagefolder_lmdb.reader.targets, which imports torch when called).
_TARGET_NAMES = ("collate_label_lists", "multi_hot")
#: The reader's names that are the package's API: the dataset and reader classes, and the errors and
#: warning the docs name (docs/training.md, docs/troubleshooting.md). The reader's other names resolve
#: here for one release, with a DeprecationWarning: their home is imagefolder_lmdb.reader (issue 42).
_READER_NAMES = (
    "LMDBDataset",
    "LMDBReader",
    "FormatError",
    "DamagedRecordError",
    "TruncatedFileError",
    "FileChangedError",
    "ReadersFullError",
    "LocationsWarning",
)

#: The user API: what a user imports from the package (issue 42). Nothing else is listed.
__all__ = [
    "SNAKEFILE",
    "WORKFLOW",
    "ConvertError",
    "DamagedRecordError",
    "ElasticDistributedSampler",
    "FileChangedError",
    "FormatError",
    "LMDBDataset",
    "LMDBReader",
    "LocationsWarning",
    "ReadersFullError",
    "SplitOutputs",
    "TruncatedFileError",
    "collate_label_lists",
    "convert",
    "multi_hot",
    "sampler_state_from_loader",
]


def __getattr__(name: str) -> Any:
    # PEP 562: the reader's names are looked up in imagefolder_lmdb.reader on first use, so that
    # importing the package imports neither numpy nor PIL: every Snakemake start loads the logger
    # plugin, which imports it, and most rule jobs need the reader's format only later.
    # LMDBDataset itself is built (importing torch) only when asked for, by the reader.
    if name == "SplitOutputs":  # with the work folder's files (work/files.py): on first use
        from imagefolder_lmdb.run.outputs import SplitOutputs

        return SplitOutputs
    if name in _SAMPLER_NAMES:
        from imagefolder_lmdb import sampler

        return getattr(sampler, name)
    if name in _TARGET_NAMES:
        targets = importlib.import_module("imagefolder_lmdb.reader.targets")
        return getattr(targets, name)
    if name == "__version__":  # looked up when asked for: a checkout on PYTHONPATH imports without an install
        from importlib import metadata

        return metadata.version("imagefolder-lmdb")
    if not name.startswith("__"):
        # not ``from imagefolder_lmdb import reader``: that asks this function for ``reader`` first
        reader = importlib.import_module("imagefolder_lmdb.reader")
        if name in _READER_NAMES:
            return getattr(reader, name)
        if name in reader.__all__:
            warnings.warn(
                f"imagefolder_lmdb.{name} is deprecated and will be removed: "
                f"import it from imagefolder_lmdb.reader (from imagefolder_lmdb.reader import {name})",
                DeprecationWarning,
                stacklevel=2,
            )
            return getattr(reader, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public API (what ``__all__`` names and ``__version__``), not the module's internals."""
    return sorted({*__all__, "__version__"})
