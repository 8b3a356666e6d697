"""An interruption is an interruption (issue 43): SIGINT or SIGTERM at any moment of
``imagefolder-lmdb convert`` ends with one short message (how far each split got, the true counts,
and that the same command goes on), exit status 128 + the signal, no traceback, no "failed", no log
to read; nothing of the run is left running and its lock is released; the same command then
finishes with the files a clean run makes. A signal sent to the calling process alone (a notebook's
interrupt, ``kill -INT PID``) stops Snakemake and its jobs too, and ``convert()`` raises
KeyboardInterrupt after the same message. A plain ``snakemake --logger imagefolder-lmdb`` ends with
the same closing lines.

Each signal lands at a hold point of the workflow (IMAGEFOLDER_LMDB_TEST_HOLD: the step reaching it
writes the marker file and waits there), never after a sleep.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from imagefolder_lmdb.board.progress import PROGRESS_SUFFIX, Progress, read_progress
from imagefolder_lmdb.run import shared_temporaries
from support.datasets import assert_same_dataset
from support.images import make_images
from support.interrupting import StartedCommands
from support.workflow import kill_tree, published, snakemake_environment, wait_for_hold

COMMAND = [sys.executable, "-m", "imagefolder_lmdb.cli", "convert"]
#: One split of 24 images in 2 shards, one job at a time: the held shard is the only one running.
IMAGES, SHARDS = 24, 2
OPTIONS = ["--shards", str(SHARDS), "--cores", "1"]
CLOSING = "Run the same command again: it goes on from there."


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("interrupt") / "images"
    make_images(str(folder), images=IMAGES, classes=2, seed=8, workers=1)
    return folder


@pytest.fixture(scope="module")
def clean(source: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The OUTDIR of an uninterrupted run."""
    folder = tmp_path_factory.mktemp("clean")
    finished(run(folder, [*COMMAND, source, "out", *OPTIONS]))
    return folder / "out"


def run(cwd: Path, command: list[str | Path]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(map(str, command)), cwd=cwd, env=snakemake_environment(), capture_output=True, text=True, timeout=600
    )


