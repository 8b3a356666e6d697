"""One label file for a split (``labels: PATH``): a ``.csv``, ``.jsonl`` or ``.parquet`` whose
file column names each image relative to the split's root (an id without extension names the one
image of that stem), whose label column gives its label(s), and whose other columns are fields."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from imagefolder_lmdb.sources.label_files.reading import read_table
from imagefolder_lmdb.sources.label_files.settings import DEFAULT_SETTINGS, LabelSettings, resolve_columns
from imagefolder_lmdb.sources.label_files.table import LabelTable, build_table
from imagefolder_lmdb.sources.listing_options import is_image as imagefolder_image


def read_label_file(
    name: str,
    data: bytes,
    paths: Sequence[str],
    settings: LabelSettings = DEFAULT_SETTINGS,
    classes: Sequence[str] | None = None,
    is_image: Callable[[str], bool] = imagefolder_image,
) -> LabelTable:
    """The table that label file ``name`` (its bytes: ``data``) makes of the images among ``paths``,
    the split's files relative to its root (the others are named where a row names one);
    ``classes``: a class list to keep to (None: the labels' own)."""
    table = read_table(name, data)
    columns = resolve_columns(table, settings)
    images = [path for path in paths if is_image(path)]
    others = [path for path in paths if not is_image(path)] if len(images) < len(paths) else []
    return build_table([table], [""], columns, images, settings, classes, is_image, others)
