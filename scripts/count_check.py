"""Rule count_check: list a split's images exactly as torchvision's ImageFolder would, write the
manifest, and stop the run when the counts differ from the ones the config expects.

- A folder (or an unpacked archive) is scanned by torchvision itself (``find_classes`` +
  ``make_dataset``), so classes, their order, file order and accepted extensions are ImageFolder's.
- An archive read in place gets the same rules applied to its member paths (class = first folder,
  ``sorted(os.walk)`` order, torchvision's extension test); tests compare it with torchvision's
  scan of the unpacked tree.
- ILSVRC2012 validation images (flat) are labelled from the devkit by the number in their file
  name and listed as ImageFolder lists the usual ``val/<wnid>/<file>`` tree.
Files ImageFolder would ignore are not dropped silently: they are counted and listed.
"""

import json
import logging
import os
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, TextIO

from tqdm import tqdm

from ilsvrc import devkit_classes, val_labels
from workflow_io import (
    IMAGE_EXTENSIONS,
    ManifestHeader,
    Sample,
    hold_point,
    is_image,
    progress_kwargs,
    read_json,
    relative_files,
    run_rule,
    write_json_atomic,
    write_manifest,
)

log = logging.getLogger("imagefolder_lmdb.count_check")

#: How many ignored file names the report lists in full (the count is always exact).
LISTED_IGNORED = 50


class CountMismatchError(RuntimeError):
    """The source does not hold what the config says it should."""


@dataclass
class Listing:
    """Classes and samples in ImageFolder order, and the files ImageFolder would not take."""

    classes: list[str]
    samples: list[Sample]
    ignored: list[str] = field(default_factory=list)
    root: str = ""
    containers: list[str] = field(default_factory=list)


def no_image_error(where: str, empty: Iterable[str]) -> CountMismatchError:
    return CountMismatchError(
        f"{where}: found no valid file for the classes {', '.join(sorted(empty))}. Every class folder needs at "
        f"least one image ({', '.join(IMAGE_EXTENSIONS)}); remove empty class folders or add their images."
    )


def scan_folder(root: str, progress: dict[str, Any]) -> Listing:
    """torchvision's own scan of an ImageFolder tree (with a file counter: 1.28M files take a while)."""
    from torchvision.datasets.folder import find_classes, make_dataset  # imports torch: only for folders

    try:
        classes, class_to_idx = find_classes(root)
    except FileNotFoundError as exc:
        raise CountMismatchError(f"{str(exc).strip()} {no_class_folder_hint(root)}") from exc
    ignored: list[str] = []
    counter = tqdm(desc=f"scan {root}", unit="file", **progress)

    def accept(path: str) -> bool:
        counter.update()
        if not is_image(path):
            ignored.append(os.path.relpath(path, root))
            return False
        return True

    try:
        found = make_dataset(root, class_to_idx, is_valid_file=accept)
    except FileNotFoundError as exc:
        raise CountMismatchError(f"{root}: {str(exc).strip()} Remove empty class folders or add their images.") from exc
    finally:
        counter.close()
    ignored.extend(entry.name for entry in os.scandir(root) if not entry.is_dir())
    samples = [
        Sample(index, label, os.path.relpath(path, root).replace(os.sep, "/"))
        for index, (path, label) in enumerate(found)
    ]
    return Listing(classes, samples, sorted(ignored), root=root)


def no_class_folder_hint(root: str) -> str:
    names = [entry.name for entry in os.scandir(root) if entry.is_file()]
    if any(name.endswith(".tar") for name in names):
        return "It holds .tar files: a folder of ILSVRC2012 class tars needs layout: ilsvrc-train."
    if any(is_image(name) for name in names):
        return (
            "Its images lie loose: ImageFolder needs one subfolder per class (flat ILSVRC2012 val: layout: ilsvrc-val)."
        )
    return "ImageFolder needs one subfolder per class."


def walk_order(path: str) -> tuple[str, str]:
    """Sort key of ``sorted(os.walk(...))`` then ``sorted(files)``: the folder, then the name."""
    folder, _, name = path.rpartition("/")
    return folder, name


