"""Settings given on the command line (src/imagefolder_lmdb/config/settings.py), the splits a SOURCE
holds (src/imagefolder_lmdb/sources/splits.py) and the shipped configs ``init-config`` prints, as
functions. The real command: tests/workflow/test_front_door.py."""

from __future__ import annotations

import copy
import tarfile
import zipfile
from pathlib import Path

import pytest
import yaml

from imagefolder_lmdb.commands.init_config import CONFIGS, config_text
from imagefolder_lmdb.config.check import check_config
from imagefolder_lmdb.config.problems import ConfigError
from imagefolder_lmdb.config.schema import load_schema
from imagefolder_lmdb.config.settings import apply, flag_setting, in_users_words, mapping_settings, parse_set
from imagefolder_lmdb.sources.splits import SplitsError, find_splits
from support import REPO

SCHEMA = load_schema(str(REPO / "config" / "schema.yaml"))
SPLIT_KEYS, TOP_KEYS = SCHEMA["$defs"]["split"]["properties"], SCHEMA["properties"]


def test_set_reads_values_as_yaml_and_a_split_key_applies_to_every_split() -> None:
    settings = [
        parse_set("encode.quality=90", SPLIT_KEYS, TOP_KEYS),
        parse_set("shards=3", SPLIT_KEYS, TOP_KEYS),
        parse_set("splits.val.expected_images=5", SPLIT_KEYS, TOP_KEYS),
        parse_set("encode.short_side=null", SPLIT_KEYS, TOP_KEYS),
        flag_setting("--classes", "b,a"),
    ]
    config = apply({"splits": {"train": {"source": "t"}, "val": {"source": "v"}}}, settings)
    assert config == {
        "splits": {"train": {"source": "t", "shards": 3}, "val": {"source": "v", "shards": 3, "expected_images": 5}},
        "encode": {"quality": 90, "short_side": None},
        "classes": ["b", "a"],
    }
    as_mapping = apply({"splits": {"train": {"source": "t"}}}, mapping_settings({"splits": {"*": {"root": "x"}}}))
    assert as_mapping["splits"]["train"]["root"] == "x"


def problem_lines(config: dict, settings: list) -> list[str]:
    with pytest.raises(ConfigError) as raised:
        check_config(config, copy.deepcopy(SCHEMA), paths_may_be_missing=True)
    return [in_users_words(problem, settings) for problem in raised.value.problems]


def test_problems_name_the_setting_as_the_user_gave_it() -> None:
    settings = [
        parse_set("encode.qualty=90", SPLIT_KEYS, TOP_KEYS),
        flag_setting("--short-side", 0),
        parse_set("shard=2", SPLIT_KEYS, TOP_KEYS),
    ]
    config = apply({"splits": {"train": {"source": "/nowhere"}}}, settings)
    assert problem_lines(config, settings) == [
        "--set encode.qualty=90: unknown key (value 90); did you mean encode.quality?",
        "--short-side 0: 0 is below the minimum, 1; set an integer of at least 1, or null.",
        "--set shard=2: unknown key (value 2); did you mean shards, a key of a split?",
    ]


def test_a_set_without_a_value_is_refused() -> None:
    from imagefolder_lmdb.config.settings import SettingError

    with pytest.raises(SettingError, match="write it as KEY=VALUE"):
        parse_set("encode.quality", SPLIT_KEYS, TOP_KEYS)


def test_split_folders_of_a_folder_a_tar_and_a_zip_are_found(tmp_path: Path) -> None:
    data = tmp_path / "data"
    for split in ("val", "train", "extra"):
        (data / split / "cat").mkdir(parents=True)
        (data / split / "cat" / "1.jpg").write_bytes(b"x")
    # a folder of images beside the split folders is a split or a class: which, the user says
    with pytest.raises(SplitsError, match=r"other folders with images: extra. .* --splits train,val,extra; .* --split"):
        find_splits(str(data))
    assert list(find_splits(str(data), ["extra"]) or {}) == ["extra"]
    (data / "extra" / "cat" / "1.jpg").rename(data / "extra" / "cat" / "notes.txt")
    (data / ".cache" / "x").mkdir(parents=True)
    (data / ".cache" / "x" / "1.jpg").write_bytes(b"x")  # hidden: nobody's split or class
    assert find_splits(str(data)) == {name: {"source": str(data / name)} for name in ("train", "val")}
    with pytest.raises(SplitsError, match="holds no folder test"):
        find_splits(str(data), ["test"])
    assert find_splits(str(data / "train")) is None, "class folders are one split"
    with tarfile.open(tmp_path / "data.tar", "w") as tar:
        tar.add(data, arcname="data")
    assert find_splits(str(tmp_path / "data.tar")) == {
        name: {"source": str(tmp_path / "data.tar"), "root": f"data/{name}"} for name in ("train", "val")
    }
    with zipfile.ZipFile(tmp_path / "data.zip", "w") as archive:
        archive.writestr("train/cat/1.jpg", b"x")
        archive.writestr("test/cat/1.jpg", b"x")
        archive.writestr("docs/README", b"x")
    assert list(find_splits(str(tmp_path / "data.zip")) or {}) == ["train", "test"]
    with zipfile.ZipFile(tmp_path / "classes.zip", "w") as archive:  # classes, one of them named test
        for name in ("cat/1.jpg", "dog/2.jpg", "test/3.jpg"):
            archive.writestr(f"pets/{name}", b"x")
    with pytest.raises(SplitsError, match=r"holds the split folder test and other folders with images: cat, dog"):
        find_splits(str(tmp_path / "classes.zip"))


