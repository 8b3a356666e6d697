"""The config's checks as functions (src/imagefolder_lmdb/config/check.py and its helpers): every
problem of a config in one error, one line each, in the order the keys are written; the defaults
filled in as Snakemake's validate fills them. The same through the snakemake CLI:
tests/workflow/test_config_errors.py."""

from __future__ import annotations

import copy
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from imagefolder_lmdb.config.check import CheckedConfig, check_config
from imagefolder_lmdb.config.problems import ConfigError, Problem
from imagefolder_lmdb.config.schema import describe, load_schema
from imagefolder_lmdb.config.shards import SHARDS_ALWAYS_ALLOWED
from support import REPO

SCHEMA_PATH = REPO / "config" / "schema.yaml"
SCHEMA = load_schema(str(SCHEMA_PATH))


def problems_of(config: dict[str, Any], files: list[str] | None = None) -> list[str]:
    """The lines of the ConfigError ``config`` raises (the test fails when it raises none)."""
    with pytest.raises(ConfigError) as raised:
        check_config(config, copy.deepcopy(SCHEMA), files or [])
    assert str(raised.value).split("\n") == [problem.line for problem in raised.value.problems]
    return str(raised.value).split("\n")


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder source (two class folders), the current folder being its parent's."""
    (tmp_path / "train" / "a").mkdir(parents=True)
    (tmp_path / "train" / "b").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path / "train"


def test_defaults_are_the_ones_snakemakes_validate_fills(folder: Path) -> None:
    from snakemake.utils import validate

    config = {"splits": {"train": {"source": str(folder)}, "val": {"source": str(folder), "shards": 2}}}
    theirs = copy.deepcopy(config)
    validate(theirs, str(SCHEMA_PATH))
    check_config(config, copy.deepcopy(SCHEMA))
    assert config == theirs
    assert config["encode"]["quality"] == 95 and config["splits"]["val"]["shards"] == 2


def test_a_valid_config_gives_its_plan(folder: Path) -> None:
    checked = check_config({"splits": {"train": {"source": "train", "shards": 3}, "val": {"source": "train"}}}, SCHEMA)
    assert isinstance(checked, CheckedConfig) and checked.classes.sharing == ("train", "val")


def test_unknown_keys_get_the_key_they_are_a_typo_of(folder: Path) -> None:
    config = {"reslts": "out", "splits": {"train": {"source": "train", "shard": 4}}, "encode": {"qualty": 90}}
    assert problems_of(config) == [
        "config key reslts: unknown key (value 'out'); did you mean results?",
        "config key splits.train.shard: unknown key (value 4); did you mean shards?",
        "config key encode.qualty: unknown key (value 90); did you mean quality?",
    ]


def test_a_key_far_from_every_known_one_lists_the_known_ones(folder: Path) -> None:
    assert problems_of({"splits": {"train": {"source": "train"}}, "verify": {"zzz": 1}}) == [
        "config key verify.zzz: unknown key (value 1); the keys of verify are sample, all, seed."
    ]


def test_keys_in_the_wrong_section_say_where_they_belong(folder: Path) -> None:
    config = {
        "shards": 4,
        "splits": {"train": {"source": "train", "classes": ["a"]}},
        "encode": {"sample": 3},
        "shard": 2,
    }
    assert problems_of(config) == [
        "config key shards: shards is a key of each split, not a top-level key: move it into a split, "
        "e.g. splits.<name>.shards.",
        "config key splits.train.classes: classes is a top-level key (shared by every split), not a key of one "
        "split: move it to the top level of the config, next to splits:",
        "config key encode.sample: sample is a key of verify, not a key of encode: move it under verify:",
        "config key shard: unknown key (value 2); did you mean shards, a key of a split?",
    ]


