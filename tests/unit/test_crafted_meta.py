"""Crafted metas (issue 57): a real dataset file given one damaged meta value of each shape
(support/crafted_meta.py: every meta key of docs/FORMAT.md and meta/json's every documented entry, of
the wrong type, size or value, missing, not UTF-8, not a JSON object, a nesting bomb, huge numbers),
run through ``imagefolder-lmdb info``, ``imagefolder-lmdb verify``, LMDBReader and LMDBDataset. Each
refuses it in one line naming the damage (exit 1; FormatError), never a traceback, never exit 0 with
counts that miss an image; damage the reader does not read leaves its counts and info's right, and
``verify`` names it."""

from __future__ import annotations

import subprocess
import warnings
from pathlib import Path

import pytest

from imagefolder_lmdb.commands import info
from imagefolder_lmdb.reader import FormatError, LMDBReader, close_all_envs
from imagefolder_lmdb.reader.document import read_document
from support import BIN
from support.crafted_meta import LENGTH, READ_BY_ALL, REFUSED, Shape, craft, write_base
from support.http_range import RangeServer

pytestmark = pytest.mark.usefixtures("fresh_envs")
SHAPES = REFUSED + READ_BY_ALL
#: What the reader and info count of the base file's classes (7, 7 and 6 images of its 20).
COUNTS = {"ant": 7, "bee": 7, "cat": 6}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every shape's damaged copy, in one folder (the two base files written once, beside it)."""
    bases = tmp_path_factory.mktemp("bases")
    base, targets = bases / "base.lmdb", bases / "targets.lmdb"
    write_base(base)
    write_base(targets, targets=True)
    folder = tmp_path_factory.mktemp("crafted")
    close_all_envs()
    return {shape.name: craft(targets if shape.targets else base, folder, shape) for shape in SHAPES}


