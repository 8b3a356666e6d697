"""ILSVRC2012 validation images (flat files) labelled by the number in their file name, and
listed as ImageFolder lists the usual ``val/<wnid>/<file>`` tree (src/imagefolder_lmdb/sources/ilsvrc.py reads the
devkit and Kaggle's CSV)."""

from __future__ import annotations

from imagefolder_lmdb.classes.lists import ClassList, OutsideClasses
from imagefolder_lmdb.sources.base import Listing
from imagefolder_lmdb.sources.ilsvrc import val_labels
from imagefolder_lmdb.sources.listing_options import is_image
from imagefolder_lmdb.sources.tree import relative_files
from imagefolder_lmdb.work.files import Sample
from imagefolder_lmdb.work.source_locations import FileLocation, Location


def label_val(
    entries: list[tuple[str, Location]],
    devkit: str | None,
    csv: str | None,
    wanted: ClassList | None = None,
) -> Listing:
    """Flat ILSVRC2012 validation files, listed as ImageFolder lists ``val/<wnid>/<file>``; images
    whose ground-truth class is outside ``wanted`` are counted, not listed."""
    labels = val_labels(devkit, csv)
    classes = [wnid for wnid in labels.classes if wanted is None or wnid in wanted]
    class_to_idx = {wnid: i for i, wnid in enumerate(classes)}
    images, ignored, outside = [], [], OutsideClasses()
    for path, location in entries:
        name = path.rsplit("/", 1)[-1]
        if not is_image(name) or name.startswith("._"):  # "._": macOS metadata beside each file
            ignored.append(path)
            continue
        wnid = labels.wnid(name)
        if wnid in class_to_idx:
            images.append((class_to_idx[wnid], name, location))
        else:
            outside.add(wnid, 1)
    images.sort(key=lambda image: (image[0], image[1]))
    samples = [
        Sample(index, label, f"{classes[label]}/{name}", location)
        for index, (label, name, location) in enumerate(images)
    ]
    inputs = [labels.read_from] if labels.read_from is not None else []  # the devkit or CSV as parsed
    return Listing(classes, samples, sorted(ignored), outside=outside, inputs=inputs)


def val_files(root: str) -> list[tuple[str, Location]]:
    """Every file under ``root``, in subfolders too: a validation image is labelled by its file
    name, wherever it is (a wrapper folder, or class folders a sorting script began to make)."""
    return [(path, FileLocation(path)) for path in sorted(relative_files(root))]
