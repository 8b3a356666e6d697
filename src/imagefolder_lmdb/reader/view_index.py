"""The index of a view (reader/views.py), as numpy arrays: which file and record each of its samples
is (``files``, ``records``), its classes and each sample's label(s) in their numbering. Nothing here
opens a file: each file comes as a ``Part``, what its dataset already holds.

- A class subset keeps, in the file's order, the records of the classes named, renumbered by the
  sorted names (ImageFolder over a tree of those class folders); a multi-label file keeps every
  record, its lists restricted to those classes (possibly empty), as a conversion with that class
  list keeps them.
- A union takes the sorted union of the class lists and ImageFolder's order over the union of the
  trees: for files of class folders, class by class, each class's images in ``sorted(os.walk)``
  order whichever file holds them; for files of a label file, every image by its path; for other
  sources (shards, Parquet, ILSVRC val), the files one after another.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from imagefolder_lmdb.reader.format_targets import MULTI_LABEL, LabelLists

#: How a file's records are ordered, from the layout it was converted with (meta/json made_from):
#: class folders (class, then walk order), a label file's images (by path), or neither.
FOLDERS, PATHS, RECORDS = "folders", "paths", "records"
_ORDER_OF_LAYOUT = {"imagefolder": FOLDERS, "ilsvrc-train": FOLDERS, "label-file": PATHS}


@dataclass
class Part:
    """One file of a view, as its dataset holds it."""

    path: str
    classes: list[str]
    names: Sequence[str]  # each record's relative path
    labels: np.ndarray  # each record's class index (multi-label: -1 each)
    label_lists: LabelLists | None  # multi-label: each record's class indices


@dataclass
class ViewIndex:
    """Sample ``i`` of the view is record ``records[i]`` of file ``files[i]`` (``files`` None: one file)."""

    classes: list[str]
    files: np.ndarray | None
    records: np.ndarray
    labels: np.ndarray  # each sample's class index in ``classes`` (multi-label: -1 each)
    label_lists: LabelLists | None  # multi-label: each sample's class indices in ``classes``

    def positions(self, lengths: list[int]) -> np.ndarray:
        """Each sample's position among the files' records put end to end (files of ``lengths`` records)."""
        if self.files is None:
            return self.records
        starts = np.concatenate([[0], np.cumsum(lengths[:-1], dtype=np.int64)])
        return starts[self.files] + self.records

    def gather(self, per_part: list[np.ndarray]) -> np.ndarray:
        """A per-record array of each file, taken for the view's samples in its order."""
        if self.files is None:
            return per_part[0][self.records]
        return np.concatenate(per_part)[self.positions([len(array) for array in per_part])]


def order_of(document: dict[str, Any], labels: np.ndarray, multi: bool) -> str:
    """How a file's records are ordered: by its layout; a file that predates recording it, by its labels."""
    made_from = document.get("made_from")
    recipe = made_from.get("recipe") if isinstance(made_from, dict) else None
    layout = recipe.get("layout") if isinstance(recipe, dict) else None
    if isinstance(layout, str):
        order = _ORDER_OF_LAYOUT.get(layout, RECORDS)
        return RECORDS if order == FOLDERS and multi else order
    return FOLDERS if not multi and bool((np.diff(labels) >= 0).all()) else RECORDS


def class_map(classes: list[str], index: dict[str, int]) -> np.ndarray:
    """Each of a file's class indices in the view's numbering; -1 for a class the view leaves out."""
    return np.array([index.get(name, -1) for name in classes] or [-1], dtype=np.int64)


def restricted_lists(lists: LabelLists, remap: np.ndarray) -> LabelLists:
    """Each record's class indices renumbered by ``remap``, those it maps to -1 left out (in order)."""
    values = remap[lists.values.astype(np.int64)] if len(lists.values) else np.zeros(0, np.int64)
    keep = values >= 0
    kept_before = np.concatenate([[0], np.cumsum(keep)])
    return LabelLists(kept_before[lists.offsets.astype(np.int64)], values[keep])


def taken_lists(parts: list[LabelLists], files: np.ndarray | None, records: np.ndarray) -> LabelLists:
    """The lists of the view's samples, in its order, from each file's (restricted) lists."""
    bases = np.cumsum([0] + [len(part.values) for part in parts])
    offsets = np.concatenate([part.offsets.astype(np.int64) for part in parts])
    starts_of = np.cumsum([0] + [len(part.offsets) for part in parts])
    at = records + (0 if files is None else starts_of[files])
    base = 0 if files is None else bases[files]
    starts, ends = offsets[at] + base, offsets[at + 1] + base
    lengths = ends - starts
    out = np.zeros(len(records) + 1, dtype=np.int64)
    np.cumsum(lengths, out=out[1:])
    values = np.concatenate([part.values for part in parts]) if parts else np.zeros(0, np.int64)
    picks = np.repeat(starts - out[:-1], lengths) + np.arange(int(out[-1]))
    return LabelLists(out, values[picks].astype(np.int64))


def lists_of(part: Part) -> LabelLists:
    """A file's lists: its own, or (a single-label file in a multi-label view) one class each."""
    if part.label_lists is not None:
        return part.label_lists
    return LabelLists(np.arange(len(part.labels) + 1, dtype=np.int64), part.labels.astype(np.int64))


