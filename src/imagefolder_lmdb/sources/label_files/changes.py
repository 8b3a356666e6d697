"""What changed in a label file since a dataset was made from it, in words: read against the
source's files as they are now (where the source is a folder; else the dataset's own image paths),
the first image whose label differs, or why the file no longer fits them (which rows lack images,
which images lack rows), as the run will say it. A change of labels replaces no dataset in silence."""

from __future__ import annotations

from collections.abc import Sequence

from imagefolder_lmdb.printable import printable
from imagefolder_lmdb.sources.label_files.label_file import read_label_file
from imagefolder_lmdb.sources.label_files.problems import LabelFileError
from imagefolder_lmdb.sources.label_files.settings import LabelSettings
from imagefolder_lmdb.sources.listing_options import is_image

#: An image's label(s) as class names: one, or a list.
NamedLabels = str | list[str]


def label_file_change(
    name: str,
    data: bytes,
    settings: LabelSettings,
    paths: Sequence[str],
    labels: Sequence[NamedLabels],
    current: Sequence[str] | None = None,
) -> str:
    """How label file ``name`` (now ``data``) differs from the ``labels`` of the dataset's images
    ``paths``, in words that follow "its label file ...": "changed: ...". ``current``: the source's
    files now (relative to the split's root), which the file is held against, as the run will hold
    it (None: an archive's, not listed here; the dataset's images stand for them)."""
    against = paths if current is None else current
    what = f"its {len(paths)} images" if current is None else f"the {sum(map(is_image, current))} images of the source"
    try:
        table = read_label_file(name, data, against, settings)
    except LabelFileError as exc:
        return f"{printable(name)} changed and no longer fits {what}: {str(exc).rstrip('.')}"
    for path, before in zip(paths, labels, strict=True):
        if path not in table.images and current is not None:
            continue  # an image gone from the source: the source's change, said with it
        after = table.labels(path) if path in table.images else None
        now = sorted(str(label) for label in after) if isinstance(after, tuple) else after
        then = sorted(before) if isinstance(before, list) else before
        if now is None or str(now) != str(then):
            return (
                f"{printable(name)} changed: {printable(path)} was labelled {then!r}, now {now!r} "
                f"({len(table.images)} images labelled now, {len(paths)} in the dataset)"
            )
    return f"{printable(name)} changed ({len(table.images)} images labelled, the same labels; its fields may differ)"
