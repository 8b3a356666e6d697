"""The one table of layouts (sources/layouts.py): each a pair, where the bytes are x how each image
gets its label; the config schema's ``layout`` enum names the same layouts."""

from __future__ import annotations

import json
from pathlib import Path

from imagefolder_lmdb.config.schema import load_schema
from imagefolder_lmdb.config.step_settings import ExtractSettings, extract_settings
from imagefolder_lmdb.run.workflow_folder import workflow_folder
from imagefolder_lmdb.sources import SOURCES, kind_of_layout, work_file_options
from imagefolder_lmdb.sources.labelling import ClassFolders, IlsvrcValLabels, LabelFile, StoredLabels, TableLabels
from imagefolder_lmdb.sources.layouts import DEFAULT_LAYOUT, LAYOUTS, file_set_layouts
from imagefolder_lmdb.work.files import (
    ManifestHeader,
    SourceDescription,
    read_manifest_header,
    read_source_description,
    write_manifest,
    write_source_description,
)


def test_the_schema_names_the_table_s_layouts() -> None:
    schema = load_schema(str(workflow_folder() / "config" / "schema.yaml"))
    layout = schema["$defs"]["split"]["properties"]["layout"]
    assert layout["enum"] == list(LAYOUTS) and layout["default"] == DEFAULT_LAYOUT


def test_a_set_of_source_files_is_picked_by_its_layout_and_stores_its_labels() -> None:
    for name in file_set_layouts():
        kind = kind_of_layout(name)
        assert kind is not None and kind.file_set and kind.kind == LAYOUTS[name].bytes.kind
        assert isinstance(LAYOUTS[name].labelling, StoredLabels)
    assert {kind.kind for kind in SOURCES if kind.file_set} == {LAYOUTS[name].bytes.kind for name in file_set_layouts()}


def test_a_folder_or_an_archive_is_picked_by_its_path() -> None:
    for name, layout in LAYOUTS.items():
        if not layout.bytes.file_set:
            assert kind_of_layout(name) is None and not isinstance(layout.labelling, StoredLabels)


def test_only_class_folders_are_classes_a_plan_can_read_and_only_a_label_file_keeps_paths_whole() -> None:
    assert [name for name, layout in LAYOUTS.items() if layout.labelling.classes_are_folders] == ["imagefolder"]
    assert [name for name, layout in LAYOUTS.items() if layout.labelling.class_tars] == ["ilsvrc-train"]
    for layout in LAYOUTS.values():
        labelled_by_file = isinstance(layout.labelling, LabelFile)
        assert layout.labelling.strips_wrapper is not labelled_by_file or isinstance(layout.labelling, StoredLabels)
    assert isinstance(LAYOUTS["label-file"].labelling, TableLabels)
    assert isinstance(LAYOUTS["ilsvrc-val"].labelling, IlsvrcValLabels)  # both cases of the label-file labelling
    assert isinstance(LAYOUTS[DEFAULT_LAYOUT].labelling, ClassFolders) and LAYOUTS[DEFAULT_LAYOUT].listing_options


def test_a_kinds_options_travel_as_one_mapping_and_keep_the_work_files_bytes(tmp_path: Path) -> None:
    """``options`` in memory; in source.json, the manifest's header and rule extract's param, each
    option a key of its own where image_column stood, as earlier versions wrote them (Snakemake
    reruns a job whose small input or param changed)."""
    options = work_file_options({"image_column": "img"})
    assert options == {"image_column": "img"} and work_file_options({}) == {"image_column": None}
    header = ManifestHeader("/r", ["a"], 1, ["x.parquet"], "parquet", options)
    write_manifest(str(tmp_path / "manifest.jsonl"), header, [])
    first = (tmp_path / "manifest.jsonl").read_text().splitlines()[0]
    before = '"root": "/r", "classes": ["a"], "count": 1, "containers": ["x.parquet"], "kind": "parquet"'
    assert first == "{" + before + ', "image_column": "img"}'
    assert read_manifest_header(str(tmp_path / "manifest.jsonl")) == header
    description = SourceDescription("folder", "/x", "imagefolder", root="/x", options=work_file_options({}))
    write_source_description(str(tmp_path), description)
    assert json.loads((tmp_path / "source.json").read_text())["image_column"] is None
    assert read_source_description(str(tmp_path)) == description
    split = {"source": "/s", "layout": "parquet", "extract": False, "md5": False, "root": None}
    given = {**split, "image_column": "image", "label_column": "label", "val_labels": None}
    param = extract_settings(given).as_param()
    assert list(param) == [*split, "image_column", "label_column", "wanted", "labels_member", "folder_stamp"]
    settings = ExtractSettings.from_param(param)
    assert settings.options == {"image_column": "image", "label_column": "label"}
    assert settings.request(["/s"], {}).options == {"image_column": "image", "label_column": "label"}