def kept_records(part: Part, remap: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The records a view keeps of a file, in its order, and their labels in the view's numbering:
    single-label, those of the view's classes; multi-label, every record (-1 each)."""
    if part.label_lists is not None:
        return np.arange(len(part.names), dtype=np.int64), np.full(len(part.names), -1, dtype=np.int64)
    labels = remap[part.labels.astype(np.int64)] if len(part.labels) else np.zeros(0, np.int64)
    kept = np.flatnonzero(labels >= 0)
    return kept, labels[kept]


def build_index(parts: list[Part], classes: list[str], multi: bool, order: str) -> ViewIndex:
    """The view of ``parts`` with the classes ``classes`` (sorted), multi-label or not, in ``order``."""
    index = {name: number for number, name in enumerate(classes)}
    remaps = [class_map(part.classes, index) for part in parts]
    kept = [kept_records(part, remap) for part, remap in zip(parts, remaps, strict=True)]
    lists = (
        [restricted_lists(lists_of(part), remap) for part, remap in zip(parts, remaps, strict=True)] if multi else []
    )
    if len(parts) == 1:
        records, labels = kept[0]
        taken = taken_lists(lists, None, records) if multi else None
        return ViewIndex(classes, None, records, labels if not multi else np.full(len(records), -1), taken)
    files = np.concatenate([np.full(len(records), number, dtype=np.int32) for number, (records, _) in enumerate(kept)])
    records = np.concatenate([records for records, _ in kept])
    labels = np.concatenate([labels for _, labels in kept])

    def name_of(position: int) -> str:
        return parts[files.item(position)].names[records.item(position)]

    positions = union_order(order, labels, files, name_of, [part.path for part in parts])
    files, records, labels = files[positions], records[positions], labels[positions]
    taken = taken_lists(lists, files, records) if multi else None
    return ViewIndex(classes, files, records, np.full(len(records), -1) if multi else labels, taken)


def union_order(
    order: str, labels: np.ndarray, files: np.ndarray, name_of: Callable[[int], str], paths: list[str]
) -> np.ndarray:
    """The positions of the files' kept records (put end to end) in the union's order; SameSampleError
    where two files hold a sample at one path."""
    if order == FOLDERS:
        return folders_order(labels, files, name_of, paths)
    names = [name_of(position) for position in range(len(files))]
    by_name = sorted(range(len(names)), key=names.__getitem__)  # each file's run already sorted: a merge
    refuse_repeats([names[p] for p in by_name], by_name, files, paths)
    return np.array(by_name, dtype=np.int64) if order == PATHS else np.arange(len(names), dtype=np.int64)


def folders_order(labels: np.ndarray, files: np.ndarray, name_of: Callable[[int], str], paths: list[str]) -> np.ndarray:
    """ImageFolder's order over the union of class-folder trees: class by class; within a class held by
    one file, that file's order (already ``sorted(os.walk)``'s); within one held by several, their
    images merged in that order (only those are sorted here)."""
    held = np.zeros((int(labels.max(initial=-1)) + 1, len(paths)), dtype=bool)
    held[labels, files] = True
    shared = np.flatnonzero(held.sum(axis=1) > 1)
    secondary = np.arange(len(labels), dtype=np.int64)
    in_shared = np.flatnonzero(np.isin(labels, shared)).tolist()
    if in_shared:
        names = {position: name_of(position) for position in in_shared}
        keys = sorted(in_shared, key=lambda p: (labels.item(p), *walk_order(names[p])))
        refuse_repeats([f"{labels.item(p)}/{names[p]}" for p in keys], keys, files, paths, names)
        secondary[np.array(keys, dtype=np.int64)] = np.arange(len(keys), dtype=np.int64)
    return np.lexsort((secondary, labels))


def walk_order(path: str) -> tuple[str, str]:
    """Sort key of ``sorted(os.walk(...))`` then ``sorted(files)``: the folder, then the name (as the
    converter orders a class's images: sources/tree.py)."""
    folder, _, name = path.rpartition("/")
    return folder, name


class SameSampleError(ValueError):
    """Two files of a union hold a sample at the same path: no one tree holds both."""


def refuse_repeats(
    keys: list[str], positions: list[int], files: np.ndarray, paths: list[str], names: dict[int, str] | None = None
) -> None:
    """SameSampleError naming both files where two neighbours of the sorted ``keys`` are equal."""
    repeated = next((i for i in range(1, len(keys)) if keys[i] == keys[i - 1]), None)
    if repeated is None:
        return
    first, second = positions[repeated - 1], positions[repeated]
    name = keys[repeated] if names is None else names[second]
    a, b = paths[int(files[first])], paths[int(files[second])]
    where = f"{a} and {b} both hold" if a != b else f"{a}, listed twice, holds"
    raise SameSampleError(
        f"{where} {name!r}: one tree cannot hold two images at one path, so their union is no ImageFolder. "
        "Read them as separate datasets (torch.utils.data.ConcatDataset), or convert one again from a "
        "tree whose paths differ (another folder inside its class folders)."
    )


def label_kind(multi: bool) -> str | None:
    """meta/json's ``label_kind`` of a view: ``multi``, or None (absent: one class each)."""
    return MULTI_LABEL if multi else None
