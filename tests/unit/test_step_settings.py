"""A split's settings reach each step in one typed shape (src/imagefolder_lmdb/config/step_settings.py):
the rule's param is plain data Snakemake can compare between runs, and the step reads the same
settings back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from imagefolder_lmdb.config.step_settings import (
    CountSettings,
    EncodeShardSettings,
    ExtractSettings,
    MergeSettings,
    VerifySettings,
    WriteMetaSettings,
    count_settings,
    encode_shard_params,
    extract_settings,
    merge_settings,
    verify_params,
    write_meta_params,
)
from imagefolder_lmdb.sources.base import Request
from support.settings import encode_settings

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
    "val_labels": None,
    "labels": None,
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
        extract_settings(SPLIT, wanted=["a", "b"], folder_stamp="3:abc"),
        count_settings("train", SPLIT, class_list={"kind": "own"}),
        merge_settings("train", SPLIT),
    ]
    for settings, kind in zip(made, (ExtractSettings, CountSettings, MergeSettings), strict=True):
        param = settings.as_param()
        assert plain(param), param
        assert kind.from_param(param) == settings
        assert kind.from_params({"settings": param}) == settings  # the rule's one param, ``settings``
    assert made[1].shards == 3 and made[1].split == "train" and made[2].allow_skipped == 1


def test_count_checks_param_spreads_the_labellings_settings_where_earlier_versions_had_each_key(
    tmp_path: Path,
) -> None:
    """The split's labelling's settings travel as one mapping (CountSettings.labelling), and the
    param keeps the keys and order earlier versions gave (Snakemake compares its repr): no rerun."""
    own = {"kind": "own"}
    param = count_settings("train", SPLIT, class_list=own).as_param()
    assert list(param) == [
        "split",
        "expected_images",
        "expected_classes",
        "shards",
        "devkit",
        "val_labels",
        "class_list",
    ]
    labels = tmp_path / "labels.csv"
    labels.write_text("file_name,label\na.jpg,cat\n")
    labelled = {**SPLIT, "source": str(tmp_path), "layout": "label-file", "labels": str(labels), "extensions": [".jpg"]}
    settings = count_settings("train", labelled, class_list=own)
    assert settings.labelling == {
        "devkit": None,
        "val_labels": None,
        "labels": {"from": str(labels), "label_column": "cls"},
    }
    param = settings.as_param()
    assert list(param)[4:] == ["devkit", "val_labels", "class_list", "listing", "labels"]
    assert CountSettings.from_param(param) == settings


def test_extract_settings_ask_the_sources_for_the_split() -> None:
    settings = extract_settings(SPLIT, wanted=["a"], folder_stamp=None)
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


def test_the_rules_with_params_of_their_own_read_them_back_as_one_object() -> None:
    """encode_shard, write_meta and verify keep the params earlier versions gave them, each one a
    plain value, and their steps read them as one typed object."""
    config: dict[str, Any] = {
        # the keys given first, then the schema's defaults: the order a checked config has
        "encode": {"quality": 90, "short_side": 256, "reencode": "auto", "max_side": None, "check": "decode"},
        "verify": {"sample": 8, "all": False, "seed": 3},
    }
    config["encode"]["on_error"] = "skip"
    expected = encode_settings(quality=90, short_side=256, on_error="skip")
    shard = encode_shard_params(SPLIT, config)
    meta = write_meta_params(config)
    verify = verify_params(config)
    for params in (shard, meta, verify):
        assert all(plain(value) for value in params.values()), params
    assert EncodeShardSettings.from_params(shard) == EncodeShardSettings(3, expected)
    assert WriteMetaSettings.from_params(meta) == WriteMetaSettings(expected)
    assert VerifySettings.from_params(verify) == VerifySettings(8, False, 3)
    for settings in (EncodeShardSettings(3, expected), WriteMetaSettings(expected), VerifySettings(8, False, 3)):
        assert plain(settings.as_param()) and type(settings).from_param(settings.as_param()) == settings


def test_a_work_folder_of_an_earlier_version_keeps_its_params() -> None:
    """Snakemake reruns a job whose params' reprs changed: each rule's param values are those the
    earlier rules gave (``shards``, the config's encode section as it is, in its own key order, and
    the verify keys), so a work folder left by them runs nothing again after the upgrade."""
    encode = {"short_side": 256, "reencode": "auto", "quality": 95, "max_side": None, "check": "decode"}
    config: dict[str, Any] = {
        "encode": {**encode, "on_error": "fail"},
        "verify": {"sample": 64, "all": False, "seed": 0},
    }
    # the earlier rules: shards=split_config(wildcards)["shards"], encode=dict(config["encode"]),
    # sample/all/seed=config["verify"][...]
    earlier_shard = [repr(SPLIT["shards"]), repr(dict(config["encode"]))]
    earlier_verify = [repr(config["verify"][key]) for key in ("sample", "all", "seed")]
    assert sorted(map(repr, encode_shard_params(SPLIT, config).values())) == sorted(earlier_shard)
    assert [repr(value) for value in write_meta_params(config).values()] == [repr(dict(config["encode"]))]
    assert sorted(map(repr, verify_params(config).values())) == sorted(earlier_verify)
