"""Rule count_check: list a split's images exactly as torchvision's ImageFolder would, write the
manifest, and stop the run when the counts differ from the ones the config expects.

The listing itself belongs to the kind of source extract described (src/imagefolder_lmdb/sources/: a folder is
scanned by torchvision itself, an archive read in place gets the same rules applied to its member
paths, ILSVRC2012 val images are labelled by file name). Files ImageFolder would ignore are not
dropped silently: they are counted and listed.

Every split shares one class list by default (src/imagefolder_lmdb/classes/lists.py): labels index that list, and
images of classes outside it are set aside and counted, never stored under another index.
"""

import logging
from collections import Counter
from dataclasses import dataclass, replace
from functools import partial
from operator import attrgetter
from typing import Any, TextIO

from imagefolder_lmdb.board.rule_runner import progress_kwargs, run_rule
from imagefolder_lmdb.classes.lists import ClassList, is_dataset, missing_from_source
from imagefolder_lmdb.classes.plan import ClassSource
from imagefolder_lmdb.config.shards import too_many_shards
from imagefolder_lmdb.config.step_settings import CountSettings
from imagefolder_lmdb.run.made_from import CHANGED_GROUPS
from imagefolder_lmdb.run.read_once import check_files_read, check_settings_read
from imagefolder_lmdb.sources import layout_hint, source_of_kind, work_file_options
from imagefolder_lmdb.sources.base import CountMismatchError, Labels, Listing
from imagefolder_lmdb.sources.ilsvrc import train_devkit_problems
from imagefolder_lmdb.sources.labellings import classes_expected, labels_read, lists_no_labels
from imagefolder_lmdb.sources.layouts import layout_named
from imagefolder_lmdb.sources.listing_options import ListingOptions
from imagefolder_lmdb.work.files import (
    CountsReport,
    ManifestHeader,
    Sample,
    SourceDescription,
    read_json,
    read_manifest_header,
    read_source_description,
    write_counts,
    write_manifest,
)
from imagefolder_lmdb.work.shard_stamps import write_shard_stamps
from imagefolder_lmdb.writing.hold_points import hold_point

log = logging.getLogger("imagefolder_lmdb.count_check")

#: How many ignored file names the report lists in full (the count is always exact).
LISTED_IGNORED = 50


def no_images_message(description: SourceDescription, listing: Listing, class_list: ClassList) -> str:
    source, layout = description.source, description.layout
    outside = sum(listing.outside.images.values()) + len(listing.outside.unread)
    if outside:
        return (
            f"{source}: no image of the {len(class_list.names)} classes of the class list ({class_list.origin}); "
            f"all its images lie outside it. Use the same classes in every split, or set "
            f"splits.<name>.share_classes: false for a split with a class list of its own."
        )
    expected = source_of_kind(description.kind).expects() or layout_named(layout).labelling.expects
    hint = (
        layout_hint(listing.ignored)
        or "for Kaggle's zip, set splits.<name>.root: ILSVRC/Data/CLS-LOC/train (or .../val)."
    )
    return (
        f"{source}: no images found (layout {layout} expects {expected}). Check splits.<name>.source and layout; {hint}"
    )


def sample_labels(sample: Sample) -> list[int]:
    """The class indices of an image: its label, a multi-label image's list, or none (-1: no label)."""
    if sample.annotations is not None and "labels" in sample.annotations:
        return sample.annotations["labels"]
    return [sample.label] if sample.label >= 0 else []


def label_counts(listing: Listing) -> list[int]:
    """How many images each class of the listing holds (a multi-label image counts in each of its
    classes): one count of the labels in C where no image carries annotations (ImageNet's 1.28M)."""
    samples = listing.samples
    if list(map(attrgetter("annotations"), samples)).count(None) != len(samples):
        counts = [0] * len(listing.classes)
        for sample in samples:
            for label in sample_labels(sample):
                counts[label] += 1
        return counts
    found = Counter(map(attrgetter("label"), samples))  # counted in C, without numpy's import in every job
    return [found.get(label, 0) for label in range(len(listing.classes))]


def per_class_counts(listing: Listing) -> dict[str, int]:
    """Each class's images (a multi-label image counts in each of its classes)."""
    return dict(zip(listing.classes, label_counts(listing), strict=True))