def finished(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    return result


def held(
    commands: StartedCommands, cwd: Path, command: list[str | Path], hold: str
) -> tuple[subprocess.Popen[str], Path]:
    """``command`` started as a shell's foreground job (its own process group, SIGINT at its default,
    however the suite was started), parked at ``hold``; ended with the test whatever its outcome."""
    marker = cwd / "held"
    environment = {**snakemake_environment(), "IMAGEFOLDER_LMDB_TEST_HOLD": hold}
    environment["IMAGEFOLDER_LMDB_TEST_HOLD_MARKER"] = str(marker)
    process = commands.start(command, cwd=cwd, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for_hold(marker, process, timeout=300)
    return process, marker


def left_running(marker: Path) -> list[int]:
    """Processes of the run still alive: every one of them has the hold marker in its environment."""
    needle = f"IMAGEFOLDER_LMDB_TEST_HOLD_MARKER={marker}".encode()
    alive = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and needle in (entry / "environ").read_bytes().split(b"\0"):
                alive.append(int(entry.name))
        except OSError:
            continue
    return alive


def stopped_by(process: subprocess.Popen[str], signum: int, group: bool) -> tuple[int, str, str]:
    """Send ``signum`` to the command's process group (a terminal's Ctrl-C) or to it alone."""
    if group:
        os.killpg(process.pid, signum)
    else:
        process.send_signal(signum)
    stdout, stderr = process.communicate(timeout=300)
    return process.returncode, stdout, stderr


def assert_only_the_message(stderr: str, first_line: str) -> None:
    """The last lines are the message; nothing of a failure anywhere."""
    assert stderr.splitlines()[-2:] == [first_line, CLOSING], stderr
    for word in ("Traceback", "failed", "log", "Snakemake", "Error"):
        assert word not in stderr, stderr


def kept_before_the_hold(out: Path, shard: int = 1) -> int:
    """Images a rerun does not encode again when shard ``shard`` parks halfway: the other shard's, if it
    ran first (one job at a time: it had finished for Snakemake too); none of the held one's."""
    return IMAGES // SHARDS if (out / f"work/train/parts/{1 - shard:05d}.json").exists() else 0


def shard_progress(out: Path) -> dict[int, Progress]:
    """Each shard's progress file (its encode job's count and start), where a job has written one."""
    files = {shard: out / f"work/train/parts/{shard:05d}{PROGRESS_SUFFIX}" for shard in range(SHARDS)}
    return {shard: read_progress(str(path)) for shard, path in files.items() if path.exists()}


def test_ctrl_c_to_the_command_alone_while_encoding(
    commands: StartedCommands, source: Path, clean: Path, tmp_path: Path
) -> None:
    """SIGINT to the command alone (``kill -INT PID``): Snakemake and the held job stop, the line
    gives the true count, and the same command finishes as a clean run does."""
    process, marker = held(commands, tmp_path, [*COMMAND, source, "out", *OPTIONS], "encode_shard:1")
    status, _, stderr = stopped_by(process, signal.SIGINT, group=False)
    assert status == 130
    kept = kept_before_the_hold(tmp_path / "out")
    assert_only_the_message(stderr, f"interrupted: train {kept}/{IMAGES} images encoded and kept.")
    assert left_running(marker) == []
    finished(run(tmp_path, [*COMMAND, source, "out", *OPTIONS]))  # the lock is free, nothing is lost
    assert published(tmp_path / "out") == published(clean)
    assert_same_dataset(tmp_path / "out" / "train.lmdb", clean / "train.lmdb")


@pytest.mark.parametrize("shard", [0, 1])
def test_ctrl_c_counts_only_what_a_rerun_keeps(
    commands: StartedCommands, shard: int, source: Path, clean: Path, tmp_path: Path
) -> None:
    """Ctrl-C while a shard runs: the line counts the images of finished shards only, which the rerun
    leaves alone, and none of the interrupted shard's, which it encodes again from its first (the line
    said "1,049/1,170 images encoded" when no shard had finished, and the rerun started at 0; issue 57).
    One job at a time: whichever shard Snakemake runs first, one of the two holds finds the other
    finished and the other finds none."""
    out = tmp_path / "out"
    process, _ = held(commands, tmp_path, [*COMMAND, source, "out", *OPTIONS], f"encode_shard:{shard}")
    status, _, stderr = stopped_by(process, signal.SIGINT, group=True)
    assert status == 130
    kept = kept_before_the_hold(out, shard)
    assert_only_the_message(stderr, f"interrupted: train {kept}/{IMAGES} images encoded and kept.")
    before = shard_progress(out)
    assert 0 < before[shard].done < IMAGES // SHARDS  # encoded in part: what the line left out
    finished(run(tmp_path, [*COMMAND, source, "out", *OPTIONS]))
    after = shard_progress(out)
    assert after[shard].started > before[shard].started and after[shard].done == IMAGES // SHARDS  # all again
    other = 1 - shard
    assert (after[other] == before.get(other)) == bool(kept)  # a kept shard is not encoded again
    assert_same_dataset(out / "train.lmdb", clean / "train.lmdb")


def test_sigterm_while_merging(commands: StartedCommands, source: Path, tmp_path: Path) -> None:
    """SIGTERM (a scheduler, ``kill``): the same, exit status 143 (the rerun: test_the_other_moments)."""
    process, marker = held(commands, tmp_path, [*COMMAND, source, "out", *OPTIONS], "merge")
    status, _, stderr = stopped_by(process, signal.SIGTERM, group=False)
    assert status == 143
    line = f"interrupted by SIGTERM: train {IMAGES}/{IMAGES} images encoded, stopped while merging."
    assert_only_the_message(stderr, line)
    assert left_running(marker) == []


def test_ctrl_c_while_the_command_lists_source(commands: StartedCommands, source: Path, tmp_path: Path) -> None:
    """Before Snakemake starts (SOURCE being listed): the same message, nothing started."""
    process, _ = held(commands, tmp_path, [*COMMAND, source, "out", *OPTIONS], "plan")
    status, stdout, stderr = stopped_by(process, signal.SIGINT, group=True)
    assert status == 130 and stdout == ""
    assert stderr.splitlines() == ["interrupted: nothing started.", CLOSING]


@pytest.mark.parametrize("signum", [signal.SIGINT, pytest.param(signal.SIGTERM, marks=pytest.mark.slow)])
def test_convert_stops_when_the_caller_alone_is_interrupted(
    commands: StartedCommands, signum: int, source: Path, tmp_path: Path
) -> None:
    """A notebook's interrupt reaches the kernel alone: convert() stops Snakemake and the listing
    job, says how far it got, and raises KeyboardInterrupt. SIGTERM: the same lines, then the
    caller's handler (the default here: the process ends by the signal)."""
    script = (
        "import sys\nfrom imagefolder_lmdb import convert\n"
        f"try:\n    convert({str(source)!r}, 'out', shards={SHARDS}, cores=1)\n"
        "except KeyboardInterrupt as exc:\n    print('KeyboardInterrupt', type(exc).__name__)\n    sys.exit(7)\n"
    )
    process, marker = held(commands, tmp_path, [sys.executable, "-c", script], "count_check")
    status, stdout, stderr = stopped_by(process, signum, group=False)
    assert stderr.endswith("\nCall it again the same way: it goes on from there.\n"), stderr  # Python's words
    stderr = stderr.replace("Call it again the same way", "Run the same command again")
    if signum == signal.SIGINT:
        assert (status, stdout) == (7, "KeyboardInterrupt Interrupted\n")
        assert_only_the_message(stderr, "interrupted: train listing.")
    else:
        assert (status, stdout) == (-signal.SIGTERM, "")
        assert_only_the_message(stderr, "interrupted by SIGTERM: train listing.")
    assert left_running(marker) == []


def test_plain_snakemake_with_the_logger_ends_with_the_same_lines(
    commands: StartedCommands, source: Path, tmp_path: Path
) -> None:
    """Ctrl-C in a terminal reaches Snakemake and its jobs together: the plugin's closing lines."""
    import yaml

    from imagefolder_lmdb import SNAKEFILE

    splits = {"train": {"source": str(source), "shards": SHARDS}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"results": "out", "splits": splits}))
    command = [sys.executable, "-m", "snakemake", "-s", SNAKEFILE, "--cores", "1", "--configfile", "config.yaml"]
    process, _ = held(commands, tmp_path, [*command, "--logger", "imagefolder-lmdb"], "encode_shard:1")
    status, _, stderr = stopped_by(process, signal.SIGINT, group=True)
    assert status != 0  # Snakemake's own
    kept = kept_before_the_hold(tmp_path / "out")
    assert stderr.splitlines()[-2:] == [f"interrupted: train {kept}/{IMAGES} images encoded and kept.", CLOSING]
    assert "failed" not in stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("hold", "signum"), [("count_check", signal.SIGTERM), ("merge", signal.SIGTERM), ("verify", signal.SIGINT)]
)
def test_the_other_moments(
    commands: StartedCommands, hold: str, signum: int, source: Path, clean: Path, tmp_path: Path
) -> None:
    """Listing and verifying, as a terminal's Ctrl-C (the whole group) or a SIGTERM."""
    process, marker = held(commands, tmp_path, [*COMMAND, source, "out", *OPTIONS], hold)
    status, _, stderr = stopped_by(process, signum, group=True)
    assert status == 128 + signum
    words = "interrupted" if signum == signal.SIGINT else "interrupted by SIGTERM"
    stage = {"merge": "merging", "verify": "verifying"}.get(hold)
    reached = f"train {IMAGES}/{IMAGES} images encoded, stopped while {stage}" if stage else "train listing"
    assert_only_the_message(stderr, f"{words}: {reached}.")
    assert left_running(marker) == []
    finished(run(tmp_path, [*COMMAND, source, "out", *OPTIONS]))
    assert published(tmp_path / "out") == published(clean)
    assert_same_dataset(tmp_path / "out" / "train.lmdb", clean / "train.lmdb")


