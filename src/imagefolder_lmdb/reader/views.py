"""Views: a dataset made of converted files without writing anything (docs/training.md, "Views").

- ``LMDBDataset(path, classes=[...])``: a class subset, equal to ImageFolder over a tree holding only
  those class folders (classes renumbered from 0 in sorted order). ``classes`` takes what the
  converter's ``--classes`` takes: a list of names, a text file of them (one per line, ``#``
  comments), ``imagenet1k`` (the shipped list), or ``FILE.lmdb`` (that dataset's class list).
- ``LMDBDataset([path_a, path_b, ...])``: a union, equal to ImageFolder over the union of the trees
  the files were converted from (reader/view_index.py gives the order); ``classes=`` applies to it.

Each file is opened as a dataset of its own (checked, reopened after a fork or a replacement, read
by offset or by ranged requests as ever); the view holds numpy arrays mapping its indices to theirs
(reader/view_records.py), so ``ds[i]`` costs one array lookup more than the file's own.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import operator
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from imagefolder_lmdb.reader.class_names import ClassListError, class_names, is_dataset
from imagefolder_lmdb.reader.format import FormatError, Meta
from imagefolder_lmdb.reader.format_targets import MULTI_LABEL, FieldColumn
from imagefolder_lmdb.reader.format_unlabelled import UNLABELLED
from imagefolder_lmdb.reader.records import Opened
from imagefolder_lmdb.reader.view_index import PATHS, RECORDS, Part, ViewIndex, build_index, order_of
from imagefolder_lmdb.reader.view_records import ViewRecords

#: A dataset of one file, reader/dataset.LMDBReader (which imports this module, so it is not named here).
LMDBReader = Any

#: What ``classes=`` takes: names, or a text file, ``imagenet1k`` or ``FILE.lmdb`` naming them.
ClassNames = str | os.PathLike[str] | Sequence[str]
#: What a dataset's path may be: one file (or URL), or a list of them (a union).
DatasetPaths = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]


@dataclass(frozen=True)
class ViewRequest:
    """The files and classes a view was asked for, before anything is opened."""

    paths: list[str]
    classes: ClassNames | None
    allow_mixed: bool
    union: bool

    @property
    def path(self) -> str:
        """``ds.path`` of the view: its file, or for a union the files joined by `` + ``."""
        return " + ".join(self.paths)


def view_request(path: DatasetPaths, classes: ClassNames | None, allow_mixed: bool) -> ViewRequest | str:
    """The view that ``LMDBDataset``'s arguments ask for; the path itself where they ask for none."""
    if isinstance(path, str | os.PathLike):
        if classes is None:
            if allow_mixed:
                raise ValueError("allow_mixed=True applies to a union: pass a list of files")
            return os.fspath(path)
        return ViewRequest([os.fspath(path)], classes, allow_mixed, union=False)
    paths = [os.fspath(one) for one in path]
    if not paths:
        raise ValueError("an empty list of files: a union needs at least one")
    return ViewRequest(paths, classes, allow_mixed, union=True)


def open_view(
    ds: LMDBReader,
    request: ViewRequest,
    open_part: Callable[..., LMDBReader],
    max_in_flight: int,
    cache_dir: str | os.PathLike[str] | None,
    cache_bytes: int,
    revision: int | None = None,
) -> None:
    """Open each file of ``request`` as a dataset of its own (``open_part``: LMDBReader, with ``ds``'s
    settings; ``revision``: of a subset's split of revisions), and make ``ds`` the view of them."""
    if revision is not None and request.union:
        raise ValueError(f"revision={revision} reads one split: open a union of the revisions' files instead")
    options = {
        "lock": ds.lock,
        "max_readers": ds.max_readers,
        "allow_pickle": ds.allow_pickle,
        "crc_check": ds.crc_check,
    }
    remote = {"max_in_flight": max_in_flight, "cache_dir": cache_dir, "cache_bytes": cache_bytes}
    parts = [open_part(path, decode="bytes", revision=revision, **options, **remote) for path in request.paths]
    for part in parts:
        if part.is_legacy:
            raise FormatError(f"{part.path} is a legacy folder2lmdb file: a view reads imagefolder-lmdb files only")
        if part.label_kind == UNLABELLED:  # no label to select by class or to number in a union (issue 59)
            raise ValueError(f"{part.path} is a split without labels (each target -1): a view selects labelled images")
    where = " + ".join(part.path for part in parts)
    multi, order = check_mixing(parts, request.allow_mixed)
    wanted = request.classes
    if isinstance(wanted, str | os.PathLike) and is_dataset(os.fspath(wanted)):  # opened as a dataset: it may be
        wanted = open_part(os.fspath(wanted), decode="bytes", **options, **remote).classes  # open here already
    classes = view_classes(parts, wanted, where)
    data = [part_data(part) for part in parts]
    index = build_index(data, classes, multi, order)
    ds.path = where
    ds._set_index(view_opened(parts, index, request, multi))
    ds._identity = None  # each file's dataset checks its own file before each read (ViewRecords)


