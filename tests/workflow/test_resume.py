"""Crash safety: SIGKILL at every stage, a failed shard, determinism, a full disk, two runs at once.

The kill moments are made exact with the scripts' test hook (IMAGEFOLDER_LMDB_TEST_HOLD): a script
reaching the named point parks there, and the test kills the whole process group, Snakemake and
jobs together, as a power cut or the OOM killer would. Two more kills land wherever the jobs are
once a number of shards have reported: placed by progress, never by a share of some run's time.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import lmdb
import pytest
from torchvision.datasets import ImageFolder

from imagefolder_lmdb.reader import LMDBDataset, close_all_envs
from imagefolder_lmdb.run.made_from import RECORDED_VARIABLE
from support.archives import make_tar
from support.datasets import assert_same_dataset
from support.workflow import (
    Converted,
    executed_jobs,
    kill_group,
    run_snakemake,
    settle,
    start_snakemake,
    wait_for_hold,
    write_config,
)

SHARDS = 8


HOLD_POINTS = ["extract", "count_check", "encode_shard:3", "merge", "write_meta", "verify"]


def assert_nothing_incomplete_at_final_paths(workdir: Path) -> None:
    """Whatever exists under its final name while the run is dead must be whole."""
    work, results = workdir / "work" / "train", workdir / "results"
    if (results / "train.lmdb").exists():
        ds = LMDBDataset(results / "train.lmdb")
        assert all(ds.check_crc(i) for i in range(len(ds)))
    for report in [*results.glob("*.json"), *work.glob("*.json"), *work.glob("parts/*.json")]:
        json.loads(report.read_text())
    if (work / "manifest.jsonl").exists():
        lines = (work / "manifest.jsonl").read_text().splitlines()
        assert json.loads(lines[0])["count"] == len(lines) - 1
    if (work / "source").exists():
        description = json.loads((work / "source" / "source.json").read_text())
        if description["kind"] == "index":  # an archive read in place: the member index is whole
            members = (work / "source" / "members.jsonl").read_text().splitlines()
            assert len(members) == description["members"]
        else:
            assert Path(description["root"]).is_dir()
    for part in work.glob("parts/*.lmdb"):
        report = part.with_suffix(".json")
        with lmdb.open(str(part), subdir=False, readonly=True, lock=False) as env:
            if report.exists():  # parts hold the re-encoded images; the others come from the source
                reencoded = [code for code in json.loads(report.read_text())["storage"] if code not in (0, 8)]
                assert env.stat()["entries"] == len(reencoded)
    if (work / "merged.lmdb").exists() and not (results / "train.lmdb").exists():
        with lmdb.open(str(work / "merged.lmdb"), subdir=False, readonly=True, lock=False) as env:
            assert env.stat()["entries"] > 0


def assert_no_leftovers(workdir: Path) -> None:
    leftovers = [p for p in workdir.rglob("*") if ".incomplete" in p.name]
    leftovers += list(workdir.glob("work/train/merged.lmdb"))
    assert leftovers == []
    # temp(): the parts are removed once merged, after a kill and a rerun too (keep_parts: false)
    assert list(workdir.glob("work/train/parts/*.lmdb")) == []


@pytest.fixture(scope="module")
def tree_archive(image_tree: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test tree as a tar, so extract does real work that can be interrupted."""
    return make_tar(image_tree, tmp_path_factory.mktemp("archive") / "train.tar")


