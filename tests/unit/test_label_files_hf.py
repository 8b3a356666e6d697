"""``labels: metadata`` against the reference implementation: for trees built as Hugging Face's own
tests build them (packaged_modules/test_imagefolder.py and test_folder_based_builder.py among the
tests of huggingface/datasets: ``image_rgb.jpg`` beside ``subdir/``, ``train/`` and ``test/`` splits, a
zipped ``archive/``), every image's label(s) and fields equal what
``datasets.load_dataset("imagefolder", data_dir=...)`` gives (values compared, not types), at the
``datasets`` release requirements-hf.txt pins (in a venv of its own: pandas, which it brings, would
slow every Snakemake start in the project's), offline, with a cache of the test's own.

Where this project differs from ``datasets`` on purpose (the list to copy into the docs is in
src/imagefolder_lmdb/sources/label_files/metadata.py's docstring), a test below pins each:
an image without a row (``datasets``: left out), an image with two rows (``datasets``: twice), and
CSV cells typed by value_types.py's rule, not by pandas (``True`` and ``NA`` stay text; an empty
cell in a numeric column is refused, where pandas gives NaN)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from imagefolder_lmdb.sources.label_files import LabelFileError, LabelTable
from support.hf_reference import Rows, by_path, imagefolder_loader
from support.label_trees import metadata_folder, metadata_zip, write_files, write_images, zip_folder

#: What datasets' tests name their images: two beside the metadata file, one in a subfolder.
HF_IMAGES = ["image_rgb.jpg", "image_rgb2.jpg", "subdir/image_rgb3.jpg"]


@pytest.fixture(scope="module")
def load_imagefolder(
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[[Path], dict[str, list[tuple[str, dict[str, Any]]]]]:
    """``datasets.load_dataset("imagefolder", data_dir=...)``, as each split's rows by image path."""
    return imagefolder_loader(tmp_path_factory.mktemp("hf_home"))


def ours(table: LabelTable) -> Rows:
    """The table as datasets would give it: the label as written (a list for several) and the fields."""
    rows: Rows = {}
    for path, entry in table.images.items():
        labels = table.labels(path)
        rows[path] = {"label": list(labels) if isinstance(labels, tuple) else labels, **entry.fields}
    return rows


def assert_same_rows(ours_rows: Rows, theirs_in_order: list[tuple[str, dict[str, Any]]]) -> None:
    """The same images, and for each the same label(s) and fields, compared as values."""
    theirs = by_path(theirs_in_order)
    assert sorted(ours_rows) == sorted(theirs)
    for path, row in theirs.items():
        assert ours_rows[path] == row, path


def csv_of(rows: list[dict[str, Any]]) -> str:
    """A metadata.csv of ``rows`` (values without commas or quotes, as datasets' tests write them)."""
    header = ",".join(rows[0])
    return "\n".join([header, *(",".join(str(value) for value in row.values()) for row in rows)]) + "\n"


def jsonl_of(rows: list[dict[str, Any]]) -> str:

    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


CAPTIONED = [
    {"file_name": "image_rgb.jpg", "caption": "Nice image", "label": "cat"},
    {"file_name": "image_rgb2.jpg", "caption": "Nice second image", "label": "dog"},
    {"file_name": "subdir/image_rgb3.jpg", "caption": "Nice third image", "label": "cat"},
]


@pytest.mark.parametrize("writer", [csv_of, jsonl_of], ids=["csv", "jsonl"])
def test_one_split_with_metadata_at_the_root(tmp_path: Path, writer: Callable, load_imagefolder: Callable) -> None:
    write_images(tmp_path, HF_IMAGES)
    write_files(tmp_path, {f"metadata.{writer.__name__.removesuffix('_of')}": writer(CAPTIONED)})
    theirs = load_imagefolder(tmp_path)
    assert list(theirs) == ["train"]
    assert_same_rows(ours(metadata_folder(tmp_path)), theirs["train"])


