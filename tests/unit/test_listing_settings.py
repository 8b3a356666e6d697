"""ImageFolder's listing arguments as split settings (issue 53), checked before any job: where they
apply, the predicate's name, and that at their defaults no rule's params and no dataset's record
change (a work folder or dataset made before them reads as up to date)."""

from __future__ import annotations

import copy
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest

from imagefolder_lmdb.config.check import check_config
from imagefolder_lmdb.config.problems import ConfigError
from imagefolder_lmdb.config.schema import load_schema
from imagefolder_lmdb.config.step_settings import count_settings
from imagefolder_lmdb.sources.listing_options import ListingOptions, PredicateError, importable_name, load_predicate
from support import REPO

SCHEMA = load_schema(str(REPO / "config" / "schema.yaml"))


def checked(splits: dict[str, Any]) -> dict[str, Any]:
    config = {"splits": splits}
    check_config(config, copy.deepcopy(SCHEMA))
    return config


def problems(splits: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as raised:
        checked(splits)
    return str(raised.value)


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "train" / "a").mkdir(parents=True)
    (tmp_path / "train" / "a" / "0.jpg").write_bytes(b"")
    (tmp_path / "filters.py").write_text("def keep(path):\n    return True\n\nNOT_A_FUNCTION = 3\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "filters", raising=False)  # each test's own module
    return tmp_path / "train"


def test_at_their_defaults_the_count_params_are_what_they_were(tree: Path) -> None:
    split = checked({"train": {"source": str(tree)}})["splits"]["train"]
    param = count_settings("train", split, class_list={}).as_param()
    assert "listing" not in param
    assert ListingOptions.from_split(split).recipe() == {}
    given = {"source": str(tree), "extensions": [".jpg"], "allow_empty": True}
    changed = count_settings("train", checked({"train": given})["splits"]["train"], class_list={})
    assert changed.as_param()["listing"] == {"extensions": [".jpg"], "allow_empty": True}


def test_the_settings_are_for_a_folder_of_layout_imagefolder(tree: Path, tmp_path: Path) -> None:
    archive = tmp_path / "train.tar"
    with tarfile.open(archive, "w") as tar:
        tar.add(tree, arcname="train")
    assert "unpack an archive and point source at its folder" in problems(
        {"train": {"source": str(archive), "allow_empty": True}}
    )
    assert "set for layout ilsvrc-val" in problems(
        {"val": {"source": str(tree), "layout": "ilsvrc-val", "val_labels": str(archive), "extensions": [".jpg"]}}
    )
    both = problems({"train": {"source": str(tree), "extensions": [".jpg"], "is_valid_file": "filters:keep"}})
    assert "extensions and is_valid_file both set: give one" in both


def test_a_predicate_is_named_module_colon_function_and_must_import(tree: Path) -> None:
    checked({"train": {"source": str(tree), "is_valid_file": "filters:keep"}})
    assert "splits.train.is_valid_file" in problems({"train": {"source": str(tree), "is_valid_file": "filters.keep"}})
    assert "cannot import no_such_module" in problems(
        {"train": {"source": str(tree), "is_valid_file": "no_such_module:f"}}
    )
    assert "filters has no absent" in problems({"train": {"source": str(tree), "is_valid_file": "filters:absent"}})
    assert "not a function" in problems({"train": {"source": str(tree), "is_valid_file": "filters:NOT_A_FUNCTION"}})


def nested_predicate() -> Any:
    def keep(path: str) -> bool:
        return True

    return keep


def test_only_a_callable_importable_by_name_is_taken(tree: Path) -> None:
    import filters  # type: ignore[import-not-found]

    assert importable_name(filters.keep) == "filters:keep"
    assert load_predicate("filters:keep") is filters.keep
    for refused, words in ((lambda path: True, "lambda"), (nested_predicate(), "inside another")):
        with pytest.raises(PredicateError, match=words):
            importable_name(refused)
    main_function = type(filters.keep)(filters.keep.__code__, {"__name__": "__main__"}, "keep")
    main_function.__module__ = "__main__"
    with pytest.raises(PredicateError, match="defined in __main__"):
        importable_name(main_function)


def test_a_changed_predicate_body_changes_the_recipe(tree: Path, tmp_path: Path) -> None:
    import importlib

    options = ListingOptions(is_valid_file="filters:keep")
    before = options.recipe()["listing"]["is_valid_file"]["source_sha256"]
    (tmp_path / "filters.py").write_text("def keep(path):\n    return path.endswith('.jpg')\n")
    importlib.reload(sys.modules["filters"])
    assert options.recipe()["listing"]["is_valid_file"]["source_sha256"] != before