def test_a_command_killed_outright_leaves_nothing_running(
    commands: StartedCommands, source: Path, tmp_path: Path
) -> None:
    """SIGKILL (the OOM killer) to the command alone: Snakemake, in its own process group, sees its
    parent gone and stops its jobs as a Ctrl-C would, releasing the results folder."""
    import time

    from imagefolder_lmdb.run.lock import held_elsewhere

    process, marker = held(commands, tmp_path, [*COMMAND, source, "out", *OPTIONS], "encode_shard:1")
    process.kill()
    process.communicate()
    deadline = time.monotonic() + 120
    while left_running(marker):  # a deadline for a stuck run, not a measure of speed
        assert time.monotonic() < deadline, f"still running: {left_running(marker)}"
        time.sleep(0.1)
    assert not held_elsewhere(str(tmp_path / "out"))


def test_a_killed_config_file_run_leaves_no_temporaries_behind(
    commands: StartedCommands, source: Path, tmp_path: Path
) -> None:
    """A run from a config file owns no work folder before Snakemake starts, so its temporaries (its
    own, Snakemake's and the jobs') are in $TMPDIR, named with its host and PID and marked: after a
    SIGKILL of the whole tree, the next run removes them, and only them ($TMPDIR is shared: a user's
    folders of any look-alike name, another host's run, an earlier release's folder stay; issue 57)."""
    scratch = tmp_path / "tmp"
    others = look_alike_folders(scratch)
    config = {"results": "out", "work": "out/work", "splits": {"train": {"source": str(source), "shards": SHARDS}}}
    (tmp_path / "config.yaml").write_text(json.dumps(config))
    command: list[str | Path] = [*COMMAND, "--configfile", "config.yaml", "--cores", "1"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TMPDIR", str(scratch))
        patch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
        process, _ = held(commands, tmp_path, command, "encode_shard:0")
        left = [path.name for path in scratch.iterdir() if path not in others]
        kill_tree(process)  # Snakemake too, in a process group of its own
        _, killed_stderr = process.communicate()
        own = f"{shared_temporaries.own_prefix().rsplit('.', 2)[0]}.{process.pid}."
        assert left and all(name.startswith(own) for name in left), left
        assert killed_stderr.count(str(scratch / "imagefolder-lmdb-4194301-abcd1234")) == 2, killed_stderr
        assert "imagefolder-lmdb-77777" not in killed_stderr  # not of an earlier release's shape
        assert "earlier release" not in finished(run(tmp_path, command)).stderr  # named once
    assert sorted(scratch.iterdir()) == sorted(others), "the killed run's temporaries stayed, or another's went"
    assert all(any(folder.iterdir()) for folder in others), "a folder's contents went"


def look_alike_folders(scratch: Path) -> list[Path]:
    """Folders in $TMPDIR that the clean-up must leave, each holding a file: a user's named like ours,
    an earlier release's shape (a dead PID), a verify's, one of this shape from another host or
    without its marker, and one whose owner (this test) is alive."""
    dead = 4194301  # above the kernel's largest PID (2**22): no such process
    own_prefix = shared_temporaries.own_prefix().rsplit(".", 2)[0]
    other_host = f"{shared_temporaries.PREFIX}{shared_temporaries.host_label('node-17')}.{dead}.abcd1234"
    folders = {
        "imagefolder-lmdb-2024-12-01": None,
        "imagefolder-lmdb-99999-notes": None,
        "imagefolder-lmdb-77777": None,
        f"imagefolder-lmdb-{dead}-abcd1234": None,
        "imagefolder-lmdb-verify-x": None,
        "someone-else": None,
        other_host: {"host": "node-17", "pid": dead, "started": 1},
        f"{own_prefix}.{dead}.nomarker": None,
        f"{own_prefix}.{os.getpid()}.alive___": shared_temporaries.owner_record(os.getpid()),
    }
    for name, owner in folders.items():
        (scratch / name).mkdir(parents=True)
        (scratch / name / "data.txt").write_text("a user's data")
        if owner is not None:
            (scratch / name / shared_temporaries.MARKER).write_text(json.dumps(owner))
    return [scratch / name for name in folders]