@pytest.mark.parametrize("writer", [csv_of, jsonl_of], ids=["csv", "jsonl"])
def test_two_splits_each_with_its_metadata(tmp_path: Path, writer: Callable, load_imagefolder: Callable) -> None:
    suffix = writer.__name__.removesuffix("_of")
    write_images(tmp_path, ["train/image_rgb.jpg", "train/image_rgb2.jpg", "test/image_rgb3.jpg"])
    train = [
        {"file_name": "image_rgb.jpg", "caption": "Nice train image", "label": 3},
        {"file_name": "image_rgb2.jpg", "caption": "Nice second train image", "label": 0},
    ]
    test = [{"file_name": "image_rgb3.jpg", "caption": "Nice test image", "label": 2}]
    write_files(tmp_path, {f"train/metadata.{suffix}": writer(train), f"test/metadata.{suffix}": writer(test)})
    theirs = load_imagefolder(tmp_path)
    assert sorted(theirs) == ["test", "train"]
    for split in ("train", "test"):
        assert_same_rows(ours(metadata_folder(tmp_path / split)), theirs[split])


def test_several_metadata_files_in_subfolders(tmp_path: Path, load_imagefolder: Callable) -> None:
    write_images(tmp_path, [*HF_IMAGES, "subdir/deeper/image_rgb4.png"])
    write_files(
        tmp_path,
        {
            "metadata.csv": csv_of(CAPTIONED[:2]),
            "subdir/metadata.csv": csv_of(
                [
                    {"file_name": "image_rgb3.jpg", "caption": "Nice third image", "label": "bird"},
                    {"file_name": "deeper/image_rgb4.png", "caption": "Nice fourth image", "label": "dog"},
                ]
            ),
        },
    )
    theirs = load_imagefolder(tmp_path)
    assert_same_rows(ours(metadata_folder(tmp_path)), theirs["train"])


def test_a_zipped_tree(tmp_path: Path, load_imagefolder: Callable) -> None:
    archive = tmp_path / "archive"
    write_images(archive, ["image_rgb.jpg", "subdir/image_rgb2.jpg"])
    rows = [
        {"file_name": "image_rgb.jpg", "caption": "Nice image", "label": "cat"},
        {"file_name": "subdir/image_rgb2.jpg", "caption": "Nice second image", "label": "dog"},
    ]
    write_files(archive, {"metadata.jsonl": jsonl_of(rows)})
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    zip_folder(archive, data_dir / "archive.zip")
    theirs = load_imagefolder(data_dir)
    assert_same_rows(ours(metadata_zip(data_dir / "archive.zip")), theirs["train"])


def test_a_multi_label_list_column(tmp_path: Path, load_imagefolder: Callable) -> None:
    write_images(tmp_path, HF_IMAGES)
    rows = [
        {"file_name": "image_rgb.jpg", "label": ["cat", "dog"], "boxes": [0.5, 1.0]},
        {"file_name": "image_rgb2.jpg", "label": [], "boxes": []},
        {"file_name": "subdir/image_rgb3.jpg", "label": ["dog"], "boxes": [2.25]},
    ]
    write_files(tmp_path, {"metadata.jsonl": jsonl_of(rows)})
    table = metadata_folder(tmp_path)
    assert table.label_kind == "multi" and table.images["image_rgb.jpg"].target == (0, 1)
    assert_same_rows(ours(table), load_imagefolder(tmp_path)["train"])


@pytest.mark.parametrize("writer", [csv_of, jsonl_of], ids=["csv", "jsonl"])
def test_int_float_and_string_columns(tmp_path: Path, writer: Callable, load_imagefolder: Callable) -> None:
    write_images(tmp_path, HF_IMAGES)
    rows = [
        {"file_name": "image_rgb.jpg", "label": 1, "count": 3, "score": 0.5, "source": "web"},
        {"file_name": "image_rgb2.jpg", "label": 0, "count": -7, "score": 2.0, "source": "camera"},
        {"file_name": "subdir/image_rgb3.jpg", "label": 4, "count": 12, "score": 1e-3, "source": "scan"},
    ]
    write_files(tmp_path, {f"metadata.{writer.__name__.removesuffix('_of')}": writer(rows)})
    table = metadata_folder(tmp_path)
    assert table.field_types == {"count": "int", "score": "float", "source": "str"}
    assert table.label_type == "int" and table.classes == ("0", "1", "2", "3", "4")
    assert_same_rows(ours(table), load_imagefolder(tmp_path)["train"])