def order_members(entries: list[tuple[str, dict[str, Any]]], where: str, folders: Iterable[str] = ()) -> Listing:
    """ImageFolder's rules applied to archive member paths, without unpacking anything.
    ``folders``: the archive's top folders, classes even where they hold no file."""
    by_class: dict[str, list[tuple[str, dict[str, Any]]]] = defaultdict(list)
    for folder in folders:
        by_class[folder] = []
    ignored = []
    for path, location in entries:
        if "/" not in path:
            ignored.append(path)  # a file beside the class folders: not in any class
            continue
        by_class[path.split("/", 1)[0]].append((path, location))
    classes = sorted(by_class)
    samples: list[Sample] = []
    empty = []
    for label, name in enumerate(classes):
        files = sorted(by_class[name], key=lambda entry: walk_order(entry[0]))
        images = [(p, loc) for p, loc in files if is_image(p)]
        ignored.extend(p for p, _ in files if not is_image(p))
        if not images:
            empty.append(name)
        first = len(samples)
        samples.extend(Sample(first + i, label, p, loc) for i, (p, loc) in enumerate(images))
    if empty:
        raise no_image_error(where, empty)
    return Listing(classes, samples, sorted(ignored))


def label_val(entries: list[tuple[str, dict[str, Any] | None]], devkit: str | None, csv: str | None) -> Listing:
    """Flat ILSVRC2012 validation files, listed as ImageFolder lists ``val/<wnid>/<file>``."""
    labels = val_labels(devkit, csv)
    class_to_idx = {wnid: i for i, wnid in enumerate(labels.classes)}
    images, ignored = [], []
    for path, location in entries:
        name = path.rsplit("/", 1)[-1]
        if not is_image(name) or name.startswith("._"):  # "._": macOS metadata beside each file
            ignored.append(path)
            continue
        images.append((class_to_idx[labels.wnid(name)], name, location))
    images.sort(key=lambda image: (image[0], image[1]))
    samples = [
        Sample(index, label, f"{labels.classes[label]}/{name}", location)
        for index, (label, name, location) in enumerate(images)
    ]
    return Listing(labels.classes, samples, sorted(ignored))


def read_members(source_dir: str) -> list[tuple[str, dict[str, Any]]]:
    with open(os.path.join(source_dir, "members.jsonl"), encoding="utf-8") as stream:
        return [tuple(json.loads(line)) for line in stream]  # type: ignore[misc]


def val_files(root: str) -> list[tuple[str, dict[str, Any]]]:
    """Every file under ``root``, in subfolders too: a validation image is labelled by its file
    name, wherever it is (a wrapper folder, or class folders a sorting script began to make)."""
    return [(path, {"file": path}) for path in sorted(relative_files(root))]


def list_source(description: dict[str, Any], devkit: str | None, csv: str | None, progress: dict[str, Any]) -> Listing:
    """The listing for any kind of source the extract rule prepared."""
    layout, source_dir = description["layout"], description["source_dir"]
    if description["kind"] == "index":
        entries = read_members(source_dir)
        listing = (
            label_val(entries, devkit, csv)
            if layout == "ilsvrc-val"
            else order_members(entries, description["source"], description.get("folders", []))
        )
        listing.containers = description["containers"]
        return listing
    root = description["root"]
    try:
        listing = label_val(val_files(root), devkit, csv) if layout == "ilsvrc-val" else scan_folder(root, progress)
    except CountMismatchError as exc:
        if description["kind"] == "extracted":  # name the user's archive, not only our unpacked copy
            raise CountMismatchError(f"{description['source']}, unpacked into {exc}") from exc
        raise
    listing.root = root
    return listing


def no_images_message(description: dict[str, Any]) -> str:
    source, layout = description["source"], description["layout"]
    expected = "ILSVRC2012_val_NNNNNNNN.JPEG files" if layout == "ilsvrc-val" else "images in class folders"
    return (
        f"{source}: no images found (layout {layout} expects {expected}). Check splits.<name>.source; "
        "for Kaggle's download, unzip it and point at ILSVRC/Data/CLS-LOC/train or .../val."
    )


