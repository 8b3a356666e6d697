"""The label-file parser (src/imagefolder_lmdb/sources/label_files/) on trees of real images with a
label file beside them: the shapes it reads (Kaggle's ``id,label``, a CSV as spreadsheets write it,
JSONL, Parquet, Hugging Face's metadata files in a folder and in a zip), the targets and typed fields
it gives, and each bad label file's one-line message."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from imagefolder_lmdb.sources.label_files import LabelFileError, LabelSettings, LabelTable
from support.label_trees import (
    label_folder,
    metadata_folder,
    metadata_zip,
    write_files,
    write_images,
    zip_folder,
)


def labelled(tmp_path: Path, images: list[str], name: str, content: str | bytes, **settings: str) -> LabelTable:
    """``images`` written under ``tmp_path/data``, label file ``name`` beside the folder, parsed."""
    write_images(tmp_path / "data", images)
    write_files(tmp_path, {name: content})
    return label_folder(tmp_path / "data", tmp_path / name, LabelSettings(**settings))


def refused(tmp_path: Path, images: list[str], name: str, content: str | bytes, **settings: str) -> str:
    """The one-line message a bad label file gets."""
    with pytest.raises(LabelFileError) as raised:
        labelled(tmp_path, images, name, content, **settings)
    message = str(raised.value)
    assert "\n" not in message
    return message


# What it reads


def test_a_kaggle_tree_maps_ids_without_extension_through_the_sorted_class_list(tmp_path: Path) -> None:
    csv = "id,label\nimg_3,zebra\nimg_1,ant\nimg_2,zebra\nimg_10,bee\n"
    table = labelled(tmp_path, ["img_1.jpg", "img_2.jpg", "img_3.jpg", "img_10.jpg"], "train.csv", csv)
    assert table.classes == ("ant", "bee", "zebra")
    assert table.label_kind == "single" and table.label_type == "str"
    assert {path: entry.target for path, entry in table.images.items()} == {
        "img_1.jpg": 0,
        "img_10.jpg": 1,
        "img_2.jpg": 2,
        "img_3.jpg": 2,
    }
    assert list(table.images) == sorted(table.images), "images in path order"
    assert table.labels("img_3.jpg") == "zebra" and table.field_types == {}


def test_a_csv_with_a_bom_quoted_commas_and_crlf_reads_right(tmp_path: Path) -> None:
    csv = '\ufefffile_name,label,caption\r\na.jpg,"cat, tabby","said ""hi"", twice"\r\nb.png,dog,"two\r\nlines"\r\n'
    table = labelled(tmp_path, ["a.jpg", "b.png"], "labels.csv", csv)
    assert table.classes == ("cat, tabby", "dog")
    assert table.images["a.jpg"].fields == {"caption": 'said "hi", twice'}
    assert table.images["b.png"].fields == {"caption": "two\r\nlines"}


def test_integer_labels_keep_their_value_and_a_gap_is_a_class_without_images(tmp_path: Path) -> None:
    table = labelled(tmp_path, ["a.jpg", "b.jpg", "c.jpg"], "train.csv", "id,label\na,10\nb,2\nc,0\n")
    assert table.label_type == "int"
    assert {path: entry.target for path, entry in table.images.items()} == {"a.jpg": 10, "b.jpg": 2, "c.jpg": 0}
    assert table.classes == tuple(str(index) for index in range(11)), "0..max: never '10' before '2'"
    assert table.labels("a.jpg") == 10


def test_multi_label_lists_give_class_indices_and_an_empty_list_is_no_label(tmp_path: Path) -> None:
    jsonl = '{"file_name": "a.jpg", "label": ["dog", "cat"]}\n{"file_name": "b.jpg", "label": []}\n'
    table = labelled(tmp_path, ["a.jpg", "b.jpg"], "labels.jsonl", jsonl)
    assert table.label_kind == "multi" and table.classes == ("cat", "dog")
    assert table.images["a.jpg"].target == (1, 0) and table.images["b.jpg"].target == ()
    assert table.labels("a.jpg") == ("dog", "cat")


def test_a_separator_splits_a_csv_cell_into_labels(tmp_path: Path) -> None:
    csv = "id,label\na,3|1\nb,\nc,2\n"
    table = labelled(tmp_path, ["a.jpg", "b.jpg", "c.jpg"], "train.csv", csv, label_separator="|")
    assert table.label_kind == "multi" and table.label_type == "int"
    assert [entry.target for entry in table.images.values()] == [(3, 1), (), (2,)]


def test_labels_outside_a_given_class_list_are_left_out_and_counted(tmp_path: Path) -> None:
    write_images(tmp_path / "data", ["a.jpg", "b.jpg", "c.jpg"])
    write_files(tmp_path, {"one.csv": "id,label\na,cat\nb,emu\nc,dog\n", "many.jsonl": MANY})
    single = label_folder(tmp_path / "data", tmp_path / "one.csv", classes=["cat", "dog"])
    assert {path: entry.target for path, entry in single.images.items()} == {"a.jpg": 0, "c.jpg": 1}
    assert single.outside.report()["per_class"] == {"emu": 1}
    multi = label_folder(tmp_path / "data", tmp_path / "many.jsonl", classes=["0", "1"])
    assert [entry.target for entry in multi.images.values()] == [(0,), (1,), ()], "an image keeps its other labels"
    assert multi.outside.report()["per_class"] == {"2": 1, "5": 2}


MANY = (
    '{"file_name": "a.jpg", "label": [0, 5]}\n{"file_name": "b.jpg", "label": [2, 1]}\n'
    '{"file_name": "c.jpg", "label": [5]}\n'
)


def test_csv_fields_are_int_float_or_str_by_every_cell(tmp_path: Path) -> None:
    csv = "id,label,count,score,code,note\na,x,3,1,007,NA\nb,y,-2,2.5e-1,12,True\n"
    table = labelled(tmp_path, ["a.jpg", "b.jpg"], "train.csv", csv)
    assert table.field_types == {"count": "int", "score": "float", "code": "int", "note": "str"}
    assert table.images["b.jpg"].fields == {"count": -2, "score": 0.25, "code": 12, "note": "True"}
    assert table.images["a.jpg"].fields["score"] == 1.0 and isinstance(table.images["a.jpg"].fields["score"], float)


def test_jsonl_fields_keep_their_types_and_lists_of_one_type(tmp_path: Path) -> None:
    jsonl = (
        '{"file_name": "a.jpg", "label": 1, "boxes": [1, 2.5], "tags": ["x"], "w": 3}\n'
        '{"file_name": "b.jpg", "label": 0, "boxes": [], "tags": [], "w": 4.5}\n'
    )
    table = labelled(tmp_path, ["a.jpg", "b.jpg"], "labels.jsonl", jsonl)
    assert table.field_types == {"boxes": "list[float]", "tags": "list[str]", "w": "float"}
    assert table.images["a.jpg"].fields == {"boxes": [1.0, 2.5], "tags": ["x"], "w": 3.0}


def test_a_parquet_label_file_reads_as_the_jsonl_one(tmp_path: Path) -> None:
    write_images(tmp_path / "data", ["a.jpg", "sub/b.jpg"])
    rows = {"file_name": ["sub/b.jpg", "a.jpg"], "label": [["cat"], ["dog", "cat"]], "size": [2, 7]}
    pq.write_table(pa.table(rows), tmp_path / "labels.parquet")
    table = label_folder(tmp_path / "data", tmp_path / "labels.parquet")
    assert table.label_kind == "multi" and table.classes == ("cat", "dog")
    assert table.images["a.jpg"].target == (1, 0) and table.images["sub/b.jpg"].fields == {"size": 2}


def test_the_digest_is_the_files_sha256_and_follows_an_edit(tmp_path: Path) -> None:
    table = labelled(tmp_path, ["a.jpg"], "train.csv", "id,label\na,cat\n")
    content = (tmp_path / "train.csv").read_bytes()
    assert [(entry.path, entry.sha256) for entry in table.label_files] == [
        ("train.csv", hashlib.sha256(content).hexdigest())
    ]
    edited = labelled(tmp_path, ["a.jpg"], "train.csv", "id,label\na,dog\n")
    assert edited.label_files[0].sha256 != table.label_files[0].sha256


def test_metadata_files_in_subfolders_name_images_relative_to_their_folder(tmp_path: Path) -> None:
    write_images(tmp_path, ["a.jpg", "sub/b.png", "sub/deeper/c.jpg"])
    write_files(
        tmp_path,
        {
            "metadata.csv": "file_name,label,n\na.jpg,cat,1\n",
            "sub/metadata.csv": "file_name,label,n\nb.png,dog,2\ndeeper/c.jpg,cat,3\n",
        },
    )
    table = metadata_folder(tmp_path)
    assert {path: (table.labels(path), entry.fields["n"]) for path, entry in table.images.items()} == {
        "a.jpg": ("cat", 1),
        "sub/b.png": ("dog", 2),
        "sub/deeper/c.jpg": ("cat", 3),
    }
    assert [entry.path for entry in table.label_files] == ["metadata.csv", "sub/metadata.csv"]


def test_metadata_in_a_zip_reads_from_its_members(tmp_path: Path) -> None:
    write_images(tmp_path / "tree", ["a.jpg", "sub/b.jpg"])
    write_files(tmp_path / "tree", {"metadata.jsonl": JSONL_TWO})
    zip_folder(tmp_path / "tree", tmp_path / "train.zip")
    table = metadata_zip(tmp_path / "train.zip")
    assert {path: table.labels(path) for path in table.images} == {"a.jpg": "cat", "sub/b.jpg": "dog"}


JSONL_TWO = '{"file_name": "a.jpg", "label": "cat"}\n{"file_name": "sub/b.jpg", "label": "dog"}\n'


# Bad label files: one line each, naming the file (and row) and the fix


def test_a_missing_column_gets_a_did_you_mean(tmp_path: Path) -> None:
    assert refused(tmp_path, ["a.jpg"], "train.csv", "id,lable\na,cat\n") == (
        "train.csv: no column 'label' (did you mean 'lable'?): set label_column to the column holding each "
        "image's label (the file has: id, lable)."
    )
    assert refused(tmp_path, ["a.jpg"], "train.csv", "image,label\na,cat\n", file_column="imag") == (
        "train.csv: no column 'imag' (did you mean 'image'?): set file_column to the column holding the path "
        "(or id) of each image (the file has: image, label)."
    )


def test_images_without_a_row_and_rows_without_an_image_are_counted_with_the_first_few(tmp_path: Path) -> None:
    images = ["a.jpg", "b.jpg", "c.jpg", "d.jpg", "e.jpg"]
    assert refused(tmp_path, images, "train.csv", "id,label\na,x\nq,x\nb.png,x\n") == (
        "train.csv: 2 rows name no image (train.csv line 3: 'q', 'b.png') and 4 images have no row ('b.jpg', "
        "'c.jpg', 'd.jpg', ...): every image needs exactly one row; add the missing rows, remove the others, or "
        "correct the file names. The ids end in .png, the files in .jpg ('b.png' is b.jpg on disk): write each id "
        "as its file is named, or without its extension ('b' names the one image of that stem), or rename the files "
        "to .png."
    )


def test_two_rows_for_one_image_are_refused(tmp_path: Path) -> None:
    assert refused(tmp_path, ["a.jpg"], "train.csv", "id,label\na,x\na.jpg,y\n") == (
        "train.csv line 3: the image 'a.jpg' has a row already (train.csv line 2): keep one row per image."
    )


def test_an_id_that_is_the_stem_of_two_images_is_ambiguous(tmp_path: Path) -> None:
    assert refused(tmp_path, ["a.jpg", "a.png"], "train.csv", "id,label\na,x\n") == (
        "train.csv line 2: 'a' names both 'a.jpg' and 'a.png': write the file name with its extension."
    )


def test_an_empty_label_is_refused_in_a_single_label_file(tmp_path: Path) -> None:
    assert refused(tmp_path, ["a.jpg", "b.jpg"], "train.csv", "id,label\na,x\nb,\n") == (
        "train.csv line 3: the label ('label') is empty: give the image its label or remove the row (for "
        "several labels per image, or none, set label_separator)."
    )
    jsonl = '{"file_name": "a.jpg", "label": "x"}\n{"file_name": "b.jpg", "label": null}\n'
    assert refused(tmp_path, ["a.jpg", "b.jpg"], "labels.jsonl", jsonl) == (
        "labels.jsonl line 2: the label ('label') is empty: give the image its label or remove the row (a "
        "multi-label file writes [] for an image with none)."
    )


def test_a_label_list_mixing_types_is_refused(tmp_path: Path) -> None:
    jsonl = '{"file_name": "a.jpg", "label": ["cat"]}\n{"file_name": "b.jpg", "label": ["dog", 3]}\n'
    assert refused(tmp_path, ["a.jpg", "b.jpg"], "labels.jsonl", jsonl) == (
        "labels.jsonl line 1: a label ('label') is text, but labels.jsonl line 2 holds an integer: write every "
        "label as a class name, or every one as a class index."
    )


def test_a_list_beside_a_single_label_is_refused(tmp_path: Path) -> None:
    jsonl = '{"file_name": "a.jpg", "label": "cat"}\n{"file_name": "b.jpg", "label": ["dog"]}\n'
    assert refused(tmp_path, ["a.jpg", "b.jpg"], "labels.jsonl", jsonl) == (
        "labels.jsonl line 1: the label ('label') is 'cat', but labels.jsonl line 2 holds a list: write every "
        "row's labels as a list ([] for none)."
    )


def test_non_utf8_text_names_the_byte_and_line(tmp_path: Path) -> None:
    assert refused(tmp_path, ["a.jpg", "b.jpg"], "train.csv", b"id,label\na,cat\nb,caf\xe9\n") == (
        "train.csv: not UTF-8 text at byte 20 (line 3): save the file as UTF-8."
    )


def test_a_jsonl_line_that_is_not_an_object_is_named(tmp_path: Path) -> None:
    jsonl = '{"file_name": "a.jpg", "label": "x"}\n\n["b.jpg", "y"]\n'
    assert refused(tmp_path, ["a.jpg", "b.jpg"], "labels.jsonl", jsonl) == (
        'labels.jsonl line 3: a JSON list, not an object: write one object per line, {"file_name": "a.jpg", '
        '"label": "cat"}.'
    )
    assert refused(tmp_path, ["a.jpg"], "labels.jsonl", '{"file_name": "a.jpg",\n') == (
        "labels.jsonl line 1: not JSON (Expecting property name enclosed in double quotes at column 23): write "
        "one JSON object per line."
    )


def test_a_row_with_more_cells_than_the_header_asks_for_quotes(tmp_path: Path) -> None:
    assert refused(tmp_path, ["a.jpg"], "train.csv", "id,label\na,cat, tabby\n") == (
        "train.csv line 2: 3 cells, but the header names 2 columns: quote a cell that holds a comma "
        '("a, b") or add the missing cells.'
    )


def test_a_field_named_label_is_reserved(tmp_path: Path) -> None:
    csv = "id,category,label\na,cat,3\n"
    assert refused(tmp_path, ["a.jpg"], "train.csv", csv, label_column="category") == (
        "train.csv: column 'label' is reserved for the label, but label_column is 'category': set "
        "label_column: label, or rename the column 'label'."
    )


def test_fields_of_mixed_or_missing_values_are_refused(tmp_path: Path) -> None:
    assert refused(tmp_path, ["a.jpg", "b.jpg"], "train.csv", "id,label,n\na,x,1\nb,x,\n") == (
        "train.csv line 3: column 'n' is empty, and its other cells are int numbers: give every row a value, "
        "or drop the column."
    )
    jsonl = '{"file_name": "a.jpg", "label": "x", "n": 1}\n{"file_name": "b.jpg", "label": "x", "n": "two"}\n'
    assert refused(tmp_path, ["a.jpg", "b.jpg"], "labels.jsonl", jsonl) == (
        "labels.jsonl line 2: column 'n' holds text, but labels.jsonl line 1 a number (int): write the "
        "column's values as one type (numbers as text in quotes, or text as numbers)."
    )


def test_a_negative_class_index_is_refused(tmp_path: Path) -> None:
    assert refused(tmp_path, ["a.jpg"], "train.csv", "id,label\na,-1\n") == (
        "train.csv line 2: the label -1 is negative: class indices count from 0; write the class index "
        "(0 .. number of classes - 1) or the class name."
    )


def test_a_file_name_outside_the_folder_is_refused(tmp_path: Path) -> None:
    write_images(tmp_path, ["sub/a.jpg"])
    write_files(tmp_path, {"sub/metadata.jsonl": '{"file_name": "../sub/a.jpg", "label": "x"}\n'})
    with pytest.raises(LabelFileError, match=r"^sub/metadata.jsonl line 1: '../sub/a.jpg' is not a path inside 'sub'"):
        metadata_folder(tmp_path)


def test_several_images_per_row_columns_are_refused_in_metadata(tmp_path: Path) -> None:
    write_images(tmp_path, ["a.jpg", "a_mask.png"])
    write_files(tmp_path, {"metadata.csv": "file_name,mask_file_name,label\na.jpg,a_mask.png,x\n"})
    with pytest.raises(LabelFileError) as raised:
        metadata_folder(tmp_path)
    assert str(raised.value) == (
        "metadata.csv: column 'mask_file_name' names more images per row (Hugging Face's *_file_name(s)): one "
        "image a row is converted; drop the column, or rename it if it is text."
    )


def test_a_metadata_file_without_file_name_gets_a_did_you_mean(tmp_path: Path) -> None:
    write_images(tmp_path, ["a.jpg"])
    write_files(tmp_path, {"metadata.jsonl": '{"filename": "a.jpg", "label": "x"}\n'})
    with pytest.raises(LabelFileError) as raised:
        metadata_folder(tmp_path)
    assert str(raised.value) == (
        "metadata.jsonl: no column 'file_name' (did you mean 'filename'?): a metadata file names each image, "
        "relative to its folder, in a 'file_name' column (the file has: filename, label)."
    )


def test_metadata_files_must_share_a_suffix_and_columns(tmp_path: Path) -> None:
    write_images(tmp_path, ["a.jpg", "sub/b.jpg"])
    write_files(tmp_path, {"metadata.csv": "file_name,label\na.jpg,x\n", "sub/metadata.jsonl": JSONL_TWO})
    with pytest.raises(LabelFileError, match=r"metadata files of two kinds, 'metadata.csv' and 'sub/metadata.jsonl'"):
        metadata_folder(tmp_path)
    (tmp_path / "sub/metadata.jsonl").unlink()
    write_files(tmp_path, {"sub/metadata.csv": "file_name,label,caption\nb.jpg,y,hi\n"})
    with pytest.raises(LabelFileError) as raised:
        metadata_folder(tmp_path)
    assert str(raised.value) == (
        "sub/metadata.csv: its columns differ from metadata.csv's (in caption): give every metadata file of the "
        "tree the same columns."
    )


def test_a_tree_without_metadata_files_says_how_to_add_one(tmp_path: Path) -> None:
    write_images(tmp_path, ["cat/a.jpg"])
    with pytest.raises(LabelFileError) as raised:
        metadata_folder(tmp_path)
    assert str(raised.value) == (
        f"{tmp_path}: no metadata.csv, metadata.jsonl, metadata.parquet in the tree: add one beside the images "
        "(file_name,label), or name the label file (labels: PATH)."
    )


def test_a_label_file_of_another_suffix_is_refused(tmp_path: Path) -> None:
    assert refused(tmp_path, ["a.jpg"], "labels.txt", "a cat\n") == (
        "labels.txt: a label file must end in .csv, .jsonl, .parquet: rename it, or convert it to one."
    )


def test_images_wrapped_in_one_folder_name_it_as_the_root_to_set(tmp_path: Path) -> None:
    """A competition's zip holds ``train/<id>.jpg``; its CSV names ``<id>``: the error says to set root."""
    from imagefolder_lmdb.sources.label_files import read_label_file

    with pytest.raises(LabelFileError) as caught:
        read_label_file("train.csv", b"id,label\n0,cat\n1,dog\n", ["train/0.jpg", "train/1.jpg"])
    message = str(caught.value)
    assert "2 images have no row" in message and "set the split's root to 'train' (--root train)" in message
    with pytest.raises(LabelFileError) as elsewhere:  # names that no folder would find: no such hint
        read_label_file("train.csv", b"id,label\n7,cat\n8,dog\n", ["train/0.jpg", "train/1.jpg"])
    assert "--root" not in str(elsewhere.value)


