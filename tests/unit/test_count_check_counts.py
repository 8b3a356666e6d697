"""steps/count_check.py: each class's image count, by one numpy pass or (with annotations) per image."""

from __future__ import annotations

import pytest

from imagefolder_lmdb.sources.base import Listing
from imagefolder_lmdb.steps.count_check import classes_with_images, label_counts, per_class_counts
from imagefolder_lmdb.work.files import Sample

CLASSES = ["a", "b", "c", "d"]


def by_sample(listing: Listing) -> dict[str, int]:
    """What count_check counted before: each image's labels, one by one."""
    counts = dict.fromkeys(listing.classes, 0)
    for sample in listing.samples:
        labels = sample.annotations["labels"] if sample.annotations else [sample.label]
        for label in (label for label in labels if label >= 0):
            counts[listing.classes[label]] += 1
    return counts


@pytest.mark.parametrize("multi", [False, True])
def test_counts_are_each_images_labels_counted(multi: bool) -> None:
    samples = [Sample(i, label, f"x/{i}.jpg") for i, label in enumerate([0, 0, 2, -1, 2, 2])]
    if multi:  # a label file's multi-label images: the list in annotations, label -1
        samples += [Sample(6, -1, "y.jpg", None, {"labels": [0, 3]}), Sample(7, -1, "z.jpg", None, {"labels": []})]
    listing = Listing(CLASSES, samples)
    assert per_class_counts(listing) == by_sample(listing)
    assert label_counts(listing) == list(by_sample(listing).values())
    assert classes_with_images(listing) == (["a", "c", "d"] if multi else ["a", "c"])
    assert all(type(count) is int for count in label_counts(listing))  # written to counts.json as before
