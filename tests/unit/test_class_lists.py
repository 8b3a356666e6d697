"""The class list the package ships (``classes: imagenet1k``): the 1,000 ILSVRC2012 WNIDs, sorted,
each with its words, unchanged (a digest); its words in meta/json ``class_words``, read by the
reader (None for files without them, as every file written before) and drawn on the contact sheet."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from imagefolder_lmdb.classes.lists import configured_names, shipped_list, wordnet_words
from imagefolder_lmdb.reader import STORAGE_CODES, LMDBReader, Meta, checksum, close_all_envs, encode_meta, record_key
from imagefolder_lmdb.sources.ilsvrc import LabelError, devkit_classes, val_labels
from imagefolder_lmdb.verify import contact_sheet
from imagefolder_lmdb.writing.lmdb_writer import LMDBWriter
from imagefolder_lmdb.writing.meta_document import document_problems
from support import REPO
from support.images import jpeg_bytes

TSV = REPO / "src/imagefolder_lmdb/classes/data/imagenet1k.tsv"
#: sha256 of the list's class lines ("WNID<TAB>words\n" each, in file order): a change is deliberate.
DIGEST = "c98cf8e050b2f67f824762ebdb5bcf683adc7955382b9ff8b1c0f49548bb449b"


def class_lines() -> list[str]:
    """The file's class lines, read without the module under test."""
    return [line for line in TSV.read_text(encoding="utf-8").splitlines(keepends=True) if not line.startswith("#")]


def test_the_shipped_list_is_the_ilsvrc2012_classes_sorted_with_words() -> None:
    lines = class_lines()
    wnids = [line.split("\t")[0] for line in lines]
    assert len(wnids) == len(set(wnids)) == 1000
    assert wnids == sorted(wnids)
    assert wnids[0] == "n01440764" and wnids[-1] == "n15075141"
    assert all(len(line.rstrip("\n").split("\t")) == 2 and line.split("\t")[1].strip() for line in lines)
    assert hashlib.sha256("".join(lines).encode("utf-8")).hexdigest() == DIGEST
    assert (TSV.parent / "WORDNET-LICENSE.txt").is_file(), "the words' licence ships beside them"


def test_the_module_reads_the_list_the_package_ships() -> None:
    imagenet1k = shipped_list("imagenet1k")
    assert shipped_list("imagenet1k").path == str(TSV)
    assert [f"{w}\t{words}\n" for w, words in zip(imagenet1k.names, imagenet1k.words, strict=True)] == class_lines()
    assert imagenet1k.words[:2] == ["tench, Tinca tinca", "goldfish, Carassius auratus"]
    assert configured_names("imagenet1k") == (
        imagenet1k.names,
        "from imagenet1k, the list shipped with imagefolder-lmdb",
    )
    assert devkit_classes("imagenet1k") == imagenet1k.names


def test_a_file_of_that_name_is_still_a_file(tmp_path: Path) -> None:
    (tmp_path / "imagenet1k").write_text("b\na\n")
    assert configured_names(str(tmp_path / "imagenet1k"))[0] == ["a", "b"]


def test_val_labels_are_not_taken_from_the_list() -> None:
    with pytest.raises(LabelError, match=r"devkit's ground truth .* which no class list can replace"):
        val_labels("imagenet1k", None)


def test_words_for_classes_that_are_all_imagenet1k_wnids() -> None:
    assert wordnet_words(["n01440764", "n15075141"]) == [
        "tench, Tinca tinca",
        "toilet tissue, toilet paper, bathroom tissue",
    ]
    assert wordnet_words(["n01440764", "n00000001"]) is None, "a class that is no ImageNet-1k WNID: no words at all"
    assert wordnet_words(["cat", "dog"]) is None


# -- the reader and the contact sheet ---------------------------------------------------------------


def write_dataset(path: Path, classes: list[str], extra: dict) -> None:
    """Two records of ``classes`` (labels 0, 1) as write_meta stores them, ``extra`` in the document."""
    values = [jpeg_bytes(seed, size=(40, 30)) for seed in range(2)]
    document = {"format": "imagefolder-lmdb", "version": 1, "length": 2, "classes": classes, **extra}
    meta = Meta(
        document=document,
        labels=np.array([0, 1]),
        sizes=np.array([[40, 30], [40, 30]]),
        crc32=np.array([checksum(v) for v in values], dtype=np.uint32),
        storage=np.full(2, STORAGE_CODES["passthrough"]),
        source_bytes=np.array([len(v) for v in values]),
        paths=[f"{classes[i]}/{i}.JPEG" for i in range(2)],
    )
    writer = LMDBWriter(str(path), expected_bytes=1 << 20)
    for index, value in enumerate(values):
        writer.append(record_key(index), value)
    writer.put_many(encode_meta(meta))
    writer.close()


@pytest.fixture
def with_words(tmp_path: Path) -> Iterator[LMDBReader]:
    path = tmp_path / "words.lmdb"
    write_dataset(path, ["n01440764", "n15075141"], {"class_words": wordnet_words(["n01440764", "n15075141"])})
    yield LMDBReader(path)
    close_all_envs()


@pytest.fixture
def without_words(tmp_path: Path) -> Iterator[LMDBReader]:
    path = tmp_path / "plain.lmdb"
    write_dataset(path, ["cat", "dog"], {})  # as every file written before wordnet_words
    yield LMDBReader(path)
    close_all_envs()


def test_the_reader_gives_the_words_or_none(with_words: LMDBReader, without_words: LMDBReader) -> None:
    assert with_words.class_words == ["tench, Tinca tinca", "toilet tissue, toilet paper, bathroom tissue"]
    assert without_words.class_words is None


def test_words_that_do_not_fit_the_classes_are_a_problem() -> None:
    document = {"length": 0, "classes": ["a", "b"], "class_words": ["only one"]}
    document |= {"stats": {"storage": {}, "skipped": []}, "source": {"images": 0}}
    assert document_problems(document) == ["class_words in the meta is not one string per class"]
    assert document_problems({**document, "class_words": ["x", "y"]}) == []


def caption_ink(sheet: Path, line: int) -> int:
    """Dark pixels in caption line ``line`` (0: ``index: class``, 1: the words) of the first cell."""
    top = contact_sheet.CELL + 2 + line * contact_sheet.WORDS_HEIGHT
    band = np.asarray(Image.open(sheet).convert("L"))[top : top + contact_sheet.WORDS_HEIGHT, : contact_sheet.CELL]
    return int((band < 128).sum())


def test_the_contact_sheet_shows_the_words(with_words: LMDBReader, without_words: LMDBReader, tmp_path: Path) -> None:
    contact_sheet.contact_sheet(with_words, [0, 1], str(tmp_path / "words.png"))
    contact_sheet.contact_sheet(without_words, [0, 1], str(tmp_path / "plain.png"))
    assert (
        Image.open(tmp_path / "words.png").height
        == contact_sheet.CELL + contact_sheet.LABEL_HEIGHT + contact_sheet.WORDS_HEIGHT
    )
    assert Image.open(tmp_path / "plain.png").height == contact_sheet.CELL + contact_sheet.LABEL_HEIGHT
    assert caption_ink(tmp_path / "words.png", 1) > 20, "the words line is drawn"
    assert caption_ink(tmp_path / "plain.png", 0) > 20 and caption_ink(tmp_path / "words.png", 0) > 20