# Bounded by what a dataset stores (issue 57, finding 3); one rule for number labels (finding 6)


def test_whole_numbers_written_as_floats_are_class_indices_and_1_and_1_0_one_class(tmp_path: Path) -> None:
    """pandas writes an int column that once held a NaN as 0.0 .. 10.0: indices, never names sorted as
    text (10.0 before 2.0); JSONL's 3.0 reads as the CSV's; a label that is no number keeps names."""
    images = ["a.jpg", "b.jpg", "c.jpg", "d.jpg"]
    table = labelled(tmp_path / "floats", images, "train.csv", "id,label\na,0.0\nb,10.0\nc,2.0\nd,2\n")
    assert table.label_type == "int" and table.classes == tuple(str(index) for index in range(11))
    assert [entry.target for entry in table.images.values()] == [0, 10, 2, 2]
    one = labelled(tmp_path / "one", ["a.jpg", "b.jpg"], "one.csv", "id,label\na,1\nb,1.0\n")
    assert [entry.target for entry in one.images.values()] == [1, 1] and one.classes == ("0", "1")
    jsonl = '{"file_name": "a.jpg", "label": 3.0}\n{"file_name": "b.jpg", "label": 1}\n'
    written = labelled(tmp_path / "jsonl", ["a.jpg", "b.jpg"], "l.jsonl", jsonl)
    assert [entry.target for entry in written.images.values()] == [3, 1] and written.label_type == "int"
    names = labelled(tmp_path / "names", ["a.jpg", "b.jpg", "c.jpg"], "names.csv", "id,label\na,7\nb,cat\nc,7.0\n")
    assert names.label_type == "str" and names.classes == ("7", "7.0", "cat"), "a CSV cell has no type: names"


