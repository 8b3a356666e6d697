"""What a sample's target is: ``target_type`` (torchvision's ``CelebA(target_type=...)`` idiom) over
the label and the fields a file stores, and, for several labels per image, the batch a model takes:
``multi_hot`` and ``collate_label_lists``. torch is imported only by those two, when called.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from imagefolder_lmdb.reader.format_targets import RESERVED_FIELD, SINGLE_LABEL, FieldColumn

if TYPE_CHECKING:
    import torch

#: What ``target_type`` takes: the label, a field's name, or a list of them.
TargetType = str | Sequence[str]


def target_names(target_type: TargetType, fields: dict[str, str], path: str) -> list[str]:
    """The names ``target_type`` asks for, in order; ValueError naming the file's fields for any other."""
    names = [target_type] if isinstance(target_type, str) else list(target_type)
    known = [RESERVED_FIELD, *fields]
    unknown = [name for name in names if name not in known]
    if unknown or not all(isinstance(name, str) for name in names):
        raise ValueError(
            f"target_type={target_type!r}: {path} has no target {unknown[0] if unknown else target_type!r}; "
            f"choose from {', '.join(map(repr, known))} (a name, or a list of them)"
        )
    return names


def target_column(names: list[str], labels: list[Any], fields: dict[str, FieldColumn]) -> list[Any]:
    """Each record's target for ``names``: as torchvision's CelebA makes it, a tuple of one value per
    name in that order, one name's value alone, and None for no name."""
    columns = [labels if name == RESERVED_FIELD else fields[name].values for name in names]
    if not columns:
        return [None] * len(labels)
    if len(columns) == 1:
        return columns[0]
    return list(zip(*columns, strict=True))


def carried_labels(targets: list[Any], label_kind: str) -> list[int]:
    """Every class index the images carry: one per image, or (multi-label) each of each image's list."""
    return targets if label_kind == SINGLE_LABEL else [label for labels in targets for label in labels]


def multi_hot(label_lists: Sequence[Sequence[int]], num_classes: int) -> torch.Tensor:
    """``float32[len(label_lists), num_classes]``: 1 at each listed class of each row, else 0 (the
    target of ``BCEWithLogitsLoss``); an empty list is a row of zeros.

    Raises:
        ValueError: a class index outside ``0..num_classes - 1``.
    """
    import torch

    rows = [index for index, labels in enumerate(label_lists) for _ in labels]
    columns = [label for labels in label_lists for label in labels]
    if columns and not 0 <= min(columns) <= max(columns) < num_classes:
        raise ValueError(f"a label outside 0..{num_classes - 1} (num_classes={num_classes}): {columns}")
    hot = torch.zeros(len(label_lists), num_classes, dtype=torch.float32)
    hot[torch.tensor(rows, dtype=torch.long), torch.tensor(columns, dtype=torch.long)] = 1.0
    return hot


def collate_label_lists(batch: Sequence[tuple[Any, Sequence[int]]], num_classes: int | None = None) -> tuple[Any, Any]:
    """DataLoader's ``collate_fn`` for samples ``(image, list of class indices)`` of a multi-label
    dataset: the images collated as torch's ``default_collate`` does, the label lists kept as a list
    of lists (they differ in length, which ``default_collate`` refuses), or, given ``num_classes``,
    :func:`multi_hot` of them. ``functools.partial(collate_label_lists, num_classes=n)`` pickles, so it
    works with worker processes."""
    from torch.utils.data import default_collate

    images = default_collate([image for image, _ in batch])
    label_lists = [list(labels) for _, labels in batch]
    return images, label_lists if num_classes is None else multi_hot(label_lists, num_classes)
