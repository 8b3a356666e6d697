"""What a new user's first day with a labelled dataset found in the words (issue 59, tried by hand):
the labels' origin of Hugging Face's metadata files names the columns used, a column guessed in a
did-you-mean is quoted as it is, a metadata.json holding JSON Lines is told to be renamed, the
plan's note counts one core as one."""

from __future__ import annotations

from pathlib import Path

from imagefolder_lmdb.board.label_origin import origin_lines
from imagefolder_lmdb.config.problems import key_problem
from imagefolder_lmdb.config.settings import Setting, command_line_text, in_command_line_words
from imagefolder_lmdb.config.shards import choose_shards
from imagefolder_lmdb.sources.label_files.metadata import json_array_refusal


def test_metadata_labels_name_the_label_column_and_fields_used() -> None:
    recipe = {"labels": {"metadata": True}, "label_columns": {"label_column": "tags"}}
    document = {"made_from": {"recipe": recipe}, "fields": [{"name": "aesthetic", "type": "float"}]}
    assert origin_lines(document) == [
        "  labels from: Hugging Face's metadata files in the source (columns: file file_name, label tags, "
        "fields aesthetic)"
    ]


def test_a_column_guessed_is_quoted_as_it_is_not_made_a_key() -> None:
    setting = Setting(("splits", "*", "label_column"), "labl", "--label-column labl")
    problem = key_problem(("splits", "train", "label_column"), "no column 'labl' (did you mean 'label'?)")
    assert command_line_text(problem, setting) == "no column 'labl' (did you mean 'label'?)."


def test_unlabelled_is_named_by_its_own_flag() -> None:
    text = "for images without labels, set splits.<name>.labels: unlabelled"
    assert in_command_line_words(text) == "for images without labels, give --unlabelled"


def test_a_metadata_json_of_json_lines_is_told_to_be_renamed(tmp_path: Path) -> None:
    lines = tmp_path / "metadata.json"
    lines.write_text('{"file_name": "a.jpg", "label": "cat"}\n{"file_name": "b.jpg", "label": "dog"}\n')
    assert "rename it to" in json_array_refusal(str(lines)) and "metadata.jsonl" in json_array_refusal(str(lines))
    array = tmp_path / "array" / "metadata.json"
    array.parent.mkdir()
    array.write_text('[{"file_name": "a.jpg", "label": "cat"}]')
    assert "json.load" in json_array_refusal(str(array))


def test_one_core_is_one_core(tmp_path: Path) -> None:
    (tmp_path / "train" / "a").mkdir(parents=True)
    (tmp_path / "train" / "a" / "0.jpg").write_bytes(b"x")
    notes = choose_shards({"splits": {"train": {"source": str(tmp_path / "train")}}}, "1")
    assert notes and notes[0].endswith("on 1 core (--shards N to choose)"), notes
