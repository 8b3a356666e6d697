"""Each refusal of a labelled dataset's first day says the fix (issue 59, point 3), through the real
command: ids and files whose names differ unseen (the extension, the Unicode form, no image
extension), a flat folder without labels, an empty class folder, ``metadata.json``, a label file's
setting named as the user gave it (a flag or a config key) once with its splits, a moved label file
in words, and an edited label file held against the source as it is now. Each message has its row
in docs/troubleshooting.md."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
import yaml

from imagefolder_lmdb.sources.label_files.naming_hints import naming_hints
from support import BIN
from support.archives import make_tar
from support.label_trees import write_files, write_images

TROUBLESHOOTING = Path(__file__).resolve().parents[2] / "docs" / "troubleshooting.md"


def imagefolder_lmdb(*arguments: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The installed command, run from ``cwd`` as a user would."""
    command = [str(BIN / "imagefolder-lmdb"), *map(str, arguments), "--cores", "1"]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, check=False, cwd=cwd)


def refusal(*arguments: str | Path, cwd: Path) -> str:
    """The last line of a command that must fail, with no traceback and no Python dict in it."""
    done = imagefolder_lmdb(*arguments, cwd=cwd)
    assert done.returncode != 0, done.stdout[-2000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    last = done.stderr.strip().splitlines()[-1]
    assert "{'" not in last, last
    return last


def labelled(root: Path, images: list[str], csv: str) -> None:
    """``train/`` with ``images`` and ``train.csv`` beside it."""
    write_images(root / "train", images)
    write_files(root, {"train.csv": csv})


def test_ids_in_another_extension_than_the_files_say_both_and_the_fix(tmp_path: Path) -> None:
    labelled(tmp_path, ["x.jpg", "y.jpg"], "id,label\nx.jpeg,cat\ny.jpeg,dog\n")
    last = refusal("convert", "train", "out", "--labels", "train.csv", cwd=tmp_path)
    assert "ids end in .jpeg, the files in .jpg" in last, last
    assert "without its extension ('x' names the one image of that stem)" in last, last


def test_the_hints_name_a_case_of_extension_and_nothing_where_the_names_are_unrelated() -> None:
    assert "The ids end in .JPG, the files in .jpg ('a/x.JPG' is a/x.jpg on disk)" in naming_hints(
        ["a/x.JPG"], ["a/x.jpg"], []
    )
    assert naming_hints(["q.jpg", "r"], ["x.jpg", "caf\u00e9.jpg"], ["notes.txt"]) == ""


def test_rows_naming_files_without_an_image_extension_say_so(tmp_path: Path) -> None:
    labelled(tmp_path, ["0001", "0002"], "id,label\n0001,cat\n0002,dog\n")
    last = refusal("convert", "train", "out", "--labels", "train.csv", cwd=tmp_path)
    assert "2 rows name files that are no images, without an image extension ('0001', '0002')" in last, last
    assert "give each file its image's extension" in last, last


def test_a_name_in_nfd_in_the_label_file_and_nfc_on_disk_is_named_as_such(tmp_path: Path) -> None:
    nfc = unicodedata.normalize("NFC", "café.jpg")
    labelled(tmp_path, [nfc, "b.jpg"], f"id,label\n{unicodedata.normalize('NFD', nfc)},cat\nb.jpg,dog\n")
    last = refusal("convert", "train", "out", "--labels", "train.csv", cwd=tmp_path)
    assert "in the label file is written in Unicode's NFD, the file" in last and "in NFC" in last, last


def test_two_files_one_name_in_two_unicode_forms_are_named_as_such(tmp_path: Path) -> None:
    nfc = unicodedata.normalize("NFC", "café.jpg")
    labelled(tmp_path, [nfc, unicodedata.normalize("NFD", nfc)], f"id,label\n{nfc},cat\n")
    last = refusal("convert", "train", "out", "--labels", "train.csv", cwd=tmp_path)
    assert "are one name in two Unicode forms, two files on disk" in last, last


def test_a_flat_folder_without_labels_is_told_of_labels_not_ilsvrc(tmp_path: Path) -> None:
    write_images(tmp_path / "photos", ["a.jpg", "b.jpg"])
    last = refusal("convert", "photos", "out", cwd=tmp_path)
    assert "give --labels FILE" in last and "ilsvrc" not in last.lower(), last


def test_a_flat_folder_of_ilsvrc_val_names_is_told_its_layout(tmp_path: Path) -> None:
    write_images(tmp_path / "val", [f"ILSVRC2012_val_0000000{n}.JPEG" for n in (1, 2)])
    last = refusal("convert", "val", "out", "--split", "val", cwd=tmp_path)
    assert "give --layout ilsvrc-val" in last, last


def test_an_empty_class_folder_names_the_flag_on_the_command_line_and_the_key_in_a_config(tmp_path: Path) -> None:
    write_images(tmp_path / "data", ["cat/a.jpg"])
    (tmp_path / "data" / "dog").mkdir()
    last = refusal("convert", "data", "out", "--split", "train", cwd=tmp_path)
    assert "dog" in last and last.endswith("give --allow-empty"), last
    config = {"results": "res", "splits": {"train": {"source": "data"}}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    done = imagefolder_lmdb("convert", "--configfile", "config.yaml", cwd=tmp_path)
    assert done.returncode != 0 and "set splits.<name>.allow_empty: true" in done.stderr, done.stderr[-3000:]


def test_metadata_json_is_named_with_the_line_that_converts_it(tmp_path: Path) -> None:
    write_images(tmp_path / "photos", ["a.jpg", "b.jpg"])
    rows = [{"file_name": "a.jpg", "label": "cat"}, {"file_name": "b.jpg", "label": "dog"}]
    write_files(tmp_path / "photos", {"metadata.json": json.dumps(rows)})
    last = refusal("convert", "photos", "out", "--labels", "metadata", cwd=tmp_path)
    assert "metadata.json' is not read" in last and ".jsonl (one JSON object a line), .csv or .parquet" in last
    line = re.search(r'python -c "([^"]+)"', last)
    assert line is not None, last
    subprocess.run([sys.executable, "-c", line.group(1)], check=True, cwd=tmp_path)
    written = (tmp_path / "photos" / "metadata.jsonl").read_text().splitlines()
    assert [json.loads(text) for text in written] == rows
    assert "metadata.json' is not read" in refusal(
        "convert", "photos", "out", "--labels", "photos/metadata.json", cwd=tmp_path
    )


def test_a_column_problem_names_the_flag_once_with_its_splits_and_the_key_in_a_config(tmp_path: Path) -> None:
    write_images(tmp_path / "data" / "train", ["a.jpg", "b.jpg"])
    write_images(tmp_path / "data" / "val", ["c.jpg"])
    write_files(tmp_path, {"train.csv": "id,label\na.jpg,cat\nb.jpg,dog\n"})
    done = imagefolder_lmdb("convert", "data", "out", "--labels", "train.csv", "--label-column", "tag", cwd=tmp_path)
    problems = [line for line in done.stderr.splitlines() if "no column 'tag'" in line]
    assert len(problems) == 1, done.stderr
    assert "(splits train, val)" in problems[0] and "give --label-column the column" in problems[0], problems
    assert "label_column" not in problems[0], problems
    config = {"splits": {"train": {"source": "data/train", "labels": "train.csv", "label_column": "tag"}}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    last = refusal("convert", "--configfile", "config.yaml", cwd=tmp_path)
    assert "config key splits.train.labels" in last and "set label_column to the column" in last, last


@pytest.fixture
def converted(tmp_path: Path) -> Path:
    """``train/`` of a.jpg, b.jpg labelled by ``train.csv``, converted into ``out``."""
    labelled(tmp_path, ["a.jpg", "b.jpg"], "id,label\na.jpg,cat\nb.jpg,dog\n")
    done = imagefolder_lmdb("convert", "train", "out", "--labels", "train.csv", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    return tmp_path


def test_a_moved_label_file_is_said_in_words(converted: Path) -> None:
    (converted / "labels").mkdir()
    # another content (the rows in another order): the same content elsewhere is up to date (issue 59, point 5)
    (converted / "labels" / "train.csv").write_text("id,label\nb.jpg,dog\na.jpg,cat\n")
    last = refusal("convert", "train", "out", "--labels", "labels/train.csv", cwd=converted)
    assert f"with the label file {converted / 'train.csv'}, not {converted / 'labels' / 'train.csv'}" in last, last


def test_an_edited_label_file_is_held_against_the_source_as_it_is_now(converted: Path) -> None:
    """A folder's label file corrected and an image added with its row: the split's next revision (issue
    58), held against the folder as it is now (no "rows name no image")."""
    write_images(converted / "train", ["c.jpg"])
    (converted / "train.csv").write_text("id,label\na.jpg,dog\nb.jpg,dog\nc.jpg,cat\n")
    done = imagefolder_lmdb("convert", "train", "out", "--labels", "train.csv", cwd=converted)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "train: revision 2: 1 added, 1 relabelled, 0 removed" in done.stdout + done.stderr


def test_an_edited_label_file_of_an_archive_names_the_first_label_changed(tmp_path: Path) -> None:
    """An archive's label file edited: refused without --overwrite, naming the first image whose label changed."""
    labelled(tmp_path, ["a.jpg", "b.jpg"], "id,label\na.jpg,cat\nb.jpg,dog\n")
    make_tar(tmp_path / "train", tmp_path / "train.tar")
    arguments = ("convert", "train.tar", "out", "--split", "train", "--root", "train", "--labels", "train.csv")
    assert imagefolder_lmdb(*arguments, cwd=tmp_path).returncode == 0
    (tmp_path / "train.csv").write_text("id,label\na.jpg,dog\nb.jpg,dog\n")
    last = refusal(*arguments, cwd=tmp_path)
    assert "a.jpg was labelled 'cat', now 'dog'" in last and "Give --overwrite to replace it" in last, last


#: A fragment of each message above, as its row in docs/troubleshooting.md quotes it.
DOCUMENTED = [
    "ids end in .jpeg, the files in .jpg",
    "rows name files that are no images, without an image extension",
    "is written in Unicode's NFD, the file",
    "are one name in two Unicode forms, two files on disk",
    "Its images lie loose: ImageFolder needs one subfolder per class",
    "these are ILSVRC2012 val's",
    "give --allow-empty",
    "metadata.json' is not read",
    "(splits train, val)",
    "with the label file",
    "changed and no longer fits the",
]


@pytest.mark.parametrize("fragment", DOCUMENTED)
def test_each_message_has_its_row_in_the_troubleshooting_table(fragment: str) -> None:
    rows = [line for line in TROUBLESHOOTING.read_text().splitlines() if line.startswith("| ")]
    assert any(fragment in row for row in rows), (
        f"{fragment!r}: no row in {TROUBLESHOOTING.name} ({shlex.quote(fragment)})"
    )