def test_a_fraction_among_number_labels_is_refused_naming_the_row_and_column(tmp_path: Path) -> None:
    assert refused(tmp_path, ["a.jpg", "b.jpg"], "train.csv", "id,label\na,2\nb,2.5\n") == (
        "train.csv line 3: the label 2.5 ('label') is a number but not a whole one: a number label is a class "
        "index (3 or 3.0); write the class index, or a class name that is not a number."
    )
    jsonl = '{"file_name": "a.jpg", "label": 1.5}\n'
    assert refused(tmp_path / "jsonl", ["a.jpg"], "l.jsonl", jsonl).startswith(
        "l.jsonl line 1: the label 1.5 ('label') is"
    )


def test_a_label_beyond_int32_is_refused_before_any_int_is_made_of_it(tmp_path: Path) -> None:
    # 5,000 digits: int() of it was a ValueError traceback (a 5e9 id: see tests/workflow/test_label_bounds.py,
    # under a memory limit, where today's main tried to name 5 billion classes)
    message = refused(tmp_path, ["a.jpg"], "train.csv", "id,label\na," + "9" * 5000 + "\n")
    assert message == (
        "train.csv line 2: the label 999999999999999999999999... (5000 characters) ('label') is beyond the "
        "largest class index a dataset stores, 2147483647 (meta/labels is int32): if this column is an id, "
        "not a class, set label_column to the column of labels; else write the class index (0 .. number of "
        "classes - 1) or the class name."
    )
    jsonl = '{"file_name": "a.jpg", "label": ' + "9" * 5000 + "}\n"
    assert refused(tmp_path / "jsonl", ["a.jpg"], "l.jsonl", jsonl) == (
        "l.jsonl line 1: a number of thousands of digits, which no label or field holds: fix the line (a number "
        "as text in quotes, or one that fits 64 bits)."
    )


