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
    images: Sequence[str],
    settings: LabelSettings = DEFAULT_SETTINGS,
    classes: Sequence[str] | None = None,
    is_image: Callable[[str], bool] = imagefolder_image,
) -> LabelTable:
    """The table that label file ``name`` (its bytes: ``data``) makes of ``images``, the split's image
    paths relative to its root; ``classes``: a class list to keep to (None: the labels' own)."""
    table = read_table(name, data)
    columns = resolve_columns(table, settings)
    return build_table([table], [""], columns, images, settings, classes, is_image)
