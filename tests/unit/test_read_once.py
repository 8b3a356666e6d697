"""One read, one record (issue 57), the parts without a run: a job's digest of the bytes it parsed is
the one made_from records of the file, and the check names the input whose bytes are not those."""

from __future__ import annotations

from pathlib import Path

import pytest

from imagefolder_lmdb.classes.plan import ClassSource
from imagefolder_lmdb.run.read_once import ChangedWhileConverting, check_files_read, check_settings_read
from imagefolder_lmdb.sources.inputs_read import InputRead, read_input
from imagefolder_lmdb.sources.listing_options import ListingOptions
from imagefolder_lmdb.sources.source_record import file_digest


def test_the_digest_of_the_bytes_parsed_is_the_recorded_one(tmp_path: Path) -> None:
    path = tmp_path / "train.csv"
    path.write_bytes(b"id,label\n0001,cat\n" * 1000)
    data, read = read_input(str(path))
    assert data == path.read_bytes() and read == InputRead(str(path.resolve()), file_digest(str(path)))


def test_a_file_parsed_with_other_bytes_than_recorded_is_named(tmp_path: Path) -> None:
    recipe = {"labels": {"labels": ["/data/train.csv", "a" * 20], "devkit": ["/data/devkit.tar.gz", "b" * 20]}}
    check_files_read(recipe, [InputRead("/data/train.csv", "a" * 20), InputRead("/work/val_labels.csv", "c" * 20)])
    with pytest.raises(ChangedWhileConverting, match=r"^/data/devkit.tar.gz changed while converting"):
        check_files_read(recipe, [InputRead("/data/train.csv", "a" * 20), InputRead("/data/devkit.tar.gz", "d" * 20)])


def test_a_class_list_other_than_recorded_is_named() -> None:
    recipe = {"classes": {"names": ["ants", "bees"]}}
    listed = ClassSource("config", names=["bees", "ants"], listed_in="classes.txt")
    check_settings_read(recipe, listed, ListingOptions())  # the same names, in another order
    with pytest.raises(ChangedWhileConverting, match=r"^the class list classes.txt changed while converting"):
        check_settings_read(
            recipe, ClassSource("config", names=["ants", "wasps"], listed_in="classes.txt"), ListingOptions()
        )
    check_settings_read(recipe, ClassSource("source"), ListingOptions())  # taken from the listing: nothing to compare
