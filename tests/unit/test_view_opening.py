"""Opening a view (issue 61, its opening time): the view lists ImageFolder's ``samples`` once, its own; the
datasets of its files make theirs on demand (a file's list of a million pairs is most of what opening it
costs), and give the same pairs when asked."""

from __future__ import annotations

from pathlib import Path

from imagefolder_lmdb.reader import LMDBDataset
from support.split_files import split_file

CLASSES = ["a", "b", "c"]


def _file(path: Path, tag: str) -> Path:
    samples = {
        f"{name}/{tag}{number}.bin": f"{name}{tag}{number}".encode() * 30 for name in CLASSES for number in (0, 1)
    }
    return split_file(path, samples, CLASSES)


def test_a_view_lists_its_samples_and_its_files_make_theirs_on_demand(tmp_path: Path, fresh_envs: None) -> None:
    first, second = _file(tmp_path / "x.lmdb", "x"), _file(tmp_path / "y.lmdb", "y")
    for view in (
        LMDBDataset([first, second], classes=["a", "c"], decode="bytes"),
        LMDBDataset(first, classes=CLASSES, decode="bytes"),  # the whole file
    ):
        assert type(view.samples) is list and view.samples == list(
            zip(view._index_arrays[2], view.targets, strict=True)
        )
        for part in view._records.parts:
            plain = LMDBDataset(part.path, decode="bytes")
            assert type(part.samples) is not list and len(part.samples) == len(plain.samples)
            assert [part.samples[i] for i in range(len(plain))] == plain.samples == part.samples[:]
    union = LMDBDataset([first, second], classes=["a", "c"], decode="bytes")
    kept = [
        (f"{name}/{tag}{number}.bin", label) for label, name in enumerate("ac") for tag in "xy" for number in (0, 1)
    ]
    assert union.samples == kept
    assert union[2][0] == b"ay0" * 30 and union[7] == (b"cy1" * 30, 1)
