# SPDX-License-Identifier: MIT
"""What a conversion produces: each split's final files (``SplitOutputs``, which ``convert()``
returns), named by work/paths.py."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from imagefolder_lmdb.work.paths import RunPaths


@dataclass(frozen=True)
class SplitOutputs:
    """The final files of one split, and what its verify report says was built."""

    dataset: Path  # {results}/{split}.lmdb
    verify_report: Path  # {results}/{split}.verify.json
    contact_sheet: Path  # {results}/{split}.contact.png

    @property
    def report(self) -> dict[str, Any]:
        """The verify report: images, classes, per-class counts, bytes stored and of the source, storage, skipped."""
        import json

        return dict(json.loads(self.verify_report.read_text()))

    @property
    def images(self) -> int:
        return int(self.report["images"])

    @property
    def classes(self) -> list[str]:
        return list(self.report["class_counts"])

    def summary(self) -> str:
        """One line: ``out/train.lmdb: 1,281,167 images, 1,000 classes, 140,123.4 MB, verified``."""
        report = self.report
        state = "verified" if report["ok"] else "verification FAILED: " + "; ".join(report["problems"])
        return (
            f"{self.dataset}: {report['images']:,} images, {len(report['class_counts']):,} classes, "
            f"{report['file_bytes'] / 1e6:,.1f} MB, {state}"
        )


def outputs_of(results: str, splits: list[str]) -> dict[str, SplitOutputs]:
    paths = RunPaths(results, "work")
    return {
        name: SplitOutputs(Path(paths.dataset(name)), Path(paths.verify_report(name)), Path(paths.contact_sheet(name)))
        for name in splits
    }
