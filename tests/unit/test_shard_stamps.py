"""The shard stamps count_check writes (issue 31): a change to one class folder changes the stamps of
the shards holding its images and no other, an archive's change every stamp, and an encode job
refuses a manifest whose lines are not the ones its stamp names."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from imagefolder_lmdb.sources import source_of_kind
from imagefolder_lmdb.work.files import (
    DamagedWorkFileError,
    ManifestHeader,
    Sample,
    SourceDescription,
    read_shard_report,
    shard_range,
    write_manifest,
)
from imagefolder_lmdb.work.shard_stamps import StaleStampError, checked_range, read_shard_stamp, write_shard_stamps

CLASSES, PER_CLASS, SHARDS = ["ant", "bee", "cat", "dog"], 3, 4


def folder_source(root: Path) -> tuple[SourceDescription, list[Sample]]:
    samples = []
    for label, name in enumerate(CLASSES):
        (root / name).mkdir(parents=True, exist_ok=True)
        for k in range(PER_CLASS):
            (root / name / f"{k}.jpg").write_bytes(b"x" * (k + 1))
            samples.append(Sample(len(samples), label, f"{name}/{k}.jpg"))
        settled = time.time() - 60
        os.utime(root / name, (settled, settled))
    return SourceDescription("folder", str(root), "imagefolder", root=str(root)), samples


def stamps(tmp_path: Path, description: SourceDescription, samples: list[Sample], run: str) -> list[str]:
    """Each shard's stamp (the file's bytes) for a manifest of ``samples`` written now."""
    manifest = tmp_path / run / "manifest.jsonl"
    manifest.parent.mkdir()
    header = ManifestHeader(root=str(description.root), classes=CLASSES, count=len(samples))
    write_manifest(str(manifest), header, samples)
    origins = source_of_kind(description.kind).stamp_origins(description, {})  # as count_check asks the source
    write_shard_stamps(str(tmp_path / run / "shards"), str(manifest), SHARDS, origins, samples)
    return [(tmp_path / run / "shards" / f"{n:05d}.json").read_text() for n in range(SHARDS)]


def shards_of(samples: list[Sample], class_name: str) -> set[int]:
    held = [s.index for s in samples if s.path.startswith(f"{class_name}/")]
    ranges = [shard_range(len(samples), SHARDS, n) for n in range(SHARDS)]
    return {n for n, (start, stop) in enumerate(ranges) if start <= held[-1] and held[0] < stop}


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the listing cache lies under the working folder's .snakemake/


def test_a_file_replaced_in_one_class_folder_changes_only_its_shards(tmp_path: Path) -> None:
    description, samples = folder_source(tmp_path / "tree")
    before = stamps(tmp_path, description, samples, "first")
    assert stamps(tmp_path, description, samples, "again") == before, "the same source, the same stamps"

    replacement = tmp_path / "new.jpg"
    replacement.write_bytes(b"another image")
    replacement.replace(tmp_path / "tree" / "bee" / "1.jpg")  # mv: the folder's time moves
    after = stamps(tmp_path, description, samples, "after")
    changed = {n for n in range(SHARDS) if after[n] != before[n]}
    assert changed == shards_of(samples, "bee")
    assert 0 < len(changed) < SHARDS


def test_an_archive_changed_changes_every_shard(tmp_path: Path) -> None:
    archive = tmp_path / "train.tar"
    archive.write_bytes(b"tar bytes")
    samples = [Sample(n, n % 2, f"c{n % 2}/{n}.jpg") for n in range(12)]
    description = SourceDescription("index", str(archive), "imagefolder", containers=[str(archive)])
    before = stamps(tmp_path, description, samples, "first")
    archive.write_bytes(b"other tar bytes")
    after = stamps(tmp_path, description, samples, "after")
    assert all(a != b for a, b in zip(after, before, strict=True))


def test_a_manifest_that_is_not_the_stamps_is_refused(tmp_path: Path) -> None:
    description, samples = folder_source(tmp_path / "tree")
    stamps(tmp_path, description, samples, "run")
    manifest, stamp = tmp_path / "run" / "manifest.jsonl", str(tmp_path / "run" / "shards" / "00002.json")
    assert checked_range(stamp, str(manifest), 2, SHARDS) == shard_range(len(samples), SHARDS, 2)
    assert read_shard_stamp(stamp).shard == 2

    lines = manifest.read_text().splitlines()
    lines[7] = lines[7].replace('"cat/', '"cat/x')  # shard 2's slice, edited by hand
    manifest.write_text("\n".join(lines) + "\n")
    with pytest.raises(StaleStampError, match=r"--forcerun count_check") as error:
        checked_range(stamp, str(manifest), 2, SHARDS)
    assert str(manifest) in str(error.value) and stamp in str(error.value)
    assert checked_range(str(tmp_path / "run" / "shards" / "00000.json"), str(manifest), 0, SHARDS) == (0, 3)
    with pytest.raises(StaleStampError):  # another shard count than the stamp was written for
        checked_range(str(tmp_path / "run" / "shards" / "00000.json"), str(manifest), 0, SHARDS + 1)


def test_the_summary_says_what_the_work_folder_keeps_and_its_size(tmp_path: Path) -> None:
    from imagefolder_lmdb.board.summary import work_line
    from imagefolder_lmdb.work.paths import RunPaths

    paths = RunPaths(str(tmp_path / "results"), str(tmp_path / "work"))
    assert work_line(paths, "train") == []  # no work folder (--clean)
    parts = Path(paths.part("train", "00000")).parent
    parts.mkdir(parents=True)
    (parts / "00000.json").write_bytes(b"r" * 100_000)  # reports are no copy of the images
    (line,) = work_line(paths, "train")
    assert line.startswith(f"  work: 0.1 MB in {parts.parent} (manifest, stamps, reports); safe to delete")
    (parts / "00000.lmdb").write_bytes(b"p" * 200_000)  # keep_parts: a PNG source's re-encoded images, say
    (line,) = work_line(paths, "train")
    assert "0.3 MB" in line and "of which 0.2 MB of parts, needed only with keep_parts" in line


def test_a_damaged_part_report_is_named_with_the_way_out(tmp_path: Path) -> None:
    report = tmp_path / "00000.json"
    report.write_text("garbage")
    with pytest.raises(DamagedWorkFileError, match=r"00000\.json: not the JSON this workflow wrote .* Delete it"):
        read_shard_report(str(report))
