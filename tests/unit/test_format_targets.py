"""Format version 4 (issue 52): label lists and fields, through the one builder (writing/meta_document.py),
the format's encoder and decoder (reader/format.py), and the batch helpers (reader/targets.py)."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest
import torch

from imagefolder_lmdb import collate_label_lists, multi_hot
from imagefolder_lmdb.reader import META_KEYS, FormatError, Meta, decode_meta, encode_document, encode_meta
from imagefolder_lmdb.reader.format_targets import FieldColumn
from imagefolder_lmdb.writing.meta_document import MetaDocumentError, build_meta

CLASSES = ["cat", "dog", "eel"]
#: The keys every file written before version 4 holds, and every file without label lists or fields still does.
KEYS_BEFORE = {META_KEYS[name] for name in ("json", "labels", "sizes", "crc32", "storage", "source_bytes", "paths")}
KEYS_BEFORE.add(META_KEYS["locations"])


class StoredValues:
    """Meta values as decode_meta reads them (``get``), without an LMDB file."""

    def __init__(self, values: dict[bytes, bytes]) -> None:
        self.values = values

    def get(self, key: bytes, default: Any = None) -> Any:
        return self.values.get(key, default)


def small_meta(n: int = 3, paths: list[str] | None = None, **targets: Any) -> Meta:
    """The meta of ``n`` records built as write_meta builds one; ``targets``: labels, label_lists, fields."""
    if "label_lists" not in targets:
        targets.setdefault("labels", [index % len(CLASSES) for index in range(n)])
    return build_meta(
        tool="test",
        classes=CLASSES,
        storage=[0] * n,
        settings={"encode": {}},
        source={"path": "/data", "images": n},
        source_bytes=[100] * n,
        stored_bytes=[100] * n,
        skipped=[],
        sizes=np.ones((n, 2), dtype=np.uint32),
        crc32=list(range(n)),
        paths=paths or [f"cat/{index}.jpg" for index in range(n)],
        **targets,
    )


def decoded(meta: Meta) -> Meta:
    return decode_meta(StoredValues(encode_meta(meta)), "x.lmdb")


def test_without_label_lists_or_fields_the_meta_is_what_it_was() -> None:
    values = encode_meta(small_meta())
    document = json.loads(values[META_KEYS["json"]])
    assert set(values) == KEYS_BEFORE
    assert document["version"] == 1 and not {"label_kind", "fields"} & set(document)
    assert set(document["checksums"]) == {"labels", "sizes", "crc32", "storage", "source_bytes", "paths", "classes"}
    assert decoded(small_meta()).targets() == [0, 1, 2]


def test_label_lists_and_fields_round_trip_as_version_4() -> None:
    fields = {
        "weight": FieldColumn("float", [0.5, 1.0, -2.25]),
        "id": FieldColumn("int", [7, -1, 2**40]),
        "boxes": FieldColumn("list[float]", [[], [1.5], [2.0, 3.0]]),
        "words": FieldColumn("list[str]", [["ü"], [], ["a", "b"]]),
    }
    meta = decoded(small_meta(label_lists=[[2, 0], [], [1]], fields=fields))
    assert meta.document["version"] == 4 and meta.label_kind == "multi"
    assert meta.targets() == [[2, 0], [], [1]] and meta.labels.tolist() == [-1, -1, -1]
    assert list(meta.fields or {}) == ["weight", "id", "boxes", "words"], "the order the fields were given"
    assert {name: column.values for name, column in (meta.fields or {}).items()} == {
        name: column.values for name, column in fields.items()
    }
    single = decoded(small_meta(fields={"id": FieldColumn("int", [1, 2, 3])}))
    assert single.document["version"] == 4 and single.label_kind == "single" and single.targets() == [0, 1, 2]


def test_a_name_not_utf8_in_a_version_4_file_reads_as_its_bytes() -> None:
    names = ["cat/caf\udce9.jpg", "cat/b.jpg", "cat/c.jpg"]
    meta = decoded(small_meta(paths=names, label_lists=[[0], [1], [2]]))
    assert meta.document["version"] == 4 and meta.paths == names


def test_an_earlier_version_is_read_as_before_whatever_its_document_holds() -> None:
    values = encode_meta(small_meta())
    document = json.loads(values[META_KEYS["json"]])
    document |= {"label_kind": "multi", "fields": [{"name": "id", "type": "int"}]}  # no meaning before version 4
    values[META_KEYS["json"]] = encode_document(document)
    meta = decode_meta(StoredValues(values), "x.lmdb")
    assert meta.label_lists is None and meta.fields is None and meta.targets() == [0, 1, 2]


def test_a_multi_label_file_whose_labels_name_a_class_is_damaged() -> None:
    meta = small_meta(label_lists=[[0], [1], [2]])
    meta.labels = np.array([0, -1, -1], dtype=np.int32)
    with pytest.raises(FormatError, match="a multi-label file's meta/labels names a class"):
        decoded(meta)


def test_a_missing_version_4_key_is_damage() -> None:
    values = encode_meta(small_meta(label_lists=[[0], [1], [2]]))
    del values[META_KEYS["label_lists"]]
    with pytest.raises(FormatError, match="meta key meta/label_lists is missing: the file is damaged"):
        decode_meta(StoredValues(values), "x.lmdb")


@pytest.mark.parametrize(
    ("targets", "problem"),
    [
        ({"label_lists": [[0], [1]]}, "meta/label_lists has 2 images' offsets, expected 3"),
        ({"label_lists": [[0], [3], []]}, "1 labels outside 0..2 (its 3 classes), the first 3"),
        ({"labels": [0, 1, 3]}, "a label outside 0..2"),
        ({"labels": [0, 1, 2], "label_lists": [[0], [1], [2]]}, "either one class index each or a list each"),
        ({"labels": [0, 1, 2], "fields": {"label": FieldColumn("int", [1, 2, 3])}}, "'label' is the label's own"),
        ({"labels": [0, 1, 2], "fields": {"n": FieldColumn("int", [1, 2])}}, "field 'n' has 2 values, expected"),
        ({"labels": [0, 1, 2], "fields": {"n": FieldColumn("int", [1, True, 3])}}, "image 1's value is True"),
        ({"labels": [0, 1, 2], "fields": {"n": FieldColumn("float", [1.0, 2, 3.0])}}, "image 1's value is 2"),
        ({"labels": [0, 1, 2], "fields": {"n": FieldColumn("float", [math.nan] * 3)}}, "image 0's value is nan"),
        ({"labels": [0, 1, 2], "fields": {"n": FieldColumn("list[int]", [[1], [2.0], []])}}, "image 1's value"),
        ({"labels": [0, 1, 2], "fields": {"n": FieldColumn("bool", [True] * 3)}}, "a field's type is one of int,"),
    ],
)
def test_the_builder_refuses_targets_that_do_not_fit(targets: dict[str, Any], problem: str) -> None:
    with pytest.raises(MetaDocumentError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        small_meta(**targets)


def test_multi_hot_and_the_collate() -> None:
    assert multi_hot([[2, 0], [], [1, 1]], num_classes=3).tolist() == [[1, 0, 1], [0, 0, 0], [0, 1, 0]]
    with pytest.raises(ValueError, match=r"a label outside 0..2 \(num_classes=3\)"):
        multi_hot([[3]], num_classes=3)
    batch = [(torch.zeros(2), [1]), (torch.ones(2), [0, 2])]
    images, hot = collate_label_lists(batch, num_classes=3)
    assert images.tolist() == [[0, 0], [1, 1]] and hot.tolist() == [[0, 1, 0], [1, 0, 1]]
    assert collate_label_lists(batch)[1] == [[1], [0, 2]]
