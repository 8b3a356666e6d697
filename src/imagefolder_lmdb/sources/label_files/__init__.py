"""Labels from a label file instead of folder names: the parsing, with no workflow in it.

- ``label_file.py``: one ``.csv``, ``.jsonl`` or ``.parquet`` for a split (``labels: PATH``);
- ``metadata.py``: Hugging Face's ``metadata.*`` files in a tree or a zip (``labels: metadata``), and
  where it differs from ``datasets`` on purpose;
- ``table.py``: what both give, ``LabelTable`` (targets, fields, classes, the files' digests);
- the steps between: ``reading.py`` (rows as written), ``settings.py`` (columns by role),
  ``matching.py`` (rows to images), ``labels.py``, ``value_types.py`` and ``fields.py`` (typed
  values), ``targets.py`` (labels to class indices), ``problems.py`` (one-line errors);
- ``rules.py``: the version of the rule labels are read by (``made_from`` records it), and whether an
  earlier rule read a file otherwise.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Each name is imported from its module on first use (PEP 562): a module that needs only the settings'
# words (settings.py) does not import every parser (the workflow's rule jobs import it at their start).
if TYPE_CHECKING:
    from imagefolder_lmdb.sources.label_files.label_file import read_label_file
    from imagefolder_lmdb.sources.label_files.metadata import read_metadata_tree
    from imagefolder_lmdb.sources.label_files.problems import LabelFileError
    from imagefolder_lmdb.sources.label_files.settings import LabelSettings
    from imagefolder_lmdb.sources.label_files.table import ImageLabels, LabelTable

__all__ = ["ImageLabels", "LabelFileError", "LabelSettings", "LabelTable", "read_label_file", "read_metadata_tree"]

#: The module under this package that defines each name.
_HOME_OF = {
    "read_label_file": "label_file",
    "read_metadata_tree": "metadata",
    "LabelFileError": "problems",
    "LabelSettings": "settings",
    "ImageLabels": "table",
    "LabelTable": "table",
}


def __getattr__(name: str) -> Any:
    home = _HOME_OF.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