def test_wrong_values_name_the_value_and_what_to_set(folder: Path) -> None:
    config = {
        "results": "",
        "splits": {"train": {"source": "train", "expected_images": "many", "shards": 0, "extract": "yes"}},
        "encode": {"quality": 101, "reencode": "sometimes"},
        "verify": {"seed": 1.5},
    }
    assert problems_of(config) == [
        "config key results: '' is empty; set a non-empty string.",
        "config key splits.train.expected_images: 'many' is the wrong type; set an integer of at least 1, or null.",
        "config key splits.train.shards: 0 is below the minimum, 1; set an integer from 1 to 100000.",
        "config key splits.train.extract: 'yes' is the wrong type; set true or false.",
        "config key encode.quality: 101 is above the maximum, 100; set an integer from 1 to 100.",
        "config key encode.reencode: 'sometimes' is not a choice; set one of auto, always, never.",
        "config key verify.seed: 1.5 is the wrong type; set an integer.",
    ]


def test_splits_missing_misshapen_or_misnamed() -> None:
    no_splits = (
        "config key splits: no splits configured; run with a config file, e.g. snakemake --cores 2 "
        "--configfile config/demo.yaml."
    )
    assert problems_of({}) == [no_splits]
    assert problems_of({"splits": {}}) == [no_splits]
    assert problems_of({"splits": {"train": "/data/train", "my val": {"source": "/data/val"}, "test": {}}}) == [
        "config key splits.train: '/data/train' is a path, not a split; write it as splits.train.source.",
        "config key splits.my val: not a split name (letters, digits, _ and -, starting with a letter or digit); "
        "rename the split.",
        "config key splits.test.source: missing; set a folder or an archive, or for layouts webdataset and parquet "
        "the shard files (a list, a glob or a brace pattern).",
    ]


def test_missing_paths_are_all_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("")
    config = {
        "splits": {
            "train": {"source": "data/train"},
            "val": {"source": "data/val.tar", "layout": "ilsvrc-val", "devkit": "devkit.tar.gz"},
            "extra": {"source": "notes.txt"},
            "hub": {"source": "shards/*.parquet"},
            "list": {"source": ["a.tar", "b.tar"]},
        }
    }
    no_data = " The first folder of it that does not exist: 'data'."
    assert problems_of(config) == [
        f"config key splits.train.source: 'data/train' does not exist (relative paths are taken from {tmp_path})."
        + no_data,
        f"config key splits.val.source: 'data/val.tar' does not exist (relative paths are taken from {tmp_path})."
        + no_data,
        "config key splits.val.devkit: 'devkit.tar.gz' is not a file.",
        "config key splits.extra.source: 'notes.txt' is a file but not an archive; expected a folder or one of "
        ".tar, .tar.gz, .tgz, .zip.",
        f"config key splits.hub.source: 'shards/*.parquet' does not exist (relative paths are taken from {tmp_path})."
        " Shards (a glob, a brace pattern, a list, a .parquet file) are read with layout: webdataset or layout: "
        "parquet.",
        "config key splits.list.source: a list of files is a source of shards; set layout: webdataset or layout: "
        "parquet, or give one folder or archive.",
    ]


def test_a_typo_in_a_path_is_answered_with_the_name_beside_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "imagenet" / "train").mkdir(parents=True)
    (tmp_path / "imagenet" / "val").mkdir()
    config = {"splits": {"train": {"source": "imagenet/trian"}, "val": {"source": f"{tmp_path}/imagenet/val/"}}}
    config["splits"]["test"] = {"source": "/no/such/mount/test"}
    assert problems_of(config) == [
        "config key splits.train.source: 'imagenet/trian' does not exist (relative paths are taken from "
        f"{tmp_path}). Did you mean 'imagenet/train'?",
        "config key splits.test.source: '/no/such/mount/test' does not exist. The first folder of it that does "
        "not exist: '/no'.",
    ]


