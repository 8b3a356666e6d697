"""The format's version-6 addition (docs/FORMAT.md, "Images without labels"): a split whose images have
no label (a competition's ``test/``), ``label_kind: "none"``, every entry of meta/labels -1, its
``classes`` the list the other splits number their labels by. reader/format.py reads and writes it
with the rest of the meta; the dataset's targets, ``info`` and ``verify`` ask here what it means.

Why a version of its own: a version-4 reader takes ``label_kind`` as "single" or "multi" and calls any
other value damage, and a version-1 to -3 reader would call -1 a label outside the classes (damage
too); refused by its version, the file is named as one of a newer release instead.
"""

from __future__ import annotations

import numpy as np

from imagefolder_lmdb.reader.format_targets import LABEL_KINDS, NO_SINGLE_LABEL, SINGLE_LABEL

#: meta/json ``label_kind`` of a split without labels.
UNLABELLED = "none"
#: The version that may say so; written only by a file without labels, so that every other file keeps
#: its version and bytes.
UNLABELLED_VERSION = 6
#: Each image's target in such a file, as meta/labels stores it: no class. An int, not None, so that
#: DataLoader's default_collate batches it (it batches no None) and ``targets`` stays a list of ints.
NO_LABEL = NO_SINGLE_LABEL


def label_kinds(version: int) -> tuple[str, ...]:
    """The ``label_kind`` values a file of ``version`` may hold."""
    return (*LABEL_KINDS, UNLABELLED) if version >= UNLABELLED_VERSION else LABEL_KINDS


def is_unlabelled(document: dict[str, object]) -> bool:
    """Whether a checked meta/json says its images have no label."""
    return document.get("label_kind") == UNLABELLED


def unlabelled_problems(labels: np.ndarray) -> list[str]:
    """What is wrong with an unlabelled file's meta/labels: any entry but -1 (one line, or none)."""
    named = np.flatnonzero(labels != NO_LABEL)
    if not len(named):
        return []
    return [
        f"meta/labels of a file without labels names a class for {len(named)} images, the first record "
        f"{int(named[0])} (it holds {NO_LABEL} for every image)"
    ]


def labels_problem(labels: np.ndarray, label_kind: str, classes: int) -> str | None:
    """What is wrong with meta/labels for a file of ``label_kind`` and ``classes`` classes: a
    multi-label or unlabelled file's names a class (each holds -1), a single-label file's a label
    outside the classes; None where nothing is."""
    if label_kind == UNLABELLED:
        return next(iter(unlabelled_problems(labels)), None)
    if label_kind != SINGLE_LABEL:
        if (labels != NO_SINGLE_LABEL).any():
            return f"a multi-label file's meta/labels names a class (it holds {NO_SINGLE_LABEL} for every image)"
        return None
    if len(labels) and not 0 <= int(labels.min()) <= int(labels.max()) < classes:
        return f"meta/labels holds labels outside 0..{classes - 1} (its {classes} classes)"
    return None
