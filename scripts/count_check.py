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

Every split shares one class list by default (scripts/class_list.py): labels index that list, and
images of classes outside it are set aside and counted, never stored under another index.
"""

import logging
import os
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, TextIO

from tqdm import tqdm

from class_list import ClassList, OutsideClasses, missing_from_source
from ilsvrc import devkit_classes, val_labels
from work_files import (
    CountsReport,
    FileLocation,
    Location,
    ManifestHeader,
    Sample,
    SourceDescription,
    read_manifest_header,
    read_members,
    read_source_description,
    write_counts,
    write_manifest,
)
from workflow_io import IMAGE_EXTENSIONS, hold_point, is_image, progress_kwargs, relative_files, run_rule

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
    outside: OutsideClasses = field(default_factory=OutsideClasses)  # classes not in the class list


def no_image_error(where: str, empty: Iterable[str]) -> CountMismatchError:
    return CountMismatchError(
        f"{where}: found no valid file for the classes {', '.join(sorted(empty))}. Every class folder needs at "
        f"least one image ({', '.join(IMAGE_EXTENSIONS)}); remove empty class folders or add their images."
    )


def scan_folder(root: str, progress: dict[str, Any], wanted: ClassList | None = None) -> Listing:
    """torchvision's own scan of an ImageFolder tree (with a file counter: 1.28M files take a while).
    Class folders outside ``wanted`` only have their images counted."""
    from torchvision.datasets.folder import find_classes, make_dataset  # imports torch: only for folders

    try:
        classes, _ = find_classes(root)
    except FileNotFoundError as exc:
        raise CountMismatchError(f"{str(exc).strip()} {no_class_folder_hint(root)}") from exc
    outside = OutsideClasses()
    for name in [name for name in classes if wanted is not None and name not in wanted]:
        # names only, no file opened: the count that says what the class list left out
        outside.add(name, sum(map(is_image, relative_files(os.path.join(root, name)))))
    classes = [name for name in classes if wanted is None or name in wanted]
    if not classes:
        return Listing([], [], root=root, outside=outside)
    class_to_idx = {name: i for i, name in enumerate(classes)}
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
    return Listing(classes, samples, sorted(ignored), root=root, outside=outside)


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


def order_members(
    entries: list[tuple[str, Location]], where: str, folders: Iterable[str] = (), wanted: ClassList | None = None
) -> Listing:
    """ImageFolder's rules applied to archive member paths, without unpacking anything.
    ``folders``: the archive's top folders, classes even where they hold no file; classes outside
    ``wanted`` are counted, not listed."""
    by_class: dict[str, list[tuple[str, Location]]] = defaultdict(list)
    for folder in folders:
        by_class[folder] = []
    ignored = []
    for path, location in entries:
        if "/" not in path:
            ignored.append(path)  # a file beside the class folders: not in any class
            continue
        by_class[path.split("/", 1)[0]].append((path, location))
    outside = OutsideClasses()
    for name in [name for name in by_class if wanted is not None and name not in wanted]:
        outside.add(name, sum(is_image(path) for path, _ in by_class.pop(name)))
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
    return Listing(classes, samples, sorted(ignored), outside=outside)


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
    return Listing(classes, samples, sorted(ignored), outside=outside)


def val_files(root: str) -> list[tuple[str, Location]]:
    """Every file under ``root``, in subfolders too: a validation image is labelled by its file
    name, wherever it is (a wrapper folder, or class folders a sorting script began to make)."""
    return [(path, FileLocation(path)) for path in sorted(relative_files(root))]


def list_source(
    description: SourceDescription,
    source_dir: str,
    devkit: str | None,
    csv: str | None,
    progress: dict[str, Any],
    wanted: ClassList | None = None,
) -> Listing:
    """The listing for any kind of source the extract rule prepared, within ``wanted`` if given."""
    if description.kind == "index":
        entries = read_members(source_dir)
        listing = (
            label_val(entries, devkit, csv, wanted)
            if description.layout == "ilsvrc-val"
            else order_members(entries, description.source, description.folders, wanted)
        )
        listing.containers = description.containers
        listing.outside.unread += description.unread_classes
        return listing
    root = description.root
    assert root is not None, "a folder or unpacked source has a root"
    try:
        listing = (
            label_val(val_files(root), devkit, csv, wanted)
            if description.layout == "ilsvrc-val"
            else scan_folder(root, progress, wanted)
        )
    except CountMismatchError as exc:
        if description.kind == "extracted":  # name the user's archive, not only our unpacked copy
            raise CountMismatchError(f"{description.source}, unpacked into {exc}") from exc
        raise
    listing.root = root
    return listing


def no_images_message(description: SourceDescription, listing: Listing, class_list: ClassList) -> str:
    source, layout = description.source, description.layout
    outside = sum(listing.outside.images.values()) + len(listing.outside.unread)
    if outside:
        return (
            f"{source}: no image of the {len(class_list.names)} classes of the class list ({class_list.origin}); "
            f"all its images lie outside it. Use the same classes in every split, or set "
            f"splits.<name>.share_classes: false for a split with a class list of its own."
        )
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


def onto_class_list(listing: Listing, class_list: ClassList) -> Listing:
    """The listing with labels that index ``class_list`` (a superset of its classes, both sorted, so
    ImageFolder's order is kept and only the label numbers change)."""
    relabel = [class_list.index[name] for name in listing.classes]
    samples = [Sample(s.index, relabel[s.label], s.path, s.location) for s in listing.samples]
    return Listing(list(class_list.names), samples, listing.ignored, listing.root, listing.containers, listing.outside)


def class_difference(held: list[str], listing: Listing, class_list: ClassList) -> str:
    """Which classes a split lacks from its class list, and which of its own lie outside it."""
    missing = sorted(set(class_list.names) - set(held))
    extra = sorted({*listing.outside.images, *listing.outside.unread})
    parts = [f"missing from this split: {', '.join(missing[:20])}"] if missing else []
    if extra:
        parts.append(f"outside the class list (set aside): {', '.join(extra[:20])}")
    more = " (first 20 shown)" if max(len(missing), len(extra)) > 20 else ""
    return f" [class list {class_list.origin}; " + "; ".join(parts) + more + "]" if parts else ""


def mismatches(
    listing: Listing, held: list[str], class_list: ClassList, expected_images: int | None, expected_classes: int | None
) -> list[str]:
    """``held``: the split's own classes within the class list (what expected_classes counts)."""
    problems = []
    images, classes = len(listing.samples), len(held)
    if expected_classes is not None and classes != expected_classes:
        problems.append(
            f"{classes} classes found, expected_classes is {expected_classes}"
            + class_difference(held, listing, class_list)
        )
    if expected_images is not None and images != expected_images:
        difference = expected_images - images
        what = f"{difference} missing" if difference > 0 else f"{-difference} more than expected"
        outside = sum(listing.outside.images.values())
        beyond = f"; {outside} more lie outside the class list ({class_list.origin})" if outside else ""
        problems.append(f"{images} images found, expected_images is {expected_images} ({what}{beyond})")
    return problems


def devkit_problems(held: list[str], class_list: ClassList, own_list: bool, devkit: str | None) -> list[str]:
    """For ILSVRC train with a devkit: the WNIDs a full source lacks, or a class list names wrongly."""
    if not devkit:
        return []
    expected = devkit_classes(devkit)
    missing = sorted(set(expected) - set(held)) if own_list else []
    extra = sorted(set(class_list.names) - set(expected))
    return [f"class {w} (its tar or folder) is missing" for w in missing[:20]] + [
        f"{w} is not an ILSVRC2012 class" for w in extra[:20]
    ]


def class_list_of(param: dict[str, Any], shared_manifest: str | None) -> ClassList | None:
    """The list the split is converted with: the config's, the first split's, or None (its own)."""
    if param.get("names") is not None:
        return ClassList(list(param["names"]), param["origin"], explicit=True)
    if shared_manifest:
        return ClassList(read_manifest_header(shared_manifest).classes, param["origin"], explicit=False)
    return None


def counts_report(
    description: SourceDescription, listing: Listing, class_list: ClassList, expected: tuple[int | None, int | None]
) -> CountsReport:
    per_class = per_class_counts(listing)
    return CountsReport(
        source=description.source,
        kind=description.kind,
        layout=description.layout,
        images=len(listing.samples),
        classes=len(listing.classes),
        per_class=per_class,
        empty_classes=[name for name, count in per_class.items() if count == 0],
        class_list={"origin": class_list.origin, "classes": len(class_list.names)},
        outside_class_list=listing.outside.report(LISTED_IGNORED),
        ignored_files=len(listing.ignored),
        ignored_examples=listing.ignored[:LISTED_IGNORED],
        expected_images=expected[0],
        expected_classes=expected[1],
    )


def count_check(
    source_dir: str,
    manifest_path: str,
    counts_path: str,
    expected_images: int | None,
    expected_classes: int | None,
    devkit: str | None = None,
    val_csv: str | None = None,
    progress: dict[str, Any] | None = None,
    class_list: dict[str, Any] | None = None,
    shared_manifest: str | None = None,
) -> CountsReport:
    progress = progress or {}
    class_list = class_list or {"names": None, "origin": "from this split's source"}
    description = read_source_description(source_dir)
    log.info("listing %s (%s, layout %s)", description.source, description.kind, description.layout)
    wanted = class_list_of(class_list, shared_manifest)
    listing = list_source(description, source_dir, devkit, val_csv, progress, wanted)
    listing.ignored = sorted([*listing.ignored, *description.set_aside])
    held = list(listing.classes)
    log.info("%d images in %d classes; %d files ignored", len(listing.samples), len(held), len(listing.ignored))
    if wanted is not None and (error := missing_from_source(wanted, held, description.source)):
        raise error
    classes = wanted or ClassList(held, class_list["origin"], explicit=False)
    listing = onto_class_list(listing, classes)
    report = counts_report(description, listing, classes, (expected_images, expected_classes))
    if not listing.samples:
        raise CountMismatchError(no_images_message(description, listing, classes))
    problems = mismatches(listing, held, classes, expected_images, expected_classes)
    if description.layout == "ilsvrc-train":
        problems += devkit_problems(held, classes, wanted is None, devkit)
    if problems:
        raise CountMismatchError(
            f"{description.source}: " + "; ".join(problems) + ". Check that the source is complete "
            "(an interrupted download or copy?) or correct splits.<name>.expected_* in the config."
        )
    header = ManifestHeader(
        root=listing.root, classes=listing.classes, count=len(listing.samples), containers=listing.containers
    )
    write_manifest(manifest_path, header, listing.samples)
    hold_point("count_check")  # the manifest is in place, the counts report not yet
    write_counts(counts_path, report)
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
        class_list=dict(smk.params.class_list),
        shared_manifest=smk.input.shared_classes[0] if smk.input.shared_classes else None,
    )


if __name__ == "__main__":
    run_rule(main, snakemake)  # type: ignore[name-defined]  # noqa: F821