@pytest.fixture(scope="module")
def verified(corpus: dict[str, Path]) -> dict[str, str]:
    """``imagefolder-lmdb verify FOLDER`` over the whole corpus, once: each file's line of its output."""
    folder = next(iter(corpus.values())).parent
    done = subprocess.run(
        [str(BIN / "imagefolder-lmdb"), "verify", str(folder)], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert len(lines) == len(corpus), done.stdout[-3000:]
    return {Path(line.split(": ", 1)[0].removeprefix("FAIL ")).stem: line for line in lines}


def test_the_corpus_is_made_of_readable_files() -> None:
    names = [shape.name for shape in SHAPES]
    assert len(set(names)) == len(names) and len(REFUSED) >= 47


@pytest.mark.parametrize("targets", [False, True], ids=["version-1", "version-4"])
def test_the_undamaged_base_reads_and_verifies(tmp_path: Path, targets: bool) -> None:
    path = tmp_path / "base.lmdb"
    write_base(path, targets=targets)
    assert len(LMDBReader(path)) == LENGTH
    done = subprocess.run(
        [str(BIN / "imagefolder-lmdb"), "verify", str(path)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0 and done.stdout.startswith(f"OK {path}: 20 images, 3 classes"), done.stdout


@pytest.mark.parametrize("shape", REFUSED, ids=lambda shape: shape.name)
def test_the_reader_refuses_each_damaged_meta(corpus: dict[str, Path], shape: Shape) -> None:
    with pytest.raises(FormatError) as caught:
        LMDBReader(corpus[shape.name])
    message = str(caught.value)
    assert "\n" not in message and message.startswith(str(corpus[shape.name])), message
    assert shape.says in message, message


@pytest.mark.parametrize("shape", REFUSED, ids=lambda shape: shape.name)
def test_the_dataset_refuses_each_damaged_meta(corpus: dict[str, Path], shape: Shape) -> None:
    from imagefolder_lmdb.reader.dataset import LMDBDataset

    with pytest.raises(FormatError) as caught:
        LMDBDataset(corpus[shape.name])
    assert "\n" not in str(caught.value) and shape.says in str(caught.value), caught.value


@pytest.mark.parametrize("shape", REFUSED, ids=lambda shape: shape.name)
def test_info_refuses_each_damaged_meta_in_one_line(
    corpus: dict[str, Path], shape: Shape, capsys: pytest.CaptureFixture[str]
) -> None:
    # info counted labels of its own reading (no checksum, no range): a label outside the classes, or
    # one failing its checksum, gave exit 0 and counts of 19 of 20 images; bad sizes, bad UTF-8, a
    # nesting bomb or "version": true a traceback, or version 1.
    code = info.main([str(corpus[shape.name])])
    out, err = capsys.readouterr()
    assert code == 1 and out == "", out
    assert err.count("\n") == 1 and err.startswith(f"imagefolder-lmdb info: {corpus[shape.name]}"), err
    assert shape.says in err, err


@pytest.mark.parametrize("shape", REFUSED, ids=lambda shape: shape.name)
def test_verify_refuses_each_damaged_meta_in_one_line(verified: dict[str, str], shape: Shape) -> None:
    line = verified[shape.name]
    assert line.startswith("FAIL ") and shape.says in line, line


@pytest.mark.parametrize("shape", READ_BY_ALL, ids=lambda shape: shape.name)
def test_damage_the_reader_does_not_read_is_counted_right_and_named_by_verify(
    corpus: dict[str, Path], verified: dict[str, str], shape: Shape, capsys: pytest.CaptureFixture[str]
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # damaged record locations: read through LMDB, with a warning
        ds = LMDBReader(corpus[shape.name])
        assert dict(zip(ds.classes, ds.class_counts().tolist(), strict=True)) == COUNTS
        close_all_envs()  # info opens the file anew: py-lmdb opens a file once per process
        assert info.main([str(corpus[shape.name]), "--json"]) == 0
    assert '"ant": 7,\n  "bee": 7,\n  "cat": 6\n' in capsys.readouterr().out
    line = verified[shape.name]
    assert line.startswith("FAIL ") and shape.says in line, line


@pytest.mark.parametrize("name", ["json-nesting-bomb", "version-true", "labels-out-of-range", "labels-checksum"])
def test_the_info_command_refuses_in_one_line(corpus: dict[str, Path], name: str) -> None:
    # the console script itself, on the shapes: a traceback or exit 0 with 19 of 20 images before
    done = subprocess.run(
        [str(BIN / "imagefolder-lmdb"), "info", str(corpus[name])],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1 and done.stdout == "" and done.stderr.count("\n") == 1, done.stderr[-2000:]
    assert "the file is damaged" in done.stderr and "imagefolder-lmdb verify ORIGINAL --full" in done.stderr


@pytest.mark.parametrize("name", ["labels-out-of-range", "version-true", "stats-missing"])
def test_a_damaged_meta_at_a_url_is_named_in_one_line(corpus: dict[str, Path], name: str) -> None:
    # verify URL reported a meta without stats as "KeyError: 'stats'"
    shape = next(shape for shape in SHAPES if shape.name == name)
    server = RangeServer().start()
    try:
        url = server.put(f"{name}.lmdb", corpus[name].read_bytes())
        commands = ["verify"] if shape in READ_BY_ALL else ["verify", "info"]
        for command in commands:
            done = subprocess.run(
                [str(BIN / "imagefolder-lmdb"), command, url], capture_output=True, text=True, timeout=120, check=False
            )
            output = done.stdout + done.stderr
            assert done.returncode == 1 and output.count("\n") == 1 and shape.says in output, (command, output)
    finally:
        server.stop()


@pytest.mark.parametrize("name", ["json-nesting-bomb", "json-list", "json-not-utf8", "json-deep-entry"])
def test_the_meta_document_alone_of_a_damaged_meta_is_none(corpus: dict[str, Path], name: str) -> None:
    # what OUTDIR holds, `classes: FILE.lmdb`, the summary and the upload read it: a nesting bomb was a
    # RecursionError, a JSON list a document without .get
    assert read_document(str(corpus[name])) is None
