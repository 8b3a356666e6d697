"""Format version 6 (docs/FORMAT.md, "Images without labels"): a split without labels is
``label_kind: "none"``, meta/labels all -1, written as version 6 only where that is so; the reader
gives -1 as each target and refuses -1 or "none" where the file's version does not allow them."""

from __future__ import annotations

import json

import numpy as np
import pytest

from imagefolder_lmdb.reader import META_KEYS, FormatError, Meta, checksum, decode_meta, encode_document, encode_meta
from imagefolder_lmdb.reader.format_unlabelled import NO_LABEL, UNLABELLED, UNLABELLED_VERSION
from imagefolder_lmdb.reader.targets import carried_labels
from imagefolder_lmdb.writing.meta_document import MetaDocumentError

from .test_format_targets import KEYS_BEFORE, StoredValues, decoded, small_meta


def unlabelled_meta(n: int = 3) -> Meta:
    return small_meta(n, labels=[NO_LABEL] * n, unlabelled=True)


def test_a_split_without_labels_is_version_6_and_reads_back_minus_one_each() -> None:
    values = encode_meta(unlabelled_meta())
    document = json.loads(values[META_KEYS["json"]])
    assert document["version"] == UNLABELLED_VERSION == 6 and document["label_kind"] == UNLABELLED == "none"
    assert set(values) == KEYS_BEFORE  # no label lists: the arrays of every other file
    assert np.frombuffer(values[META_KEYS["labels"]], "<i4").tolist() == [-1, -1, -1]
    meta = decoded(unlabelled_meta())
    assert meta.label_kind == "none" and meta.unlabelled and meta.targets() == [-1, -1, -1]
    assert carried_labels(meta.targets(), meta.label_kind) == []


def test_every_other_file_keeps_its_version() -> None:
    assert json.loads(encode_meta(small_meta())[META_KEYS["json"]])["version"] == 1
    assert decoded(small_meta()).label_kind == "single"


def test_the_writer_refuses_a_label_in_a_split_without_labels() -> None:
    with pytest.raises(MetaDocumentError, match="a label other than -1 in a split without labels"):
        small_meta(3, labels=[NO_LABEL, 0, NO_LABEL], unlabelled=True)


def rewritten(values: dict[bytes, bytes], **changes: object) -> dict[bytes, bytes]:
    """``values`` with meta/json's entries changed and meta/labels set to -1 each, checksums kept true."""
    document = json.loads(values[META_KEYS["json"]])
    labels = np.full(document["length"], -1, "<i4").tobytes()
    document.update(changes)
    document["checksums"]["labels"] = checksum(labels)
    return {**values, META_KEYS["labels"]: labels, META_KEYS["json"]: encode_document(document)}


def read(values: dict[bytes, bytes]) -> Meta:
    return decode_meta(StoredValues(values), "x.lmdb")


def test_none_or_minus_one_where_the_version_does_not_allow_them_is_damage() -> None:
    plain = encode_meta(small_meta())
    with pytest.raises(FormatError, match=r"label_kind is 'none', not one of 'single', 'multi'.*damaged"):
        read(rewritten(plain, version=4, label_kind="none"))
    with pytest.raises(FormatError, match=r"meta/labels holds labels outside 0..2 .*damaged"):
        read(rewritten(plain))  # version 1: -1 is no class
    with pytest.raises(FormatError, match=r"meta/labels holds labels outside"):
        read(rewritten(plain, version=6))  # version 6 without "none": one class each, -1 is none of them


def test_a_label_in_a_file_without_labels_is_damage() -> None:
    values = encode_meta(unlabelled_meta())
    document = json.loads(values[META_KEYS["json"]])
    labels = np.array([-1, 0, -1], "<i4").tobytes()
    document["checksums"]["labels"] = checksum(labels)
    changed = {**values, META_KEYS["labels"]: labels, META_KEYS["json"]: encode_document(document)}
    with pytest.raises(FormatError, match=r"names a class for 1 images, the first record 1 .*damaged"):
        read(changed)


def test_the_contact_sheet_names_no_class_for_an_image_without_a_label() -> None:
    from types import SimpleNamespace

    from imagefolder_lmdb.verify.contact_sheet import caption

    shown = SimpleNamespace(classes=["cat", "dog"])
    assert caption(shown, 3, NO_LABEL, None) == ["3: (no label)"]  # not classes[-1], "dog"
    assert caption(shown, 3, 1, None) == ["3: dog"]