def test_shard_layouts_name_the_missing_shards(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hub").mkdir()
    (tmp_path / "hub" / "train-2.tar").write_bytes(b"")
    (tmp_path / "hub" / "train-01.tar").write_bytes(b"")
    config = {"splits": {"train": {"source": "hub/train-{0..3}.tar", "layout": "webdataset", "root": "x"}}}
    config["splits"]["val"] = {"source": "hub/train-1.tar", "layout": "webdataset"}
    config["splits"]["test"] = {"source": "hub/test/*.tar", "layout": "webdataset"}
    assert problems_of(config) == [
        "config key splits.train.source: 3 of the 4 shards do not exist, from 'hub/train-0.tar' to "
        f"'hub/train-3.tar' (relative paths are taken from {tmp_path}).",
        "config key splits.train.root: layout webdataset reads its shard files whole; remove root (source names "
        "the shards).",
        "config key splits.val.source: shard 'hub/train-1.tar' does not exist (relative paths are taken from "
        f"{tmp_path}). Did you mean 'hub/train-01.tar'?",
        f"config key splits.test.source: no file matches 'hub/test/*.tar' (relative paths are taken from {tmp_path})."
        " The first folder of it that does not exist: 'hub/test'.",
    ]


def test_a_layouts_required_key_missing(folder: Path) -> None:
    assert problems_of({"splits": {"val": {"source": "train", "layout": "ilsvrc-val"}}}) == [
        "config key splits.val.devkit: layout ilsvrc-val needs the labels: set devkit "
        "(ILSVRC2012_devkit_t12.tar.gz) or val_labels (LOC_val_solution.csv)."
    ]


def test_settings_that_contradict_each_other(folder: Path) -> None:
    config = {
        "splits": {"train": {"source": "train", "root": "../up", "shards": 20, "expected_images": 12}},
        "encode": {"reencode": "never", "max_side": 512, "short_side": 256},
    }
    assert problems_of(config) == [
        "config key splits.train.root: '../up' must not hold '..': a folder inside the source (e.g. "
        "ILSVRC/Data/CLS-LOC/train).",
        "config key splits.train.shards: 20 is more than expected_images (12): a shard holds at least one image; "
        "set shards: 12 or fewer.",
        "config keys encode.reencode and encode.max_side: resizing re-encodes images, which reencode: never "
        "forbids. Set max_side: null or reencode: auto.",
        "config keys encode.reencode and encode.short_side: resizing re-encodes images, which reencode: never "
        "forbids. Set short_side: null or reencode: auto.",
    ]


def test_as_many_shards_as_the_default_are_never_refused(folder: Path) -> None:
    assert SCHEMA["$defs"]["split"]["properties"]["shards"]["default"] == SHARDS_ALWAYS_ALLOWED
    for shards in ({}, {"shards": SHARDS_ALWAYS_ALLOWED}):
        check_config({"splits": {"train": {"source": "train", "expected_images": 3, **shards}}}, copy.deepcopy(SCHEMA))
    problems_of({"splits": {"train": {"source": "train", "expected_images": 3, "shards": SHARDS_ALWAYS_ALLOWED + 1}}})


def test_a_key_the_schema_refused_is_not_checked_again(folder: Path) -> None:
    config = {
        "splits": {"train": {"source": 5, "layout": "imagefolder"}, "val": {"source": "nowhere"}},
        "encode": {"reencode": "never", "max_side": "big"},
    }
    lines = problems_of(config)
    assert len(lines) == 3 and lines[0].startswith("config key splits.train.source: 5 is not valid; set a folder")
    assert lines[1].startswith("config key splits.val.source: 'nowhere' does not exist")
    assert lines[2] == "config key encode.max_side: 'big' is the wrong type; set an integer of at least 1, or null."


@pytest.mark.parametrize("key", ["results", "work"])
def test_outputs_inside_a_folder_source_are_refused(folder: Path, key: str) -> None:
    config = {key: "train/out", "splits": {"train": {"source": "train"}}}
    assert problems_of(config) == [
        f"config key {key}: 'train/out' ({folder}/out) lies inside splits.train.source 'train' ({folder}): a later "
        f"run would read the outputs as images of the source; set {key} to a folder outside it."
    ]


def test_outputs_reached_through_a_link_are_refused_too(folder: Path) -> None:
    os.symlink(folder, folder.parent / "link")
    lines = problems_of({"results": "link", "splits": {"train": {"source": str(folder)}}})
    assert lines == [
        f"config key results: 'link' ({folder}) lies inside splits.train.source {str(folder)!r}: a later run would "
        "read the outputs as images of the source; set results to a folder outside it."
    ]
    check_config({"results": "elsewhere", "splits": {"train": {"source": "link"}}}, copy.deepcopy(SCHEMA))


def test_duplicate_keys_name_the_key_and_both_lines(folder: Path) -> None:
    config_file = folder.parent / "config.yaml"
    config_file.write_text(
        "splits:\n"
        "  train:\n"
        "    source: train\n"
        "    shards: 2\n"
        "    shards: 3\n"
        "  train:\n"
        "    source: train\n"
        "defaults: &defaults {quality: 90}\n"
        "encode:\n"
        "  <<: *defaults\n"
        "  quality: 80\n"
    )
    config = {"splits": {"train": {"source": "train"}}}
    assert problems_of(config, [str(config_file)]) == [
        f"config file {config_file}: key splits.train.shards is given twice, at lines 4 and 5 (YAML keeps only "
        "the second, dropping the first in silence); remove or rename one.",
        f"config file {config_file}: key splits.train is given twice, at lines 2 and 6 (YAML keeps only the "
        "second, dropping the first in silence); remove or rename one.",
    ]


def test_every_kind_of_problem_in_one_error(folder: Path) -> None:
    config = {
        "splits": {"train": {"source": "train", "shard": 4}, "val": {"source": "val"}},
        "encode": {"quality": "high"},
        "classes": ["a", "a"],
    }
    assert problems_of(config) == [
        "config key splits.train.shard: unknown key (value 4); did you mean shards?",
        f"config key splits.val.source: 'val' does not exist (relative paths are taken from {folder.parent}).",
        "config key encode.quality: 'high' is the wrong type; set an integer from 1 to 100.",
        "config key classes: listed more than once: a.",
    ]


def test_class_list_problems(folder: Path) -> None:
    split = {"train": {"source": "train"}}
    assert problems_of({"splits": split, "classes": []}) == ["config key classes: the class list is empty."]
    lines = problems_of({"splits": split, "classes": "missing.txt"})
    assert lines[0].startswith("config key classes: cannot read 'missing.txt' ")


def test_describe_says_a_schema_in_words() -> None:
    assert describe({"type": "integer", "minimum": 1, "maximum": 100}) == "an integer from 1 to 100"
    assert describe({"type": ["integer", "null"], "minimum": 1}) == "an integer of at least 1, or null"
    assert describe({"enum": ["decode", "header"]}) == "one of decode, header"
    assert describe({"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}) == (
        "a string or a list of strings"
    )


def raise_here(error: ConfigError) -> None:
    raise error


def test_the_error_shows_snakemake_its_caller_and_no_traceback() -> None:
    from snakemake.exceptions import format_exception_to_string

    try:
        raise_here(ConfigError([Problem("config key a", "one"), Problem("config key b", "two?")]))
    except ConfigError as exc:
        error = exc
        assert sys.exc_info()[2] is not None, "Python itself keeps the traceback"
    assert error.__traceback__ is None
    assert error.snakefile == __file__  # the innermost frame outside the package: the caller
    assert format_exception_to_string(error, {}) == (
        f'ConfigError in file "{__file__}", line {error.lineno}:\nconfig key a: one.\nconfig key b: two?'
    )


def test_a_lint_takes_missing_paths_only_as_not_made_yet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    config = {
        "splits": {
            "train": {"source": "data/train", "shards": 0},
            "val": {"source": "data/val.tar", "layout": "ilsvrc-val", "devkit": "devkit.tar.gz"},
            "hub": {"source": "hub/train-{0..3}.tar", "layout": "webdataset"},
        }
    }
    with pytest.raises(ConfigError) as raised:
        check_config(config, copy.deepcopy(SCHEMA), [], paths_may_be_missing=True)
    assert (
        str(raised.value)
        == "config key splits.train.shards: 0 is below the minimum, 1; set an integer from 1 to 100000."
    )
    del config["splits"]["train"]["shards"]
    check_config(config, copy.deepcopy(SCHEMA), [], paths_may_be_missing=True)