def test_the_ilsvrc_downloads_are_found_with_their_labels(tmp_path: Path) -> None:
    for name in ("ILSVRC2012_img_train.tar", "ILSVRC2012_img_val.tar", "ILSVRC2012_devkit_t12.tar.gz"):
        (tmp_path / name).write_bytes(b"")
    devkit = str(tmp_path / "ILSVRC2012_devkit_t12.tar.gz")
    assert find_splits(str(tmp_path)) == {
        "train": {"source": str(tmp_path / "ILSVRC2012_img_train.tar"), "layout": "ilsvrc-train", "devkit": devkit},
        "val": {"source": str(tmp_path / "ILSVRC2012_img_val.tar"), "layout": "ilsvrc-val", "devkit": devkit},
    }
    (tmp_path / "ILSVRC2012_devkit_t12.tar.gz").unlink()
    with pytest.raises(SplitsError, match="not its labels"):
        find_splits(str(tmp_path))


@pytest.mark.parametrize("name", list(CONFIGS))
def test_each_shipped_config_init_config_prints_is_valid(name: str) -> None:
    config = yaml.safe_load(config_text(name))
    check_config(config, copy.deepcopy(SCHEMA), paths_may_be_missing=True)
    assert config_text(name).lstrip().startswith("#"), "commented"


def test_a_workflow_fix_is_said_as_a_command_line_user_gives_it() -> None:
    from imagefolder_lmdb.config.settings import in_command_line_words

    assert in_command_line_words("run it again, or set encode.on_error: skip to leave bad images out") == (
        "run it again, or give --on-error skip to leave bad images out"
    )
    assert in_command_line_words("or set splits.val.allow_skipped: 3 to accept") == (
        "or give --set splits.val.allow_skipped=3 to accept"
    )
    assert in_command_line_words("check that splits.<name>.source and layout name the images") == (
        "check that SOURCE and --layout name the images"
    )


def test_a_workflow_fix_is_given_in_convert_calls_words() -> None:
    from imagefolder_lmdb.config.settings import in_python_words

    assert in_python_words("and run the same command again, or set encode.on_error: skip to leave them out") == (
        "and call convert() again, or pass config={'encode': {'on_error': 'skip'}} to leave them out"
    )
    assert in_python_words("or set splits.val.allow_skipped: 3 to accept") == (
        "or pass config={'splits': {'val': {'allow_skipped': 3}}} to accept"
    )


def test_the_shard_count_follows_the_images_and_the_cores(tmp_path: Path) -> None:
    from imagefolder_lmdb.config.shards import choose_shards, shards_for

    assert [shards_for(images, 2) for images in (14, 240, 3_000, 12_000)] == [1, 2, 3, 4]
    assert shards_for(1_281_167, 16) == 32 and shards_for(50_000, 16) == 32 and shards_for(1_600, 16) == 16
    # without a merge, one wave of jobs: a shard per core at most
    assert [shards_for(images, 2, merge=False) for images in (14, 240, 3_000, 12_000)] == [1, 2, 2, 2]
    assert shards_for(1_281_167, 16, merge=False) == 16 and shards_for(1_600, 16, merge=False) == 16
    for name in ("a", "b"):
        (tmp_path / "train" / name).mkdir(parents=True)
        for i in range(150):
            (tmp_path / "train" / name / f"{i}.jpg").write_bytes(b"x")
    config = {"splits": {"train": {"source": str(tmp_path / "train")}, "val": {"source": "x", "shards": 5}}}
    notes = choose_shards(config, "2")
    assert config["splits"]["train"]["shards"] == 2 and config["splits"]["val"]["shards"] == 5
    assert notes == ["train: 2 shards for 300 images on 2 cores (--shards N to choose)"]  # the rule: --help
    many = {"merge": False, "splits": {"train": {"source": str(tmp_path / "train")}}}
    choose_shards(many, "8")
    assert many["splits"]["train"]["shards"] == 3  # 300 images: 1 per 100, below the 8 cores either way
