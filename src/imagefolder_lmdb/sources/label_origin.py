"""Where a dataset's labels came from, in words (issue 59), as its labelling recorded them in the
dataset's ``made_from`` recipe (``Labelling.recipe``): the label file and its columns, Hugging Face's
metadata files, or the ILSVRC devkit and val CSV. board/label_origin.py shows them for ``info`` and
the end-of-run summary. A label file that no longer lies at its recorded path with that content
(moved, copied elsewhere, edited) is shown at that path, marked "as converted": what the dataset was
made from, not what is there now.
"""

from __future__ import annotations

import os
from typing import Any

from imagefolder_lmdb.sources.label_files.settings import FILE_COLUMNS, METADATA_FILE_COLUMN
from imagefolder_lmdb.sources.label_keys import PARAM_ORDER
from imagefolder_lmdb.sources.source_record import file_digest

#: The recorded path of a file that is not there now with the content it had.
AS_CONVERTED = "as converted"


def origin_words(labels: dict[str, Any], recipe: dict[str, Any], document: dict[str, Any]) -> list[str]:
    """``  labels from: ...`` lines of a recipe's ``labels`` (each key's ``[path, digest]``)."""
    if "metadata" in labels:  # Labelling.recipe of a label-file split that reads them
        columns = columns_words(recipe, document, None, METADATA_FILE_COLUMN)
        return [f"  labels from: Hugging Face's metadata files in the source (columns: {columns})"]
    lines = []
    if recorded(labels.get("labels")):
        path, digest = labels["labels"][:2]
        here = holds(path, digest)
        where = path if here else f"{path} ({AS_CONVERTED})"
        lines.append(f"  labels from: {where} (columns: {columns_words(recipe, document, path if here else None)})")
    for key in PARAM_ORDER:  # the devkit, then the val CSV
        if recorded(labels.get(key)):
            path, digest = labels[key][:2]
            lines.append(f"  labels from: {key} {path}" + ("" if holds(path, digest) else f" ({AS_CONVERTED})"))
    return lines


def recorded(entry: Any) -> bool:
    """Whether a recipe's entry is a label file's ``[path, digest]``."""
    return isinstance(entry, list) and len(entry) >= 2 and all(isinstance(part, str) for part in entry[:2])


def holds(path: str, digest: str) -> bool:
    """Whether ``path`` is a file of content ``digest`` (the recipe's digest of a label file)."""
    try:
        return os.path.isfile(path) and file_digest(path) == digest
    except OSError:
        return False


def columns_words(
    recipe: dict[str, Any], document: dict[str, Any], label_file: str | None, file_default: str | None = None
) -> str:
    """The label file's columns by role: the file column (``file_default``, else the default's choice
    read from ``label_file`` where it is there as converted), the label column, the fields (meta/json's)."""
    settings = recipe.get("label_columns")
    settings = settings if isinstance(settings, dict) else {}
    file_column = settings.get("file_column") or file_default or default_file_column(label_file)
    words = f"file {file_column}, label {settings.get('label_column') or 'label'}"
    if settings.get("label_separator"):
        words += f" cut at {settings['label_separator']!r}"
    fields = [entry.get("name") for entry in document.get("fields", []) if isinstance(entry, dict)]
    return words + (f", fields {', '.join(map(str, fields))}" if fields else "")


def default_file_column(label_file: str | None) -> str:
    """The file column a label file without ``file_column`` was read by: the first of FILE_COLUMNS it
    has (read from the file where it is there as converted), else the rule in words."""
    from imagefolder_lmdb.sources.label_files.problems import LabelFileError
    from imagefolder_lmdb.sources.label_files.reading import read_table

    rule = " or ".join(FILE_COLUMNS) + " (the first the file has)"
    if label_file is None:
        return rule
    try:
        with open(label_file, "rb") as stream:
            columns = read_table(label_file, stream.read()).columns
    except (OSError, LabelFileError):
        return rule
    return next((name for name in FILE_COLUMNS if name in columns), rule)