def onto_class_list(listing: Listing, class_list: ClassList) -> Listing:
    """The listing with labels that index ``class_list`` (a superset of its classes, both sorted, so
    ImageFolder's order is kept and only the label numbers change)."""
    relabel = [class_list.index[name] for name in listing.classes]
    samples = listing.samples
    if relabel != list(range(len(relabel))):  # the usual case (the list is the split's own) keeps every label
        samples = [relabelled(sample, relabel) for sample in samples]
    return replace(listing, classes=list(class_list.names), samples=samples)


def relabelled(sample: Sample, relabel: list[int]) -> Sample:
    """``sample`` with its class indices mapped through ``relabel``."""
    annotations = sample.annotations
    if annotations is not None and "labels" in annotations:
        annotations = {**annotations, "labels": [relabel[label] for label in annotations["labels"]]}
    label = relabel[sample.label] if sample.label >= 0 else sample.label
    return Sample(sample.index, label, sample.path, sample.location, annotations)


def classes_with_images(listing: Listing) -> list[str]:
    """The listing's classes that hold at least one image (a class folder always does; a class that
    labels can name, as ILSVRC val's or a shard's, may not)."""
    return [name for name, count in zip(listing.classes, label_counts(listing), strict=True) if count]


def class_difference(held: list[str], listing: Listing, class_list: ClassList) -> str:
    """Which classes a split lacks from its class list, and which of its own lie outside it."""
    missing = sorted(set(class_list.names) - set(held))
    extra = sorted({*listing.outside.images, *listing.outside.unread})
    parts = [f"missing from this split: {', '.join(missing[:20])}"] if missing else []
    if extra:
        parts.append(f"outside the class list (set aside): {', '.join(extra[:20])}")
    more = " (first 20 shown)" if max(len(missing), len(extra)) > 20 else ""
    return f" [class list {class_list.origin}; " + "; ".join(parts) + more + "]" if parts else ""


def mismatches(listing: Listing, held: list[str], class_list: ClassList, settings: CountSettings) -> list[str]:
    """``held``: the split's own classes within the class list that hold images (what expected_classes
    counts)."""
    expected_images, expected_classes = settings.expected_images, settings.expected_classes
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


def class_list_of(source: ClassSource, shared_manifest: str | None) -> ClassList | None:
    """The list the split is converted with: the config's, the first split's, or None (its own)."""
    if source.names is not None:  # a dataset's list is shared as another split's is: classes may lack images here
        return ClassList(list(source.names), source.words(), explicit=not is_dataset(source.listed_in))
    if shared_manifest:
        return ClassList(read_manifest_header(shared_manifest).classes, source.words(), explicit=False)
    return None


def counts_report(
    description: SourceDescription, listing: Listing, class_list: ClassList, settings: CountSettings
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
        expected_images=settings.expected_images,
        expected_classes=settings.expected_classes,
        inside=description.inside,
    )


@dataclass(frozen=True)
class CountFiles:
    """Rule count_check's files: the source as extract described it, and what the rule writes."""

    source: str  # extract's output: the split's source described (and unpacked where it had to be)
    manifest: str
    counts: str
    stamps: str | None = None  # the folder of each shard's stamp (work/shard_stamps.py); None: none written
    shared_manifest: str | None = None  # the first split's manifest, whose class list this split takes


def write_listing(
    files: CountFiles,
    shards: int,
    description: SourceDescription,
    listing: Listing,
    changed_groups: dict[str, str] | None = None,
) -> None:
    """The manifest, then the stamp of each of the ``shards`` shards (``changed_groups``: the made_from
    file's, see work/shard_stamps.py)."""
    header = ManifestHeader(
        root=listing.root,
        classes=listing.classes,
        count=len(listing.samples),
        containers=listing.containers,
        kind=description.kind,
        options=work_file_options(listing.options),
        label_kind=listing.label_kind,
        field_types=listing.field_types,
    )
    write_manifest(files.manifest, header, listing.samples)
    if files.stamps is not None:
        origins = source_of_kind(description.kind).stamp_origins(description, changed_groups or {})
        write_shard_stamps(files.stamps, files.manifest, shards, origins, listing.samples)