def part_data(part: LMDBReader) -> Part:
    """What the index of a view needs of one file's dataset."""
    assert part._index_arrays is not None  # no legacy file: refused above
    labels, lists, names = part._index_arrays
    return Part(part.path, part.classes, names, labels, lists)


def view_classes(parts: Sequence[LMDBReader], wanted: ClassNames | None, where: str) -> list[str]:
    """The view's classes: the files' classes together, sorted, or those ``classes=`` names among them."""
    known = sorted(set().union(*(part.classes for part in parts)))
    if wanted is None:
        return known
    names = class_names(wanted if isinstance(wanted, str | list) else _listed(wanted), "classes=")
    have = set(known)
    missing = [name for name in names if name not in have]
    if missing:
        shown = "; ".join(f"{name!r} (closest: {_closest(name, known)})" for name in missing[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        raise ClassListError(
            f"classes= names {len(missing)} class(es) that {where} does not have: {shown}{more}. "
            f"Correct the list (ds.classes of the file lists its {len(known):,} classes)."
        )
    return names


def _listed(wanted: os.PathLike[str] | Sequence[str]) -> str | list[str]:
    return os.fspath(wanted) if isinstance(wanted, os.PathLike) else [str(name) for name in wanted]


def _closest(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    return ", ".join(map(repr, close)) if close else "none alike"


def check_mixing(parts: Sequence[LMDBReader], allow_mixed: bool) -> tuple[bool, str]:
    """Whether the view is multi-label, and its order; ValueError naming what the files disagree on
    (label kind, sizes, fields, how their records are ordered) unless ``allow_mixed``."""
    if len(parts) == 1:  # a subset: nothing to mix, no order to choose (its file's order is kept)
        return parts[0].label_kind == MULTI_LABEL, RECORDS
    orders = [order_of(part.meta_document, part._index_arrays[0], part.label_kind == MULTI_LABEL) for part in parts]
    facts = {
        "labels": [f"{part.label_kind}-label" for part in parts],
        "sizes": [f"shorter side {part.short_side}, longer side {part.max_side}" for part in parts],
        "fields": [json.dumps(part.field_types) for part in parts],
        "order": orders,
    }
    for what, values in facts.items():
        differ = next((i for i, value in enumerate(values) if value != values[0]), None)
        if differ is not None and not allow_mixed:
            raise ValueError(
                f"{parts[0].path} and {parts[differ].path} differ in {what} ({values[0]}; {values[differ]}): "
                f"{MIXING[what]} Pass allow_mixed=True (info: --allow-mixed) to read them as one anyway "
                '(docs/training.md, "Views").'
            )
    multi = any(part.label_kind == MULTI_LABEL for part in parts)
    return multi, orders[0] if len(set(orders)) == 1 else RECORDS


#: Why each difference stops a union, and what allow_mixed=True does with it.
MIXING = {
    "labels": "one class per image and lists of classes make no one target (allowed: every target a list).",
    "sizes": "their images were shrunk differently at conversion (allowed: read as stored; short_side None).",
    "fields": "their images carry other fields (allowed: only the fields all have, of one type).",
    "order": "they come from sources ordered differently, a tree and a label file or shards, so no one "
    "ImageFolder order fits (allowed: the files one after another).",
}


def view_opened(parts: Sequence[LMDBReader], index: ViewIndex, request: ViewRequest, multi: bool) -> Opened:
    """What opening the view found, as opening a file finds it (reader/records.Opened)."""
    names = _gathered_names(parts, index)
    whole = names is parts[0]._index_arrays[2]  # all of one file in its order: its own arrays, not copies

    def gather(per_part: list[Any]) -> np.ndarray:
        return per_part[0] if whole else index.gather(per_part)

    meta = Meta(
        document=view_document(parts, index, request, multi),
        labels=index.labels.astype(np.int32),
        sizes=gather([part.image_sizes for part in parts]),
        crc32=gather([part.checksums for part in parts]),
        storage=gather([part.storage_codes for part in parts]),
        source_bytes=np.zeros(len(index.records), dtype=np.uint64),  # not kept by a dataset; no view needs it
        paths=names,
        label_lists=index.label_lists,
        fields=_common_fields(parts, index) or None,
    )
    records = ViewRecords(parts, index.files, index.records)
    if whole and index.classes == parts[0].classes:  # the whole file: its own targets
        return Opened(records, meta.document, index.classes, names, parts[0].targets, meta)
    return Opened(records, meta.document, index.classes, names, meta.targets(), meta)


def _gathered_names(parts: Sequence[LMDBReader], index: ViewIndex) -> list[str]:
    """Each sample's relative path: the file's own list where the view keeps all of one file in its
    order (nothing copied), else taken at C speed (itemgetter)."""
    names = [part._index_arrays[2] for part in parts]
    if index.files is None and len(index.records) == len(names[0]) and _in_order(index.records):
        return names[0]
    joined = names[0] if index.files is None else [name for part in names for name in part]
    positions = index.positions([len(part) for part in names])
    if len(positions) < 2:
        return [joined[position] for position in positions.tolist()]
    return list(operator.itemgetter(*positions.tolist())(joined))


def _in_order(records: np.ndarray) -> bool:
    return bool(len(records) == 0 or (records[-1] == len(records) - 1 and (np.diff(records) == 1).all()))


def _common_fields(parts: Sequence[LMDBReader], index: ViewIndex) -> dict[str, FieldColumn]:
    """The fields every file has with one type, their values taken for the view's samples."""
    first = parts[0].field_types
    common = [name for name, kind in first.items() if all(part.field_types.get(name) == kind for part in parts)]
    if not common:
        return {}  # spared the positions of every sample (a per-record list)
    positions = index.positions([len(part.samples) for part in parts]).tolist()
    fields = {}
    for name in common:
        values = [value for part in parts for value in part._fields[name].values]
        fields[name] = FieldColumn(first[name], [values[position] for position in positions])
    return fields


def view_document(parts: Sequence[LMDBReader], index: ViewIndex, request: ViewRequest, multi: bool) -> dict[str, Any]:
    """The view's meta document: what it is made of, and the entries a file's document gives a dataset
    (its classes' words, the root of a one-file view, the sizes all its files were shrunk to)."""
    contents = [part._identity.content if part._identity is not None else "" for part in parts]
    digest = hashlib.sha256(json.dumps([contents, index.classes, request.union]).encode()).hexdigest()[:32]
    document: dict[str, Any] = {
        "view": {"files": [part.path for part in parts], "union": request.union, "allow_mixed": request.allow_mixed},
        "length": len(index.records),
        "classes": index.classes,
        "checksums": {"view": digest},  # the content id a dataset takes of its document (reader/identity.py)
        "settings": {"encode": {key: _shared([getattr(part, key) for part in parts]) for key in SIZES}},
    }
    if multi:
        document["label_kind"] = MULTI_LABEL
    if not request.union and parts[0].root is not None:
        document["source"] = {"root": parts[0].root}
    words = {name: word for part in parts for name, word in zip(part.classes, part.class_words or [], strict=False)}
    if all(name in words for name in index.classes):
        document["class_words"] = [words[name] for name in index.classes]
    listings = [_listing(part.meta_document) for part in parts]
    if _shared(listings) is not None:
        document["made_from"] = {"recipe": {"listing": listings[0]}}  # ds.extensions
    return document


SIZES = ("short_side", "max_side")


def _shared(values: list[Any]) -> Any:
    """The value all files share; None where they differ."""
    return values[0] if all(value == values[0] for value in values) else None


def _listing(document: dict[str, Any]) -> Any:
    made_from = document.get("made_from")
    recipe = made_from.get("recipe") if isinstance(made_from, dict) else None
    return recipe.get("listing") if isinstance(recipe, dict) else None


__all__ = ["PATHS", "ClassNames", "DatasetPaths", "ViewRequest", "open_view", "view_request"]