def per_class_counts(listing: Listing) -> dict[str, int]:
    counts = dict.fromkeys(listing.classes, 0)
    for sample in listing.samples:
        counts[listing.classes[sample.label]] += 1
    return counts


def mismatches(listing: Listing, expected_images: int | None, expected_classes: int | None) -> list[str]:
    problems = []
    images, classes = len(listing.samples), len(listing.classes)
    if expected_classes is not None and classes != expected_classes:
        problems.append(f"{classes} classes found, expected_classes is {expected_classes}")
    if expected_images is not None and images != expected_images:
        difference = expected_images - images
        what = f"{difference} missing" if difference > 0 else f"{-difference} more than expected"
        problems.append(f"{images} images found, expected_images is {expected_images} ({what})")
    return problems


def missing_classes(listing: Listing, devkit: str | None) -> list[str]:
    """For ILSVRC train with a devkit: the WNIDs the devkit lists that the source lacks."""
    if not devkit:
        return []
    expected = devkit_classes(devkit)
    missing = sorted(set(expected) - set(listing.classes))
    extra = sorted(set(listing.classes) - set(expected))
    return [f"class {w} (its tar or folder) is missing" for w in missing[:20]] + [
        f"{w} is not an ILSVRC2012 class" for w in extra[:20]
    ]


def count_check(
    source_dir: str,
    manifest_path: str,
    counts_path: str,
    expected_images: int | None,
    expected_classes: int | None,
    devkit: str | None = None,
    val_csv: str | None = None,
    progress: dict[str, Any] | None = None,
) -> dict[str, Any]:
    progress = progress or {}
    description = read_json(os.path.join(source_dir, "source.json"))
    description["source_dir"] = source_dir
    log.info("listing %s (%s, layout %s)", description["source"], description["kind"], description["layout"])
    listing = list_source(description, devkit, val_csv, progress)
    listing.ignored = sorted([*listing.ignored, *description.get("set_aside", [])])
    log.info(
        "%d images in %d classes; %d files ignored", len(listing.samples), len(listing.classes), len(listing.ignored)
    )

    report = {
        "source": description["source"],
        "kind": description["kind"],
        "layout": description["layout"],
        "images": len(listing.samples),
        "classes": len(listing.classes),
        "per_class": per_class_counts(listing),
        "empty_classes": [name for name, count in per_class_counts(listing).items() if count == 0],
        "ignored_files": len(listing.ignored),
        "ignored_examples": listing.ignored[:LISTED_IGNORED],
        "expected_images": expected_images,
        "expected_classes": expected_classes,
    }
    if not listing.samples:
        raise CountMismatchError(no_images_message(description))
    problems = mismatches(listing, expected_images, expected_classes)
    if description["layout"] == "ilsvrc-train":
        problems += missing_classes(listing, devkit)
    if problems:
        raise CountMismatchError(
            f"{description['source']}: " + "; ".join(problems) + ". Check that the source is complete "
            "(an interrupted download or copy?) or correct splits.<name>.expected_* in the config."
        )
    header = ManifestHeader(
        root=listing.root, classes=listing.classes, count=len(listing.samples), containers=listing.containers
    )
    write_manifest(manifest_path, header, listing.samples)
    hold_point("count_check")  # the manifest is in place, the counts report not yet
    write_json_atomic(counts_path, report)
    return report


def main(smk: Any, stream: TextIO) -> None:
    count_check(
        smk.input.source,
        smk.output.manifest,
        smk.output.counts,
        smk.params.expected_images,
        smk.params.expected_classes,
        devkit=smk.params.devkit,
        val_csv=smk.params.val_labels,
        progress=progress_kwargs(stream),
    )


if __name__ == "__main__":
    run_rule(main, snakemake)  # type: ignore[name-defined]  # noqa: F821
