"""Rule count_check: list a split's images exactly as torchvision's ImageFolder does, write the
manifest, and stop the run when the counts differ from the ones the config expects.

The scan is torchvision's own (``find_classes`` + ``make_dataset``), so classes, their order, the
file order and the accepted extensions are ImageFolder's by construction. Files it would ignore
are not dropped silently: they are counted and listed in the counts report.
"""

import logging
import os
from typing import Any, TextIO

from torchvision.datasets.folder import IMG_EXTENSIONS, find_classes, has_file_allowed_extension, make_dataset

from workflow_io import ManifestHeader, Sample, hold_point, read_json, run_rule, write_json_atomic, write_manifest

log = logging.getLogger("imagefolder_lmdb.count_check")

#: How many ignored file names the report lists in full (the count is always exact).
LISTED_IGNORED = 50


class CountMismatchError(RuntimeError):
    """The source does not hold what the config says it should."""


def scan_imagefolder(root: str) -> tuple[list[str], list[tuple[str, int]], list[str]]:
    """Classes, (path, label) samples and ignored files, in torchvision's ImageFolder order."""
    classes, class_to_idx = find_classes(root)
    ignored: list[str] = []

    def is_image(path: str) -> bool:
        accepted = has_file_allowed_extension(path, IMG_EXTENSIONS)
        if not accepted:
            ignored.append(os.path.relpath(path, root))
        return accepted

    try:
        samples = make_dataset(root, class_to_idx, is_valid_file=is_image)
    except FileNotFoundError as exc:
        raise CountMismatchError(
            f"{root}: {exc} Every class folder needs at least one image "
            f"({', '.join(IMG_EXTENSIONS)}); remove empty class folders or add their images."
        ) from exc
    ignored.extend(entry.name for entry in os.scandir(root) if not entry.is_dir())
    return classes, samples, sorted(ignored)


def relative_path(path: str, root: str) -> str:
    return os.path.relpath(path, root).replace(os.sep, "/")


def per_class_counts(classes: list[str], samples: list[tuple[str, int]]) -> dict[str, int]:
    counts = dict.fromkeys(classes, 0)
    for _, label in samples:
        counts[classes[label]] += 1
    return counts


def mismatches(images: int, classes: int, expected_images: int | None, expected_classes: int | None) -> list[str]:
    problems = []
    if expected_classes is not None and classes != expected_classes:
        problems.append(f"{classes} classes found, expected_classes is {expected_classes}")
    if expected_images is not None and images != expected_images:
        difference = expected_images - images
        what = f"{difference} missing" if difference > 0 else f"{-difference} more than expected"
        problems.append(f"{images} images found, expected_images is {expected_images} ({what})")
    return problems


def count_check(
    source_dir: str,
    manifest_path: str,
    counts_path: str,
    expected_images: int | None,
    expected_classes: int | None,
) -> dict[str, Any]:
    description = read_json(os.path.join(source_dir, "source.json"))
    root = description["root"]
    log.info("scanning %s as torchvision's ImageFolder does", root)
    classes, samples, ignored = scan_imagefolder(root)
    log.info("%d images in %d classes; %d files ignored", len(samples), len(classes), len(ignored))

    report = {
        "source": description["source"],
        "root": root,
        "images": len(samples),
        "classes": len(classes),
        "per_class": per_class_counts(classes, samples),
        "ignored_files": len(ignored),
        "ignored_examples": ignored[:LISTED_IGNORED],
        "expected_images": expected_images,
        "expected_classes": expected_classes,
    }
    problems = mismatches(len(samples), len(classes), expected_images, expected_classes)
    if problems:
        raise CountMismatchError(
            f"{description['source']}: " + "; ".join(problems) + ". Check that the source is complete "
            "(an interrupted download or copy?) or correct splits.<name>.expected_* in the config."
        )
    header = ManifestHeader(root=root, classes=classes, count=len(samples))
    write_manifest(
        manifest_path,
        header,
        (Sample(index, label, relative_path(path, root)) for index, (path, label) in enumerate(samples)),
    )
    hold_point("count_check")  # the manifest is in place, the counts report not yet
    write_json_atomic(counts_path, report)
    return report


def main(smk: Any, stream: TextIO) -> None:
    count_check(
        smk.input[0],
        smk.output.manifest,
        smk.output.counts,
        smk.params.expected_images,
        smk.params.expected_classes,
    )


if __name__ == "__main__":
    run_rule(main, snakemake)  # type: ignore[name-defined]  # noqa: F821
