"""A disk that fills up while write_meta writes the final file (issue 21), on real full disks: small
tmpfs mounts in a mount namespace of the test's own (``unshare``; gone with it, nothing left
mounted), with results on a disk of their own, and with results, work and the logs on one disk
that fills up after merge. The message names the disk, what was needed and what is free; the job
exits 1 (not 120, Python's status when even its log cannot be written); no partial file stays; and
once there is room, the same command finishes the file exactly as a run that never lacked it."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from support.datasets import assert_same_dataset
from support.workflow import Converted, snakemake_command, snakemake_environment, write_config

pytestmark = pytest.mark.usefixtures("fresh_envs")

NAMESPACE = ["unshare", "--user", "--map-root-user", "--mount"]
FULL = re.compile(
    r"ERROR in rule write_meta: no space left on the device holding (\S+) \(the file system mounted at (\S+)\) "
    r"while writing it: about ([\d.,]+) (KB|MB) needed there, ([\d.,]+) (KB|MB) free\. Free some space \(or point "
    r"`work`/`results` elsewhere\) and run the same command again\."
)
MB = {"KB": 1e3, "MB": 1e6}
SHARDS = 3  # as the session's clean conversion (conftest.py's ``converted``)
#: Takes every free byte of the disk mounted at data/.
FILL = shlex.join(
    [
        "python",
        "-c",
        "import os, shutil; fd = os.open('data/filler', os.O_CREAT | os.O_WRONLY); "
        "os.posix_fallocate(fd, 0, shutil.disk_usage('data').free)",
    ]
)


@pytest.fixture(scope="module")
def namespaces() -> None:
    """Skip, saying why, where this user may not mount in a namespace of its own."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed")
    trial = subprocess.run([*NAMESPACE, "true"], capture_output=True, text=True, check=False)
    if trial.returncode != 0:
        pytest.skip(f"no mount namespace for this user: {trial.stderr.strip()}")


def in_namespace(workdir: Path, steps: list[str]) -> list[tuple[int, str]]:
    """Run shell ``steps`` in one mount namespace, in ``workdir``; each step's exit status and output
    (kept in files beside, on the real disk)."""
    script = []
    for number, step in enumerate(steps):
        script.append(f"({step}) > step{number}.out 2>&1; echo $? > step{number}.rc")
    subprocess.run(
        [*NAMESPACE, "sh", "-c", "\n".join(script)], cwd=workdir, env=snakemake_environment(), timeout=900, check=True
    )
    return [
        (int((workdir / f"step{n}.rc").read_text()), (workdir / f"step{n}.out").read_text()) for n in range(len(steps))
    ]


def snakemake(workdir: Path, *args: str) -> str:
    return shlex.join(
        [*snakemake_command(workdir, "--cores", "2", "--configfile", str(workdir / "config.yaml")), *args]
    )


def megabytes(number: str, unit: str) -> float:
    return float(number.replace(",", "")) * MB[unit] / 1e6


def test_results_on_a_disk_too_small_for_them(
    namespaces: None, image_tree: Path, converted: Converted, tmp_path: Path
) -> None:
    (tmp_path / "results").mkdir()
    write_config(tmp_path, {"train": {"source": str(image_tree), "shards": SHARDS}})
    steps = in_namespace(
        tmp_path,
        [
            "mount -t tmpfs -o size=1m tmpfs results",
            snakemake(tmp_path),
            "find results -type f ! -name .imagefolder-lmdb.lock",  # the controllers' lock is no output
            "stat -c %s work/train/merged.lmdb",
            "umount results && mount -t tmpfs -o size=64m tmpfs results",  # room made
            snakemake(tmp_path),
            "cp results/train.lmdb finished.lmdb",
        ],
    )
    (mounted, _), (status, output), (_, left), (_, merged), _, (again, rerun), _ = steps
    assert mounted == 0
    assert status == 1, output[-3000:]
    found = FULL.search(output)
    assert found, output[-3000:]
    assert found.group(1, 2) == ("results/train.lmdb", str(tmp_path / "results")), "the disk of the results"
    needed, free = megabytes(*found.group(3, 4)), megabytes(*found.group(5, 6))
    assert int(merged) / 1e6 < needed < int(merged) / 1e6 + 1, "the copy of the merged file and its meta"
    assert free == pytest.approx(1.0, 0.1)
    assert left.strip() == "", "nothing left on the results disk"
    assert again == 0, rerun[-3000:]
    assert_same_dataset(tmp_path / "finished.lmdb", converted.lmdb)


def test_results_work_and_logs_on_one_disk_that_fills_up(
    namespaces: None, image_tree: Path, converted: Converted, tmp_path: Path
) -> None:
    (tmp_path / "data").mkdir()
    splits = {"train": {"source": str(image_tree), "shards": SHARDS}}
    write_config(tmp_path, splits, results="data/results", work="data/work")
    steps = in_namespace(
        tmp_path,
        [
            "mount -t tmpfs -o size=32m tmpfs data",
            # the merged file as a target: --until stops at checkpoint count_check (Snakemake issue 2824)
            snakemake(tmp_path, "--", "data/work/train/merged.lmdb"),
            FILL,  # the disk is full once merge is done
            snakemake(tmp_path),
            "find data/results -type f ! -name .imagefolder-lmdb.lock 2>/dev/null; true",
            "rm data/filler",
            snakemake(tmp_path),
            "cp data/results/train.lmdb finished.lmdb",
        ],
    )
    (mounted, _), (merged, merging), (filled, _), (status, output), (_, left), _, (again, rerun), _ = steps
    assert mounted == merged == filled == 0, merging[-3000:]
    assert status == 1, output[-3000:]
    found = FULL.search(output)
    assert found, output[-3000:]
    assert found.group(1, 2) == ("data/results/train.lmdb", str(tmp_path / "data"))
    assert megabytes(*found.group(5, 6)) == 0
    log = "data/work/logs/write_meta/train.log"
    assert (
        f"(its log {log} could not be written: no room on the file system mounted at {tmp_path / 'data'}, 0 KB free)"
    ) in output
    assert "returned non-zero exit status 1." in output, "the job's own status, not 120"
    assert left.strip() == "", "no partial file left on the full disk"
    assert again == 0, rerun[-3000:]
    assert_same_dataset(tmp_path / "finished.lmdb", converted.lmdb)