def test_unicode_file_names(tmp_path: Path, load_imagefolder: Callable) -> None:
    names = ["café.jpg", "日本/写真.png", "straße ü/ß.jpg"]
    write_images(tmp_path, names)
    rows = [
        {"file_name": name, "label": label, "note": note}
        for name, label, note in zip(names, ["chat", "猫", "Katze"], ["é", "ü", "日"], strict=True)
    ]
    write_files(tmp_path, {"metadata.jsonl": jsonl_of(rows)})
    assert_same_rows(ours(metadata_folder(tmp_path)), load_imagefolder(tmp_path)["train"])


def test_metadata_parquet_with_list_fields(tmp_path: Path, load_imagefolder: Callable) -> None:
    write_images(tmp_path, HF_IMAGES)
    columns = {"file_name": HF_IMAGES, "label": ["b", "a", "b"], "tags": [["x", "y"], [], ["z"]], "n": [1, 2, 3]}
    pq.write_table(pa.table(columns), tmp_path / "metadata.parquet")
    table = metadata_folder(tmp_path)
    assert table.field_types == {"tags": "list[str]", "n": "int"}
    assert_same_rows(ours(table), load_imagefolder(tmp_path)["train"])


# Where this project differs on purpose


def test_an_image_without_a_row_is_an_error_where_datasets_leaves_it_out(
    tmp_path: Path, load_imagefolder: Callable
) -> None:
    write_images(tmp_path, HF_IMAGES)
    write_files(tmp_path, {"metadata.csv": csv_of(CAPTIONED[:2])})
    assert [path for path, _ in load_imagefolder(tmp_path)["train"]] == ["image_rgb.jpg", "image_rgb2.jpg"]
    with pytest.raises(LabelFileError, match=r"^metadata.csv: 1 images have no row \('subdir/image_rgb3.jpg'\)"):
        metadata_folder(tmp_path)


def test_an_image_with_two_rows_is_an_error_where_datasets_gives_it_twice(
    tmp_path: Path, load_imagefolder: Callable
) -> None:
    write_images(tmp_path, HF_IMAGES[:2])
    rows = [*CAPTIONED[:2], {"file_name": "image_rgb.jpg", "caption": "Again", "label": "dog"}]
    write_files(tmp_path, {"metadata.jsonl": jsonl_of(rows)})
    theirs = load_imagefolder(tmp_path)["train"]
    assert [path for path, _ in theirs] == ["image_rgb.jpg", "image_rgb2.jpg", "image_rgb.jpg"]
    with pytest.raises(LabelFileError, match=r"^metadata.jsonl line 3: the image 'image_rgb.jpg' has a row already"):
        metadata_folder(tmp_path)


def test_csv_cells_are_typed_by_this_projects_rule_not_pandas(tmp_path: Path, load_imagefolder: Callable) -> None:
    write_images(tmp_path, HF_IMAGES[:2])
    write_files(
        tmp_path, {"metadata.csv": "file_name,label,flag,note\nimage_rgb.jpg,a,True,NA\nimage_rgb2.jpg,b,False,x\n"}
    )
    theirs = by_path(load_imagefolder(tmp_path)["train"])
    assert theirs["image_rgb.jpg"]["flag"] is True and theirs["image_rgb.jpg"]["note"] is None
    table = metadata_folder(tmp_path)
    assert table.field_types == {"flag": "str", "note": "str"}
    assert table.images["image_rgb.jpg"].fields == {"flag": "True", "note": "NA"}

    write_files(tmp_path, {"metadata.csv": "file_name,label,n\nimage_rgb.jpg,a,1\nimage_rgb2.jpg,b,\n"})
    theirs = by_path(load_imagefolder(tmp_path)["train"])
    assert theirs["image_rgb.jpg"]["n"] == 1.0 and theirs["image_rgb2.jpg"]["n"] is None
    with pytest.raises(LabelFileError, match=r"^metadata.csv line 3: column 'n' is empty"):
        metadata_folder(tmp_path)
