# SPDX-License-Identifier: MIT
"""``imagefolder-lmdb info A.lmdb B.lmdb --union [--classes LIST]`` (or ``info A.lmdb --classes
LIST``): the counts per class a view would give (docs/training.md, "Views"), read as
``LMDBDataset([A, B], classes=LIST)`` reads them, so what it refuses is refused here in the same
words. ``--classes`` takes what ``convert --classes`` takes: ``a,b,c``, a file of names, ``imagenet1k``
or ``FILE.lmdb``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from imagefolder_lmdb.verify.datasets import InfoError


def classes_value(text: str | None) -> str | list[str] | None:
    """``--classes`` as ``classes=`` takes it: a comma makes a list (as ``convert --classes``); else a
    file, ``imagenet1k`` or ``FILE.lmdb``."""
    if text is None or "," not in text:
        return text
    return [name.strip() for name in text.split(",") if name.strip()]


def view_infos(files: list[str], union: bool, classes: str | None, allow_mixed: bool) -> list[dict[str, Any]]:
    """The view of ``files`` (one union, or each file's class subset) as info shows it."""
    from imagefolder_lmdb.reader import FormatError, LMDBReader

    wanted = classes_value(classes)
    try:
        if union:
            return [view_info(LMDBReader(files, decode="bytes", classes=wanted, allow_mixed=allow_mixed), wanted)]
        return [view_info(LMDBReader(file, decode="bytes", classes=wanted), wanted) for file in files]
    except (FormatError, ValueError, OSError) as exc:
        raise InfoError(str(exc)) from None


def view_info(ds: Any, classes: str | list[str] | None) -> dict[str, Any]:
    """What a view gives: its files and the images each gives, its classes and the images of each."""
    records = ds._records
    files = ds.files
    per_file = (
        [len(ds)] if getattr(records, "files", None) is None else np.bincount(records.files, minlength=len(files))
    )
    counts = ds.class_counts().tolist()
    return {
        "view": {"files": files, "union": len(files) > 1 or ds.path != files[0], "classes": classes},
        "length": len(ds),
        "classes": ds.classes,
        "label_kind": ds.label_kind,
        "fields": [{"name": name, "type": kind} for name, kind in ds.field_types.items()],
        "images_per_file": {file: int(n) for file, n in zip(files, per_file, strict=True)},
        "images_per_class": dict(zip(ds.classes, counts, strict=True)),
    }