def test_integer_labels_make_at_most_a_million_classes_unless_classes_are_given(tmp_path: Path) -> None:
    csv = "id,label\na,0\nb,1000000\n"
    assert refused(tmp_path, ["a.jpg", "b.jpg"], "train.csv", csv) == (
        "train.csv line 3: the label 1000000 ('label') would make 1,000,001 classes (0 .. 1000000), more than "
        "the 1,000,000 integer labels may make by themselves: if this column is an id, not a class, set "
        "label_column to the column of labels; if the dataset has that many classes, list them with classes: "
        "(a file of one name per line), which sets the bound."
    )
    given = [f"c{index:07d}" for index in range(1_000_001)]
    table = label_folder(tmp_path / "data", tmp_path / "train.csv", classes=given)
    assert [entry.target for entry in table.images.values()] == [0, 1_000_000]
    beyond = label_folder(tmp_path / "data", tmp_path / "train.csv", classes=given[:3])
    assert list(beyond.images) == ["a.jpg"] and dict(beyond.outside.images) == {"1000000": 1}


@pytest.mark.parametrize(
    ("name", "content", "shown"),
    [
        ("f.csv", "id,label,n\na,x,1\nb,x," + "9" * 5000 + "\n", "999999999999999999999999... (5000 characters)"),
        ("f.csv", "id,label,n\na,x,1.5\nb,x,1e999\n", "inf"),
        ("f.jsonl", '{"id": "a", "label": "x", "n": [1.5]}\n{"id": "b", "label": "x", "n": [NaN]}\n', "nan"),
    ],
    ids=["5000-digits", "infinite", "nan-in-a-list"],
)
def test_a_field_value_no_dataset_stores_is_refused_naming_the_row(
    tmp_path: Path, name: str, content: str, shown: str
) -> None:
    message = refused(tmp_path, ["a.jpg", "b.jpg"], name, content)
    line = 3 if name.endswith(".csv") else 2  # the header is a CSV's line 1
    assert message.startswith(f"{name} line {line}: column 'n' holds {shown}, "), message
    assert message.endswith("write a value that fits, give it as text in a column of text, or drop the column.")


