"""What changed in a label file since a dataset was made from it, in words: read against the
dataset's own image paths, the first image whose label differs, or why the file no longer fits them
(rows without images, images without rows). A change of labels replaces no dataset in silence."""

from __future__ import annotations

from collections.abc import Sequence

from imagefolder_lmdb.printable import printable
from imagefolder_lmdb.sources.label_files.label_file import read_label_file
from imagefolder_lmdb.sources.label_files.problems import LabelFileError
from imagefolder_lmdb.sources.label_files.settings import LabelSettings

#: An image's label(s) as class names: one, or a list.
NamedLabels = str | list[str]


def label_file_change(
    name: str, data: bytes, settings: LabelSettings, paths: Sequence[str], labels: Sequence[NamedLabels]
) -> str:
    """How label file ``name`` (now ``data``) differs from the ``labels`` of the dataset's images
    ``paths``, in words that follow "its label file ...": "changed: ..."."""
    try:
        table = read_label_file(name, data, paths, settings)
    except LabelFileError as exc:
        return f"{printable(name)} changed and no longer fits its {len(paths)} images: {exc}"
    for path, before in zip(paths, labels, strict=True):
        after = table.labels(path) if path in table.images else None
        now = sorted(str(label) for label in after) if isinstance(after, tuple) else after
        then = sorted(before) if isinstance(before, list) else before
        if now is None or str(now) != str(then):
            return (
                f"{printable(name)} changed: {printable(path)} was labelled {then!r}, now {now!r} "
                f"({len(table.images)} images labelled now, {len(paths)} in the dataset)"
            )
    return f"{printable(name)} changed ({len(table.images)} images labelled, the same labels; its fields may differ)"
