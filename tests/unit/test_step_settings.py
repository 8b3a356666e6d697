"""A split's settings reach each step in one typed shape (src/imagefolder_lmdb/config/step_settings.py):
the rule's param is plain data Snakemake can compare between runs, and the step reads the same
settings back."""

from __future__ import annotations

from typing import Any

from imagefolder_lmdb.config.step_settings import (
    CountSettings,
    ExtractSettings,
    MergeSettings,
    count_settings,
    extract_settings,
    merge_settings,
)
from imagefolder_lmdb.sources.base import Request

SPLIT: dict[str, Any] = {
    "source": "/data/train-{0000..0001}.tar",
    "layout": "webdataset",
    "extract": False,
    "md5": False,
    "root": "/inside/",
    "image_column": "img",
    "label_column": "cls",
    "expected_images": 10,
    "expected_classes": 2,
    "shards": 3,
    "devkit": None,
    "allow_skipped": 1,
}

PLAIN = (type(None), bool, int, str, list, dict)


def plain(value: Any) -> bool:
    """Only values Snakemake's params comparison takes (an object would be ignored)."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(plain(v) for v in value)
    return isinstance(value, PLAIN)


def test_each_rules_settings_are_plain_data_and_read_back_the_same() -> None:
    made = [
        extract_settings(SPLIT, wanted=["a", "b"], labels_member=None, folder_stamp="3:abc"),
        count_settings("train", SPLIT, val_labels=None, class_list={"kind": "own"}),
        merge_settings("train", SPLIT),
    ]
    for settings, kind in zip(made, (ExtractSettings, CountSettings, MergeSettings), strict=True):
        param = settings.as_param()
        assert plain(param), param
        assert kind.from_param(param) == settings
    assert made[1].shards == 3 and made[1].split == "train" and made[2].allow_skipped == 1


def test_extract_settings_ask_the_sources_for_the_split() -> None:
    settings = extract_settings(SPLIT, wanted=["a"], labels_member=None, folder_stamp=None)
    files = ["/data/train-0000.tar", "/data/train-0001.tar"]
    request = settings.request(files, {"disable": True})
    assert request == Request(
        SPLIT["source"],
        "webdataset",
        False,
        frozenset({"a"}),
        {"disable": True},
        files=files,
        options={},  # a webdataset split has no options of its kind's own
        root="inside",
    )
    parquet = ExtractSettings.from_param({**settings.as_param(), "layout": "parquet"}).request(files, {})
    assert parquet.options == {"image_column": "img", "label_column": "cls"}, "the options of the kind's own"
    listed = ExtractSettings.from_param({**settings.as_param(), "source": files, "wanted": None})
    assert listed.request(files, {}).source == files[0] and listed.request(files, {}).wanted is None