def listed(
    description: SourceDescription,
    source_dir: str,
    labels: Labels,
    progress: dict[str, Any],
    wanted: ClassList | None,
    options: ListingOptions,
) -> Listing:
    """The split's listing; ImageFolder's listing arguments, where given, to the kind's
    ``list_with_options``, which every kind but a folder's refuses."""
    kind = source_of_kind(description.kind)
    if options.is_default:
        return kind.list(description, source_dir, labels, progress, wanted)
    return kind.list_with_options(description, source_dir, labels, progress, wanted, options)


def train_devkit_classes(listing: Listing, layout: str, labels: Labels) -> list[str] | None:
    """The classes the split's labelling expects a full source to hold (ILSVRC2012's class tars
    with a devkit; None: no such check); the file they were read from, as parsed, joins the
    listing's inputs."""
    found = classes_expected(layout, labels)
    if found is None:
        return None
    expected, read = found
    listing.inputs += read
    return expected


def count_check(
    settings: CountSettings,
    files: CountFiles,
    progress: dict[str, Any] | None = None,
    changed_groups: dict[str, str] | None = None,
    recipe: dict[str, Any] | None = None,
) -> CountsReport:
    """List the split, check its counts against ``settings``, write ``files``; ``changed_groups``:
    the made_from file's (work/shard_stamps.py); ``recipe``: its record of the inputs, which those the
    listing read must match (run/read_once.py; None: not checked)."""
    progress = progress or {}
    source = ClassSource.from_param(settings.class_list)
    description = read_source_description(files.source)
    log.info("listing %s (%s, layout %s)", description.source, description.kind, description.layout)
    wanted = class_list_of(source, files.shared_manifest)
    labels = labels_read(description.layout, settings.labelling, description.labelling)  # with extract's copies
    options = ListingOptions.from_param(settings.listing)
    if recipe is not None:
        check_settings_read(recipe, source, options)
    listing = listed(description, files.source, labels, progress, wanted, options)
    expected_wnids = train_devkit_classes(listing, description.layout, labels)
    if recipe is not None:
        check_files_read(recipe, listing.inputs)
    listing.ignored = sorted([*listing.ignored, *description.set_aside])
    held = list(listing.classes)
    with_images = classes_with_images(listing)  # what expected_classes counts: labels can name empty classes
    log.info("%d images in %d classes; %d files ignored", len(listing.samples), len(held), len(listing.ignored))
    unlabelled = lists_no_labels(listing)  # no class of its own to miss from the list
    if wanted is not None and not unlabelled and (error := missing_from_source(wanted, held, description.source)):
        raise error
    classes = wanted or ClassList(held, source.words(), explicit=False)
    listing = onto_class_list(listing, classes)
    report = counts_report(description, listing, classes, settings)
    if not listing.samples:
        raise CountMismatchError(no_images_message(description, listing, classes))
    problems = mismatches(listing, with_images, classes, settings)
    problems += train_devkit_problems(held, classes, wanted is None, expected_wnids)
    if problems:
        raise CountMismatchError(
            f"{description.source}: " + "; ".join(problems) + ". Check that the source is complete "
            "(an interrupted download or copy?) or correct splits.<name>.expected_* in the config."
        )
    if shards_problem := too_many_shards(settings.split, settings.shards, len(listing.samples)):
        raise CountMismatchError(f"{description.source}: {shards_problem}.")
    write_listing(files, settings.shards, description, listing, changed_groups)
    hold_point("count_check")  # the manifest is in place, the counts report not yet
    write_counts(files.counts, report)
    return report


def main(smk: Any, stream: TextIO) -> None:
    files = CountFiles(
        smk.input.source,
        smk.output.manifest,
        smk.output.counts,
        stamps=smk.output.stamps,
        shared_manifest=smk.input.shared_classes[0] if smk.input.shared_classes else None,
    )
    made_from = read_json(smk.input.made_from[0])
    settings = CountSettings.from_params(smk.params)
    count_check(settings, files, progress_kwargs(stream), made_from.get(CHANGED_GROUPS, {}), made_from.get("recipe"))


#: What the rule's script (scripts/count_check.py) calls with ``snakemake``: ``main`` with the rule's log set up.
run_in_rule = partial(run_rule, main)
