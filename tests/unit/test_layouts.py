"""The one table of layouts (sources/layouts.py): each a pair, where the bytes are x how each image
gets its label; the config schema's ``layout`` enum names the same layouts."""

from __future__ import annotations

from imagefolder_lmdb.config.schema import load_schema
from imagefolder_lmdb.run.workflow_folder import workflow_folder
from imagefolder_lmdb.sources import SOURCES, kind_of_layout
from imagefolder_lmdb.sources.labelling import ClassFolders, LabelFile, StoredLabels, TableLabels
from imagefolder_lmdb.sources.layouts import DEFAULT_LAYOUT, LABEL_FILE_LAYOUT, LAYOUTS, file_set_layouts


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
        labelled_by_file = isinstance(layout.labelling, LabelFile | TableLabels)
        assert layout.labelling.strips_wrapper is not labelled_by_file or isinstance(layout.labelling, StoredLabels)
    assert isinstance(LAYOUTS[LABEL_FILE_LAYOUT].labelling, TableLabels)
    assert isinstance(LAYOUTS[DEFAULT_LAYOUT].labelling, ClassFolders) and LAYOUTS[DEFAULT_LAYOUT].listing_options
