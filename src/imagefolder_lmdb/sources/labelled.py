"""Samples that carry an integer label (layouts webdataset and parquet): naming their classes and
listing them in record order.

A source file stores a label as a number; the class it means comes from, first to last: the split's
``devkit:`` (its 1,000 WNIDs, sorted: the order ImageNet's integer labels use; ``devkit: imagenet1k``
takes them from the shipped list), the class names
the files themselves store (Hugging Face ``ClassLabel`` metadata in Parquet files), or the class
list the split shares (the config's ``classes:``, sorted, or the first split's classes). Records
keep the source files' order (files as the source names them, samples as they lie in each file):
never sorted, so record ``i`` is the ``i``-th sample a plain reading of the files gives.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from imagefolder_lmdb.classes.lists import ClassList, OutsideClasses
from imagefolder_lmdb.sources.base import CountMismatchError, Listing
from imagefolder_lmdb.sources.ilsvrc import devkit_class_list
from imagefolder_lmdb.sources.inputs_read import InputRead
from imagefolder_lmdb.work.files import Member, Sample


@dataclass(frozen=True)
class LabelNames:
    """The names a source's integer labels index (label ``k`` is ``names[k]``), and their origin."""

    names: list[str]
    origin: str  # in words, for error messages
    #: what to do about a label outside ``names``, in words
    remedy: str = "Give the full class list the files were labelled with (devkit: or classes:)"
    read_from: InputRead | None = None  # the devkit the names were read from, as parsed


def label_names(own: list[str] | None, devkit: str | None, shared: ClassList | None, where: str) -> LabelNames:
    """What the integer labels of ``where`` (the split's source, for messages) mean."""
    if devkit:
        names, read = devkit_class_list(devkit)
        return LabelNames(names, f"the sorted WNIDs of {devkit}", read_from=read)
    if own:
        check_wanted_named(own, shared, where)
        return LabelNames(
            list(own),
            "the class names stored in the files",
            "The files' own class names are used (devkit: would replace them): fix the row's label",
        )
    if shared is not None:
        return LabelNames(list(shared.names), f"the class list ({shared.origin})")
    raise CountMismatchError(
        f"{where}: its labels are integers, and nothing says which class each means. Set devkit: "
        "(ILSVRC2012_devkit_t12.tar.gz: the 1,000 WNIDs in label order) or classes: (a list or a file "
        "of the class names; sorted, the k-th name is label k) in the config; for ImageNet-1k's labels, "
        "classes: imagenet1k (the list shipped here) needs no devkit."
    )


def check_wanted_named(own: list[str], shared: ClassList | None, where: str) -> None:
    """A class list from the config that none of the files' own names matches: WNIDs (ImageNet-100)
    against the human-readable names the hub's Parquet files store."""
    if shared is None or not shared.explicit or set(shared.names) & set(own):
        return
    raise CountMismatchError(
        f"{where}: the class list ({shared.origin}) names none of the classes the files store "
        f"({', '.join(own[:3])}, ...). To select classes by WNID, set devkit: imagenet1k (the shipped "
        "list) or devkit: ILSVRC2012_devkit_t12.tar.gz for this split: its labels are then named by WNID."
    )


def labelled_listing(
    members: Iterable[Member], labels: LabelNames, wanted: ClassList | None, where: Callable[[Member], str]
) -> Listing:
    """The samples in record order, labelled by name; those of classes outside ``wanted`` set aside
    and counted. ``where(member)``: the source file and sample key (or row), for errors. A sample's path is
    ``<class name>/<member path>``, as an ImageFolder tree of the same samples would hold it."""
    names = labels.names
    classes = [name for name in names if wanted is None or name in wanted]
    index_of = {name: i for i, name in enumerate(classes)}
    samples: list[Sample] = []
    outside = OutsideClasses()
    for member in members:
        name = class_name(member, labels, where)
        if name in index_of:
            samples.append(Sample(len(samples), index_of[name], f"{name}/{member.path}", member.location))
        else:
            outside.add(name, 1)
    return Listing(classes, samples, outside=outside, inputs=[labels.read_from] if labels.read_from else [])


def class_name(member: Member, labels: LabelNames, where: Callable[[Member], str]) -> str:
    """The class a member's label names; an error naming the sample when it names none."""
    label = member.label
    if label is None:
        raise CountMismatchError(f"{where(member)}: the sample has no label. Add its label or remove the sample.")
    if not 0 <= label < len(labels.names):
        raise CountMismatchError(
            f"{where(member)}: label {label} is outside the {len(labels.names)} classes of {labels.origin} "
            f"(labels 0..{len(labels.names) - 1}). {labels.remedy}, or remove the sample."
        )
    return labels.names[label]