def test_the_label_rule_tells_which_files_rule_1_read_otherwise() -> None:
    from imagefolder_lmdb.sources.label_files.rules import classes_read_differently, read_differently

    plain = LabelSettings(file_column="id")
    floats = read_differently("t.csv", b"id,label\na,0.0\nb,10.0\nc,2\n", plain)
    assert floats is not None and "('0.0', '10.0')" in floats and "label rule 2" in floats
    assert read_differently("t.csv", b"id,label\na,0\nb,10\n", plain) is None, "integers: indices under both"
    assert read_differently("t.csv", b"id,label\na,2.0\nb,cat\n", plain) is None, "text beside: names under both"
    assert read_differently("t.jsonl", b'{"id": "a", "label": 2}\n', plain) is None, "rule 1 refused JSON floats"
    several = LabelSettings(file_column="id", label_separator="|")
    assert read_differently("t.csv", b"id,label\na,1|2.0\nb,\n", several) is not None
    assert classes_read_differently(["10.0", "2.0"]) is not None and classes_read_differently(["0", "1"]) is None


def test_the_config_check_takes_the_bound_from_classes_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check before any job reads a label file with the config's class list, as the listing does:
    without it, the cap names classes: as the way past; with it, the list is the bound."""
    from imagefolder_lmdb.config.check import check_config
    from imagefolder_lmdb.config.problems import ConfigError
    from imagefolder_lmdb.config.schema import load_schema
    from support import REPO

    write_images(tmp_path / "train", ["a.jpg", "b.jpg"])
    write_files(tmp_path, {"train.csv": "file_name,label\na.jpg,0\nb.jpg,1000000\n"})
    write_files(tmp_path, {"names.txt": "".join(f"c{index:07d}\n" for index in range(1_000_001))})
    monkeypatch.chdir(tmp_path)
    schema = load_schema(str(REPO / "config" / "schema.yaml"))
    split = {"source": "train", "labels": "train.csv"}
    with pytest.raises(ConfigError, match=r"train.csv line 3: the label 1000000 \('label'\) would make 1,000,001"):
        check_config({"splits": {"train": dict(split)}}, schema)
    assert check_config({"classes": "names.txt", "splits": {"train": dict(split)}}, schema).classes.names is not None
