"""A split of revisions read over gs:// and az:// (issue 58, point 5), against the emulators of
tests/workflow/test_remote_emulators.py (Azurite, fake-gcs-server): a split converted three times by
the real CLI (a change each time) is placed at the emulator under its relative names (the pointer
``train.lmdb``, its data files ``train.lmdb.d/<content id>.lmdb``), objects written by plain HTTP so
that obstore never runs in the test process (the reader's own reads run in its helper process).
Checked: the current revision and ``revision=1`` equal the local ones sample for sample; a reader
opened before the pointer is replaced keeps its revision (its data files read by content id, the
new pointer never read) while a new reader gets the new one; a data file missing is one line
naming it. A change published to Azurite by ``convert SRC az://…`` (the server-side copy, the
pointer's conditional write) reads back as the changed tree."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from torch.utils.data import DataLoader
from torchvision.datasets import ImageFolder

from imagefolder_lmdb.reader import LMDBDataset, LMDBReader
from imagefolder_lmdb.reader.revisions import MissingDataFileError
from support.emulators import Azurite
from support.label_trees import write_images
from workflow.test_remote_emulators import CLI, Emulator, azurite, emulator, fake_gcs

__all__ = ["azurite", "emulator", "fake_gcs"]  # the emulators' fixtures, shared with that module


def _convert(tree: Path, out: str, cache: Path) -> str:
    """``imagefolder-lmdb convert TREE OUT`` (a folder, or a URL with its local folder in ``cache``)."""
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    done = subprocess.run([CLI, "convert", str(tree), out], capture_output=True, text=True, check=False, env=env)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    return done.stdout


def _change(tree: Path, step: int) -> None:
    """Change ``step`` of the tree: an image added, or one moved to the other class (a relabel)."""
    if step == 1:
        shutil.copyfile(tree / "cat" / "0.jpg", tree / "dog" / "9.jpg")
    else:
        (tree / "dog" / "1.jpg").rename(tree / "cat" / "1m.jpg")


@dataclass(frozen=True)
class Split:
    """OUT of a split converted three times by the CLI (revisions 1 to 3), and what revision 2 left:
    its pointer and its data files (revision 3's pointer replaces it at the emulator)."""

    out: Path
    pointer_2: bytes
    data_files_2: list[Path]

    @property
    def data_files(self) -> list[Path]:
        return sorted(Path(f"{self.out}/train.lmdb.d").iterdir())


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> Split:
    root = tmp_path_factory.mktemp("revisions")
    tree, out = root / "tree", root / "out"
    write_images(tree, [f"{name}/{index}.jpg" for name in ("cat", "dog") for index in range(4)])
    _convert(tree, str(out), root / "cache")
    _change(tree, 1)
    _convert(tree, str(out), root / "cache")
    pointer_2, data_files_2 = (out / "train.lmdb").read_bytes(), sorted(Path(f"{out}/train.lmdb.d").iterdir())
    _change(tree, 2)
    _convert(tree, str(out), root / "cache")
    assert LMDBReader(out / "train.lmdb").revision == 3 and len(data_files_2) == 2
    return Split(out, pointer_2, data_files_2)


def _place(server: Emulator, prefix: str, pointer: bytes, data_files: list[Path]) -> str:
    """``data_files`` placed under ``prefix/train.lmdb.d/``, then ``pointer`` as ``prefix/train.lmdb``
    (the order a publisher keeps); the pointer's URL."""
    for path in data_files:
        server.put("revisions", f"{prefix}/train.lmdb.d/{path.name}", path.read_bytes())
    return server.put("revisions", f"{prefix}/train.lmdb", pointer)


def _same(remote: LMDBReader, local: LMDBReader) -> None:
    """Sample for sample: classes, samples' paths, targets and the stored bytes."""
    assert (remote.revision, remote.classes, remote.samples) == (local.revision, local.classes, local.samples)
    assert remote.targets == local.targets and len(remote) == len(local) > 0
    assert [remote.get_bytes(i) for i in range(len(remote))] == [local.get_bytes(i) for i in range(len(local))]


def test_the_current_revision_and_revision_1_equal_the_local_ones(emulator: Emulator, split: Split) -> None:
    local = split.out / "train.lmdb"
    url = _place(emulator, uuid.uuid4().hex, local.read_bytes(), split.data_files)
    _same(LMDBDataset(url, decode="bytes"), LMDBDataset(local, decode="bytes"))
    first = LMDBReader(url, revision=1, decode="bytes")
    _same(first, LMDBReader(local, revision=1, decode="bytes"))
    assert first.revision == 1 and len(first) == 8


def test_a_reader_keeps_its_revision_when_the_pointer_is_replaced(emulator: Emulator, split: Split) -> None:
    """Revision 2 published, a reader opened; then revision 3's data file and pointer put over it:
    the open reader reads revision 2 (by content id, never the new pointer), in its DataLoader
    workers too (each reads in its own process), and a new one revision 3."""
    prefix, local = uuid.uuid4().hex, split.out / "train.lmdb"
    url = _place(emulator, prefix, split.pointer_2, split.data_files_2)
    pinned = LMDBReader(url, decode="bytes")
    assert pinned.revision == 2
    _place(emulator, prefix, local.read_bytes(), [path for path in split.data_files if path not in split.data_files_2])
    _same(pinned, LMDBReader(local, revision=2, decode="bytes"))
    loader = DataLoader(pinned, batch_size=4, num_workers=2, collate_fn=lambda batch: batch)
    assert [image for batch in loader for image, _ in batch] == [pinned.get_bytes(i) for i in range(len(pinned))]
    _same(LMDBReader(url, decode="bytes"), LMDBReader(local, decode="bytes"))


def test_a_missing_data_file_is_one_line_naming_it(emulator: Emulator, split: Split) -> None:
    missing, *kept = split.data_files
    url = _place(emulator, uuid.uuid4().hex, (split.out / "train.lmdb").read_bytes(), kept)
    with pytest.raises(MissingDataFileError, match=r"revision=3 reads data files that are not there: ") as exc:
        LMDBReader(url)
    assert f"{url}.d/{missing.name}" in str(exc.value) and "\n" not in str(exc.value)
    verified = subprocess.run([CLI, "verify", url], capture_output=True, text=True, check=False)
    assert verified.returncode == 1 and len(verified.stdout.splitlines()) == 1, verified.stdout + verified.stderr
    assert verified.stdout.startswith(f"FAIL {url}: ") and f"{url}.d/{missing.name}" in verified.stdout


def test_a_change_published_to_azure_reads_as_the_changed_tree(
    azurite: Azurite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``convert SRC az://…`` twice, a change between: revision 2 published (the single file moved
    beside the pointer by a server-side copy, the pointer written on its condition) and read back."""
    for name in [name for name in os.environ if name.startswith(("AWS_", "GOOGLE_", "AZURE_", "AZURITE_"))]:
        monkeypatch.delenv(name)
    for name, value in azurite.env().items():
        monkeypatch.setenv(name, value)
    container, tree = f"c{uuid.uuid4().hex[:12]}", tmp_path / "tree"
    azurite.create_container(container)
    write_images(tree, [f"{name}/{index}.jpg" for name in ("cat", "dog") for index in range(4)])
    prefix, url = f"az://{container}/data", f"az://{container}/data/train.lmdb"
    _convert(tree, prefix, tmp_path / "cache")
    _change(tree, 1)
    said = _convert(tree, prefix, tmp_path / "cache")
    assert "revision 2 published: the pointer and 1 data file(s) uploaded" in said, said
    assert "1 moved beside it by a server-side copy" in said, said
    published = LMDBReader(url, decode="bytes")
    reference = ImageFolder(str(tree))
    assert published.revision == 2 and published.classes == reference.classes
    assert published.samples == [(os.path.relpath(path, tree), label) for path, label in reference.samples]
    assert [published.get_bytes(i) for i in range(len(published))] == [
        Path(path).read_bytes() for path, _ in reference.samples
    ]
    assert len(LMDBReader(url, revision=1)) == 8
