"""Seeded damage of tar and zip sources (issue 31), the fuzz of tests/workflow/test_fuzz.py turned on
the archives read in place: random truncations and byte flips of the archive, each converted by the
real snakemake CLI. Every run ends within its timeout, never by a signal, and either with a message
naming the archive or with exactly the images Python's tarfile/zipfile read from that archive, under
the clean archive's names (a tar whose listing stopped early would lose images without a word)."""

from __future__ import annotations

import random
import tarfile
import zipfile
from pathlib import Path

import pytest

from imagefolder_lmdb.reader import LMDBDataset, close_all_envs
from support.archives import make_tar
from support.images import jpeg_bytes
from support.workflow import convert

pytestmark = pytest.mark.slow  # sixteen whole runs: make test runs it, -m "not slow" leaves it out

SEED = 31
CASES = 4  # per kind and damage: modest, each is a whole run


def small_tree(root: Path) -> Path:
    for index in range(12):
        folder = root / f"class{index % 3}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"img{index:02d}.jpg").write_bytes(jpeg_bytes(index, (40 + index, 30 + index)))
    return root


def archive_of(tree: Path, path: Path) -> Path:
    if path.suffix == ".tar":
        return make_tar(tree, path)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for file in sorted(tree.rglob("*.jpg")):
            zf.write(file, file.relative_to(tree).as_posix())
    return path


def member_bytes(archive: Path) -> dict[str, bytes]:
    """Each image member's bytes as Python reads them, by its path below the class folders' parent."""
    if archive.suffix == ".tar":
        with tarfile.open(archive) as tar:
            return {m.name.removeprefix("train/"): tar.extractfile(m).read() for m in tar if m.isfile()}
    with zipfile.ZipFile(archive) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def damaged(clean: bytes, rng: random.Random, how: str) -> bytes:
    if how == "truncation":
        return clean[: rng.randrange(len(clean))]
    data = bytearray(clean)
    data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    return bytes(data)


@pytest.mark.parametrize("how", ["truncation", "flip"])
@pytest.mark.parametrize("kind", ["tar", "zip"])
def test_damaged_archive_gives_its_images_or_names_itself(tmp_path: Path, kind: str, how: str) -> None:
    clean = archive_of(small_tree(tmp_path / "tree"), tmp_path / f"clean.{kind}")
    names = sorted(member_bytes(clean))
    rng = random.Random(f"{SEED}-{kind}-{how}")
    for case in range(CASES):
        archive = tmp_path / f"case{case}" / f"train.{kind}"
        archive.parent.mkdir()
        archive.write_bytes(damaged(clean.read_bytes(), rng, how))
        result = convert(archive.parent / "run", archive, shards=2)  # run_snakemake's timeout bounds a hang
        where = f"case {case} ({how} of {kind})"
        assert result.run.returncode in (0, 1), f"{where}: ended by a signal\n{result.run.output[-3000:]}"
        if result.run.returncode == 1:
            assert str(archive) in result.run.output, f"{where}: the archive is not named\n{result.run.output[-3000:]}"
            continue
        close_all_envs()
        ds, held = LMDBDataset(result.lmdb, decode="bytes"), member_bytes(archive)
        assert sorted(path for path, _ in ds.samples) == names, f"{where}: images lost or renamed"
        for index, (path, _) in enumerate(ds.samples):
            assert ds.get_bytes(index) == held[path], f"{where}: {path} is not the archive's image"
