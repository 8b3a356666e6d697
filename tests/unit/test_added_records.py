"""A change's added images encoded by the command's cores (issue 58; writing/added_records.py): the
added file holds the same bytes with one thread or several, and a bad image is the same one line."""

from __future__ import annotations

import datetime
import threading
import types
from pathlib import Path

import lmdb
import pytest

from imagefolder_lmdb.writing import added_records, meta_document
from imagefolder_lmdb.writing.added_records import PARALLEL_FROM, AddedImageError, write_added
from imagefolder_lmdb.writing.reencode import EncodeSettings
from support.images import jpeg_bytes, png_bytes

#: Enough images for the threads (PARALLEL_FROM), and more than they may run ahead of the writer.
IMAGES = PARALLEL_FROM + 40


def settings(on_error: str = "fail") -> EncodeSettings:
    return EncodeSettings(
        reencode="auto", quality=90, max_side=None, short_side=None, check="decode", on_error=on_error
    )


def added_tree(root: Path, bad_at: tuple[int, ...] = ()) -> list[tuple[str, int]]:
    """IMAGES images in two classes, every seventh a PNG (re-encoded), those at ``bad_at`` no image."""
    samples = []
    for number in range(IMAGES):
        folder = root / f"class{number % 2}"
        folder.mkdir(parents=True, exist_ok=True)
        data = png_bytes(number) if number % 7 == 3 else jpeg_bytes(number)
        (folder / f"added-{number:03d}.jpg").write_bytes(b"not an image" if number in bad_at else data)
        samples.append((f"class{number % 2}/added-{number:03d}.jpg", number % 2))
    return samples


@pytest.fixture
def fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """meta/json's ``created`` the same for every file written (it counts whole seconds)."""
    moment = datetime.datetime(2026, 12, 6, tzinfo=datetime.UTC)
    clock = types.SimpleNamespace(now=lambda zone=None: moment)
    monkeypatch.setattr(meta_document, "datetime", types.SimpleNamespace(datetime=clock, UTC=datetime.UTC))


def test_the_added_file_holds_the_same_records_and_meta_with_one_thread_or_two(
    tmp_path: Path, fixed_clock: None
) -> None:
    samples = added_tree(tmp_path / "src")
    written = {}
    for workers in (1, 2):
        output = tmp_path / f"added-{workers}.lmdb"
        write_added(str(output), str(tmp_path / "src"), samples, ["class0", "class1"], settings(), {}, workers)
        written[workers] = stored(output)
    assert written[1] == written[2]


def stored(path: Path) -> dict[bytes, bytes]:
    """Every key and value of an LMDB file: what it holds, byte for byte (its pages' unused bytes are
    not written deterministically, meminit=False, so the file's own bytes differ between two runs of
    one thread too)."""
    env = lmdb.open(str(path), subdir=False, readonly=True, lock=False)
    try:
        with env.begin() as txn:
            return dict(txn.cursor())
    finally:
        env.close()


@pytest.mark.parametrize("workers", [1, 2])
def test_on_error_skip_reports_the_bad_images_in_the_listings_order(tmp_path: Path, workers: int) -> None:
    samples = added_tree(tmp_path / "src", bad_at=(5, 50))
    output = tmp_path / "added.lmdb"
    skipped = write_added(
        str(output), str(tmp_path / "src"), samples, ["class0", "class1"], settings("skip"), {}, workers
    )
    assert [entry["path"] for entry in skipped] == [samples[5][0], samples[50][0]]
    assert all(entry["reason"].startswith("UnidentifiedImageError") for entry in skipped)


def test_threads_encode_a_large_change(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The images are encoded off the command's own thread where there are enough of them."""
    threads = set()
    encode = added_records.encode_one

    def seen(where: str, settings: EncodeSettings) -> added_records.EncodedImage:
        threads.add(threading.current_thread().name)
        return encode(where, settings)

    monkeypatch.setattr(added_records, "encode_one", seen)
    samples = added_tree(tmp_path / "src")
    write_added(str(tmp_path / "added.lmdb"), str(tmp_path / "src"), samples, ["class0", "class1"], settings(), {}, 2)
    assert threads and all(name.startswith("change-encode") for name in threads)


@pytest.mark.parametrize("workers", [1, 2])
def test_the_first_bad_image_in_the_listing_is_named_in_one_line(tmp_path: Path, workers: int) -> None:
    samples = added_tree(tmp_path / "src", bad_at=(9, 40))
    with pytest.raises(AddedImageError) as raised:
        write_added(
            str(tmp_path / "added.lmdb"), str(tmp_path / "src"), samples, ["class0", "class1"], settings(), {}, workers
        )
    message = str(raised.value)
    assert "\n" not in message and message.startswith(str(tmp_path / "src" / samples[9][0]) + ": the image is unusable")
    assert not (tmp_path / "added.lmdb").exists()


def test_ctrl_c_halfway_ends_the_threads_and_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C at the change's "change-encode" moment (its added file half written) with threads running:
    it reaches the command, no thread keeps encoding, no added file or temporary is left."""

    def interrupted(name: str) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(added_records, "hold_point", interrupted)
    samples = added_tree(tmp_path / "src")
    with pytest.raises(KeyboardInterrupt):
        write_added(
            str(tmp_path / "added.lmdb"), str(tmp_path / "src"), samples, ["class0", "class1"], settings(), {}, 2
        )
    assert not any(thread.name.startswith("change-encode") for thread in threading.enumerate())
    assert [path.name for path in tmp_path.iterdir()] == ["src"]
