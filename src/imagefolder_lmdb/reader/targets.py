"""What a sample's target is: ``target_type`` (torchvision's ``CelebA(target_type=...)`` idiom) over
the label and the fields a file stores (``LabelsAndFields``, the dataset's part that knows them),
and, for several labels per image, the batch a model takes: ``multi_hot`` and
``collate_label_lists``. torch is imported only by those two, when called.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from imagefolder_lmdb.reader.format_targets import MULTI_LABEL, RESERVED_FIELD, SINGLE_LABEL, FieldColumn, LabelLists
from imagefolder_lmdb.reader.format_unlabelled import NO_LABEL, UNLABELLED
from imagefolder_lmdb.reader.records import Opened

if TYPE_CHECKING:
    import torch

#: What ``target_type`` takes: the label, a field's name, or a list of them.
TargetType = str | Sequence[str]


def check_target_options(target_type: TargetType, target_transform: Any) -> None:
    """Refuse a ``target_transform`` with no target to take, as torchvision's CelebA does."""
    if not isinstance(target_type, str) and not list(target_type) and target_transform is not None:
        raise ValueError("target_transform is given but target_type is empty: there is no target to transform")


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


class LabelsAndFields:
    """A dataset's labels and fields (mixed into the dataset classes): ``targets``, ``samples``'
    second items, ``label_kind``, ``field_types``, ``fields(i)``, ``class_counts()``, and the target
    each sample gives for ``target_type``."""

    path: str
    target_type: TargetType
    classes: list[str]

    def _check_index(self, index: Any) -> int:  # the dataset's
        raise NotImplementedError

    def _set_targets(self, opened: Opened) -> None:
        meta = opened.meta
        # the label(s) of each image whatever target_type says: a class index, or a list of them
        self.targets: list[Any] = opened.targets
        # the labels as the meta holds them, and the names: what a view of the file selects from (reader/views.py)
        self._index_arrays: tuple[np.ndarray, LabelLists | None, list[str]] | None = (
            None if meta is None else (meta.labels, meta.label_lists, opened.names)
        )
        # "single", "multi", or "none" (version 6: no image has a label, each target NO_LABEL, -1)
        self.label_kind: str = SINGLE_LABEL if meta is None else meta.label_kind
        self._fields: dict[str, FieldColumn] = {} if meta is None or meta.fields is None else meta.fields
        self.field_types: dict[str, str] = {name: column.type for name, column in self._fields.items()}
        names = target_names(self.target_type, self.field_types, self.path)
        if meta is None and names != [RESERVED_FIELD]:
            raise ValueError(f"target_type={self.target_type!r}: {self.path} is a legacy file; its target is its label")
        self._sample_targets = target_column(names, self.targets, self._fields)  # what ds[i] gives

    def fields(self, index: int) -> dict[str, Any]:
        """Image ``index``'s fields, ``{name: value}`` in the order ``field_types`` lists them, from the
        meta, without reading or decoding the image; ``{}`` for a file without fields."""
        index = self._check_index(index)
        return {name: column.values[index] for name, column in self._fields.items()}

    def class_counts(self) -> np.ndarray:
        """Images per class, ``int64[len(classes)]`` indexed like ``classes`` (zeros included),
        from ``targets``: e.g. ``1 / counts[targets]`` as WeightedRandomSampler weights. Multi-label:
        the images that carry each class."""
        labels = carried_labels(self.targets, self.label_kind)
        return np.bincount(np.asarray(labels, dtype=np.int64), minlength=len(self.classes))

    def target_lines(self) -> list[str]:
        """``repr``'s lines of the labels, fields and target type, where not the defaults."""
        lines = []
        if self.label_kind == MULTI_LABEL:
            lines.append(f"    Labels: {self.label_kind} (a list of class indices per image)")
        if self.label_kind == UNLABELLED:
            lines.append(f"    Labels: {self.label_kind} (no image has a label: each target is {NO_LABEL})")
        if self.field_types:
            lines.append("    Fields: " + ", ".join(f"{name} ({kind})" for name, kind in self.field_types.items()))
        if self.target_type != RESERVED_FIELD:  # as CelebA's repr names it
            lines.append(f"    Target type: {self.target_type}")
        return lines


def carried_labels(targets: list[Any], label_kind: str) -> list[int]:
    """Every class index the images carry: one per image, (multi-label) each of each image's list, or
    none (a split without labels, whose targets are all -1)."""
    if label_kind == UNLABELLED:
        return []
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


def collate_label_lists(batch: Sequence[tuple[Any, Any]], num_classes: int | None = None) -> tuple[Any, Any]:
    """DataLoader's ``collate_fn`` for samples ``(image, list of class indices)`` of a multi-label
    dataset: the images collated as torch's ``default_collate`` does, the label lists kept as a list
    of lists (they differ in length, which ``default_collate`` refuses), or, given ``num_classes``,
    :func:`multi_hot` of them. ``functools.partial(collate_label_lists, num_classes=n)`` pickles, so it
    works with worker processes.

    A tuple target (``target_type=["label", "score", ...]``, the label first) gives a tuple of as
    many parts: the label lists as above, each numeric field a tensor ``[batch]`` (as
    ``default_collate`` makes it), any other field (text, lists) a list of the batch's values.

    Raises:
        TypeError: a target (or a tuple target's first part) that is not a list of class indices.
    """
    from torch.utils.data import default_collate

    images = default_collate([image for image, _ in batch])
    targets = [target for _, target in batch]
    if targets and is_tuple_target(targets[0]):
        label_part, *field_parts = zip(*targets, strict=True)
        labels = collated_labels(label_part, num_classes, "the first part of a tuple target")
        return images, (labels, *(collated_field(values) for values in field_parts))
    return images, collated_labels(targets, num_classes, "a target")


def is_tuple_target(target: Any) -> bool:
    """A target of several parts (``target_type`` naming several), not a tuple of class indices."""
    return isinstance(target, tuple) and not all(is_int(part) for part in target)


def collated_labels(label_lists: Sequence[Any], num_classes: int | None, what: str) -> Any:
    """A batch's label lists as a list of lists, or their :func:`multi_hot` given ``num_classes``;
    TypeError naming the first value that is not a list (of class indices, for ``multi_hot``)."""
    wrong = next((labels for labels in label_lists if not is_label_list(labels, num_classes is not None)), None)
    if wrong is not None:
        raise TypeError(
            f"collate_label_lists: {what} is {wrong!r}, not a list of class indices: it batches a multi-label "
            'dataset\'s targets, the label first in target_type (e.g. ["label", "score"])'
        )
    lists = [list(labels) for labels in label_lists]
    return lists if num_classes is None else multi_hot(lists, num_classes)


def is_label_list(labels: Any, indices: bool) -> bool:
    """Whether ``labels`` is a list (not text), of ints where ``indices`` (what multi_hot takes)."""
    if not isinstance(labels, Sequence) or isinstance(labels, str | bytes):
        return False
    return not indices or all(is_int(label) for label in labels)


def is_int(value: Any) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def collated_field(values: Sequence[Any]) -> Any:
    """One field of a batch: a tensor ``[batch]`` where every value is a number (``default_collate``'s
    dtype: int64, float64), else the values as a list (text, lists of differing lengths)."""
    if all(isinstance(value, int | float) and not isinstance(value, bool) for value in values):
        from torch.utils.data import default_collate

        return default_collate(list(values))
    return list(values)