@pytest.fixture(scope="module")
def clean_lmdb(tree_archive: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    workdir = tmp_path_factory.mktemp("clean")
    write_config(workdir, {"train": {"source": str(tree_archive), "shards": SHARDS}})
    run_snakemake(workdir, "--configfile", str(workdir / "config.yaml")).check()
    return workdir / "results" / "train.lmdb"


#: Kills without a hold point, once this many shards have reported: the kill lands wherever the
#: other jobs are then (inside a part's write, between two jobs), by progress, not by the clock.
KILLS_AFTER_SHARDS = {"after 1 shard's report": 1, f"after {SHARDS - 3} shards' reports": SHARDS - 3}


@pytest.mark.parametrize("moment", [*HOLD_POINTS, *KILLS_AFTER_SHARDS])
def test_sigkill_then_same_command_finishes_identically(
    moment: str, tree_archive: Path, clean_lmdb: Path, tmp_path: Path
) -> None:
    write_config(tmp_path, {"train": {"source": str(tree_archive), "shards": SHARDS}})
    if moment in KILLS_AFTER_SHARDS:
        process, _ = start_snakemake(tmp_path)
        wait_for_shard_reports(tmp_path, KILLS_AFTER_SHARDS[moment], process)
    else:
        process, marker = start_snakemake(tmp_path, hold=moment)
        wait_for_hold(marker, process)
    kill_group(process)
    assert_nothing_incomplete_at_final_paths(tmp_path)

    run_snakemake(tmp_path, "--configfile", str(tmp_path / "config.yaml")).check()
    assert_same_dataset(tmp_path / "results" / "train.lmdb", clean_lmdb)
    assert_no_leftovers(tmp_path)


def wait_for_shard_reports(workdir: Path, count: int, process: subprocess.Popen, timeout: float = 300) -> None:
    """Return once ``count`` shards of the running conversion have written their reports."""
    deadline = time.monotonic() + timeout
    while len(list((workdir / "work" / "train" / "parts").glob("*.json"))) < count:
        assert process.poll() is None, f"snakemake ended before {count} shards had reported"
        assert time.monotonic() < deadline, f"{count} shards did not report within {timeout:.0f} s"
        time.sleep(0.02)


def test_failed_shard_is_the_only_thing_rerun(tree_copy: Path, tmp_path: Path) -> None:
    images = sorted(tree_copy.rglob("*.JPEG"))
    victim = images[len(images) // 2]
    original = victim.read_bytes()
    victim.write_bytes(b"not an image at all")
    settle(tree_copy)  # an edit in place is then unseen
    config = write_config(tmp_path, {"train": {"source": str(tree_copy), "shards": SHARDS}})

    failed = run_snakemake(tmp_path, "--configfile", str(config), "--keep-going")
    assert failed.returncode != 0
    assert str(victim) in failed.output
    reports = sorted((tmp_path / "work" / "train" / "parts").glob("*.json"))
    assert len(reports) == SHARDS - 1, "every other shard finished"

    # Fixed in place (cp, curl -o): its size and time changed, so the split is listed again (a stat
    # per file), but the shards' stamps keep: only the failed shard runs. A new file renamed over it
    # is a source change whose class folder's shards are encoded again (tests/workflow/test_source_change.py).
    victim.write_bytes(original)
    rerun = run_snakemake(tmp_path, "--configfile", str(config)).check()
    jobs = executed_jobs(rerun.output)
    encode = [job for job in jobs if job.startswith("encode_shard")]
    assert len(encode) == 1, jobs
    missing = {f"{n:05d}" for n in range(SHARDS)} - {r.stem for r in reports}
    assert encode == [f"encode_shard:split=train, shard={missing.pop()}"]
    downstream = sorted(job for job in jobs if not job.startswith("encode_shard"))
    assert downstream == ["all", "count_check", "extract", "merge", "report_split", "verify", "write_meta"]


def test_files_added_to_or_removed_from_a_class_folder_are_seen(tree_copy: Path, tmp_path: Path) -> None:
    # Snakemake compares a folder input by the folder's own time, which a file added to or removed
    # from a class folder leaves alone: the workflow must still list the source again, and writes the
    # change as the split's next revision before its DAG (issue 58).
    config = write_config(tmp_path, {"train": {"source": str(tree_copy), "shards": SHARDS}})
    run_snakemake(tmp_path, "--configfile", str(config)).check()
    images = sorted(tree_copy.rglob("*.JPEG"))
    images[3].unlink()
    shutil.copy(images[0], images[-1].with_name("zz_added.JPEG"))

    rerun = run_snakemake(tmp_path, "--configfile", str(config)).check()
    assert "train: revision 2: 1 added, 0 relabelled, 1 removed" in rerun.output
    folder, ds = ImageFolder(str(tree_copy)), LMDBDataset(tmp_path / "results" / "train.lmdb")
    assert [path for path, _ in ds.samples] == [Path(p).relative_to(tree_copy).as_posix() for p, _ in folder.samples]
    assert ds.targets == folder.targets
    assert "Nothing to be done" in run_snakemake(tmp_path, "--configfile", str(config)).check().output


@pytest.mark.parametrize(("shards", "cores"), [(1, 1), (7, 2), (16, 1), (16, 2)])
def test_same_records_whatever_the_shards_and_cores(
    shards: int, cores: int, image_tree: Path, converted: Converted, tmp_path: Path
) -> None:
    config = write_config(tmp_path, {"train": {"source": str(image_tree), "shards": shards}})
    run_snakemake(tmp_path, "--configfile", str(config), f"--cores={cores}").check()
    assert_same_dataset(tmp_path / "results" / "train.lmdb", converted.lmdb)


def mount_tmpfs(path: Path, size: str) -> bool:
    path.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    return (
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=False).returncode == 0
    )


@pytest.mark.parametrize("free_mb", [1.0, 3.5])
def test_disk_full_fails_cleanly_then_resumes(
    free_mb: float, image_tree: Path, converted: Converted, tmp_path: Path
) -> None:
    disk = tmp_path / "disk"
    if not mount_tmpfs(disk, "12m"):
        pytest.skip("needs root and tmpfs to simulate a full disk (mount -t tmpfs failed)")
    try:
        filler = disk / "filler"
        free = shutil.disk_usage(disk).free
        with open(filler, "wb") as stream:
            stream.write(b"\0" * (free - int(free_mb * 1e6)))
        config = write_config(
            tmp_path,
            {"train": {"source": str(image_tree), "shards": 2}},
            results=str(disk / "results"),
            work=str(disk / "work"),
        )
        failed = run_snakemake(tmp_path, "--configfile", str(config))
        assert failed.returncode != 0
        assert "no space left on the device" in failed.output
        assert "run the same command again" in failed.output
        assert not (disk / "results" / "train.lmdb").exists()

        filler.unlink()
        run_snakemake(tmp_path, "--configfile", str(config)).check()
        assert_same_dataset(disk / "results" / "train.lmdb", converted.lmdb)
        assert [p for p in disk.rglob("*") if ".incomplete" in p.name] == []
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def test_second_run_on_the_same_folder_is_refused_while_the_first_lives(image_tree: Path, tmp_path: Path) -> None:
    write_config(tmp_path, {"train": {"source": str(image_tree), "shards": 4}})
    first, marker = start_snakemake(tmp_path, hold="encode_shard:1")
    try:
        wait_for_hold(marker, first)
        second = run_snakemake(tmp_path, "--configfile", str(tmp_path / "config.yaml"))
        assert second.returncode != 0
        assert "another conversion is writing into results (it holds results/.imagefolder-lmdb.lock)" in second.output
    finally:
        kill_group(first)
    run_snakemake(tmp_path, "--configfile", str(tmp_path / "config.yaml")).check()
    assert len(LMDBDataset(tmp_path / "results" / "train.lmdb")) > 0


def test_source_changed_between_encode_and_merge_is_named(
    tree_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Passed-through images are copied from the source at merge time, checked against their CRC."""
    config = write_config(tmp_path, {"train": {"source": str(tree_copy), "shards": 2}})
    settle(tree_copy)  # an edit in place is then unseen
    # the shard reports as targets: --until stops at checkpoint count_check (Snakemake issue 2824)
    reports = [f"work/train/parts/0000{n}.json" for n in range(2)]
    run_snakemake(tmp_path, "--configfile", str(config), "--cores", "2", "--", *reports).check()
    victim = sorted(tree_copy.rglob("*.JPEG"))[-1]
    other = sorted(tree_copy.rglob("*.JPEG"))[-2]
    victim.write_bytes(other.read_bytes())  # a valid JPEG, but not the one that was checked
    # the write lands after the source was checked and listed (a later run would list it again and
    # encode its shard anew: tests/workflow/test_made_from.py): the source taken as recorded
    monkeypatch.setenv(RECORDED_VARIABLE, str(tmp_path / "work"))

    failed = run_snakemake(tmp_path, "--configfile", str(config))
    assert failed.returncode != 0
    assert f"{victim} changed after it was checked" in failed.output
    report = tmp_path / "work" / "train" / "parts" / "00001.json"
    assert f"Delete {report.relative_to(tmp_path)}" in failed.output or f"Delete {report}" in failed.output
    assert not (tmp_path / "results" / "train.lmdb").exists()

    report.unlink()
    run_snakemake(tmp_path, "--configfile", str(config)).check()
    ds = LMDBDataset(tmp_path / "results" / "train.lmdb")
    assert ds.get_bytes(len(ds) - 1) == other.read_bytes()


@pytest.mark.parametrize("moment", ["count_check", "encode_shard:3"])
def test_class_subset_killed_then_rerun_finishes_identically(
    moment: str, tree_archive: Path, image_tree: Path, tmp_path: Path
) -> None:
    classes = sorted(p.name for p in image_tree.iterdir())[1:3]
    splits = {"train": {"source": str(tree_archive), "shards": SHARDS}}
    clean = tmp_path / "clean"
    clean.mkdir()
    write_config(clean, splits, classes=classes)
    run_snakemake(clean, "--configfile", str(clean / "config.yaml")).check()

    killed = tmp_path / "killed"
    killed.mkdir()
    write_config(killed, splits, classes=classes)
    process, marker = start_snakemake(killed, hold=moment)
    wait_for_hold(marker, process)
    kill_group(process)
    assert_nothing_incomplete_at_final_paths(killed)
    run_snakemake(killed, "--configfile", str(killed / "config.yaml")).check()
    assert_same_dataset(killed / "results" / "train.lmdb", clean / "results" / "train.lmdb")
    close_all_envs()
    assert LMDBDataset(killed / "results" / "train.lmdb").classes == classes
    assert_no_leftovers(killed)
