"""Keys given twice in a config file (src/imagefolder_lmdb/config/yaml_nodes.py): YAML keeps the last and
drops the first in silence, so they are found on the file's nodes, with their lines."""

from __future__ import annotations

from pathlib import Path

from imagefolder_lmdb.config.yaml_nodes import DuplicateKey, duplicate_keys


def keys_twice(tmp_path: Path, text: str, name: str = "config.yaml") -> list[DuplicateKey]:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return duplicate_keys(str(path))


def test_a_split_written_twice(tmp_path: Path) -> None:
    text = "results: r\nsplits:\n  train:\n    source: a\n  val:\n    source: b\n  train:\n    source: c\n"
    assert keys_twice(tmp_path, text) == [DuplicateKey(str(tmp_path / "config.yaml"), ("splits", "train"), 3, 7)]


def test_keys_twice_at_any_depth_and_thrice(tmp_path: Path) -> None:
    text = "work: w\nwork: x\nencode:\n  quality: 90\n  quality: 80\n  quality: 70\nsplits: {train: {source: a}}\n"
    found = [(d.path, d.first_line, d.second_line) for d in keys_twice(tmp_path, text)]
    assert found == [(("work",), 1, 2), (("encode", "quality"), 4, 5), (("encode", "quality"), 4, 6)]


def test_quoted_and_plain_spellings_are_one_key(tmp_path: Path) -> None:
    assert [d.path for d in keys_twice(tmp_path, "splits:\n  train: {}\n  'train': {}\n")] == [("splits", "train")]


def test_merge_keys_and_aliases_are_no_duplicates(tmp_path: Path) -> None:
    text = (
        "base: &base {source: a, shards: 2}\n"
        "splits:\n"
        "  train:\n    <<: *base\n    shards: 4\n"
        "  val:\n    <<: *base\n    <<: *base\n"
        "  test: *base\n"
    )
    assert keys_twice(tmp_path, text) == []


def test_json_and_unreadable_files(tmp_path: Path) -> None:
    json_twice = keys_twice(tmp_path, '{"splits": {"train": {}, "train": {}}}', "config.json")
    assert [(d.path, d.first_line, d.second_line) for d in json_twice] == [(("splits", "train"), 1, 1)]
    assert keys_twice(tmp_path, "splits: [unclosed\n") == []  # Snakemake says what is wrong with it
    assert duplicate_keys(str(tmp_path / "absent.yaml")) == []


def test_a_file_with_a_byte_order_mark(tmp_path: Path) -> None:
    assert [d.path for d in keys_twice(tmp_path, "\ufeffwork: a\nwork: b\n")] == [("work",)]


def test_the_problem_line(tmp_path: Path) -> None:
    duplicate = DuplicateKey("config.yaml", ("splits", "train"), 3, 7)
    assert duplicate.problem.line == (
        "config file config.yaml: key splits.train is given twice, at lines 3 and 7 (YAML keeps only the second, "
        "dropping the first in silence); remove or rename one."
    )
