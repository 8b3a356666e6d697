"""The front door's display: ``imagefolder-lmdb convert`` shows one progress board (per split,
images done/total, img/s, ETA, bad images) instead of Snakemake's per-job chatter, redrawn under a
terminal and as plain lines elsewhere; a failed conversion ends with the actionable lines, once; a
plain ``snakemake --logger imagefolder-lmdb`` run shows the same board (the logger plugin)."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

from support.images import jpeg_bytes
from support.workflow import run_snakemake, write_config

#: Lines of Snakemake's per-job output that the board replaces.
JOB_METADATA = re.compile(
    r"^\s*(localrule |rule |jobid: |input: |output: |wildcards: |resources: |Finished jobid)|steps \("
)
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def small_tree(root: Path, images: int = 12, bad: bool = False) -> Path:
    """An ImageFolder of two classes of small JPEGs (and one damaged file with ``bad``)."""
    for index in range(images):
        folder = root / ("cat" if index % 2 else "dog")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{index:03d}.jpg").write_bytes(jpeg_bytes(index))
    if bad:
        (root / "cat" / "broken.jpg").write_bytes(b"\xff\xd8 not a jpeg at all")
    return root


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "imagefolder_lmdb.cli", "convert", *args, "--cores", "2"]


def under_terminal(command: list[str], cwd: Path) -> tuple[int, str]:
    """``command`` run with a pseudo-terminal as its stdin, stdout and stderr; its exit status and output."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: the command, on the terminal
        os.chdir(cwd)
        os.execv(command[0], command)
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), b"".join(chunks).decode(errors="replace")


def shown(output: str) -> list[str]:
    """The lines as a terminal leaves them: each redraw (cursor up, erase) replaces the lines it moves back over."""
    screen: list[str] = []
    for line in output.replace("\r\n", "\n").split("\n"):
        for match in re.finditer(r"\x1b\[(\d+)F", line):
            del screen[len(screen) - int(match.group(1)) :]
        screen.append(ANSI.sub("", line))
    return [line for line in screen if line.strip()]


def test_terminal_shows_the_board_not_the_jobs(tmp_path: Path) -> None:
    source = small_tree(tmp_path / "images", images=14)
    status, output = under_terminal(cli(str(source), "out", "--shards", "2"), tmp_path)
    lines = shown(output)
    assert status == 0, output[-3000:]
    final = [i for i, line in enumerate(lines) if re.search(r"train: 14/14 images, .*0 bad \(done\)", line)]
    summary = [i for i, line in enumerate(lines) if line.startswith("train: 14 images, 2 classes, verified")]
    assert final and summary and final[-1] < summary[0], "the board's final state, then the summary"
    assert not [line for line in lines if JOB_METADATA.search(line)], "no Snakemake job metadata"
    assert "\x1b[" in output, "redrawn in place"


def test_log_file_gets_plain_lines(tmp_path: Path) -> None:
    source = small_tree(tmp_path / "images", images=10)
    result = subprocess.run(
        cli(str(source), "out", "--shards", "2"), cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "\x1b[" not in result.stderr, "no redraws into a file"
    periodic = [line for line in result.stderr.splitlines() if line.startswith("progress: train: ")]
    assert periodic, result.stderr
    assert "train: 10/10 images" in result.stderr.splitlines()[-1]
    assert not [line for line in result.stderr.splitlines() if JOB_METADATA.search(line)], result.stderr


def test_one_bad_image_ends_with_the_fix_once(tmp_path: Path) -> None:
    source = small_tree(tmp_path / "images", images=10, bad=True)
    result = subprocess.run(
        cli(str(source), "out", "--shards", "2"), cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False
    )
    output = (result.stdout + result.stderr).strip().splitlines()
    assert result.returncode == 1, "\n".join(output)
    assert len(output) <= 15, "\n".join(output)
    assert f"{source}/cat/broken.jpg: " in output[-2], "the file and the cause, one line before the last"
    assert output[-1].startswith("Fix or remove the files named"), "the fix last"
    assert sum("broken.jpg" in line for line in output) == 1, "once"
    assert sum(line.startswith("imagefolder-lmdb convert: full log") for line in output) == 1
    assert "out/work/logs/encode_shard/train/" in "\n".join(output)
    for internal in ("Traceback", "CalledProcessError", ".snakemake/scripts/", "WorkflowError", "RuleException"):
        assert internal not in "\n".join(output), internal

    verbose = subprocess.run(
        [*cli(str(source), "out", "--shards", "2"), "--verbose"], cwd=tmp_path, capture_output=True, text=True
    )
    assert verbose.returncode == 1 and "localrule encode_shard" in verbose.stderr, "--verbose: Snakemake's own"


def test_bad_images_in_two_shards_end_with_the_fix_once(tmp_path: Path) -> None:
    """Each failing shard names its own files; the fix they share is said once, last."""
    source = small_tree(tmp_path / "images", images=10, bad=True)
    (source / "dog" / "broken.jpg").write_bytes(b"\xff\xd8 not a jpeg either")
    result = subprocess.run(cli(str(source), "out", "--shards", "2"), cwd=tmp_path, capture_output=True, text=True)
    output = result.stderr.strip().splitlines()
    assert result.returncode == 1, "\n".join(output)
    assert sum("cat/broken.jpg" in line for line in output) == sum("dog/broken.jpg" in line for line in output) == 1
    assert output[-1].startswith("Fix or remove the files named")
    assert sum(line.startswith("Fix or remove the files named") for line in output) == 1, "\n".join(output)


def test_convert_call_raises_the_lines_and_returns_the_outputs(tmp_path: Path) -> None:
    from imagefolder_lmdb import ConvertError, convert

    source = small_tree(tmp_path / "images", images=8, bad=True)
    with pytest.raises(ConvertError) as failed:
        convert(source, tmp_path / "out", shards=1, cores=1)
    assert failed.value.returncode == 1
    assert any("broken.jpg" in line for line in failed.value.lines), failed.value.lines
    assert failed.value.lines[-1].startswith("Fix or remove the files named"), failed.value.lines
    assert str(failed.value).splitlines() == failed.value.lines
    (source / "cat" / "broken.jpg").unlink()
    outputs = convert(source, tmp_path / "out", shards=1, cores=1)
    built = outputs["train"]
    assert built.dataset.is_file() and built.verify_report.is_file() and built.contact_sheet.is_file()
    assert built.images == 8 and built.classes == ["cat", "dog"], "what was built, from its verify report"
    assert built.summary().startswith(f"{built.dataset}: 8 images, 2 classes, ") and built.summary().endswith(
        "verified"
    )


def test_plain_snakemake_selects_the_board_as_a_logger(tmp_path: Path) -> None:
    """``snakemake --logger imagefolder-lmdb``: the same board for a config-file run."""
    source = small_tree(tmp_path / "images", images=10)
    config = write_config(tmp_path, {"train": {"source": str(source), "shards": 2}})
    run = run_snakemake(tmp_path, "--configfile", str(config), "--logger", "imagefolder-lmdb").check()
    lines = run.output.splitlines()
    assert any(line.startswith("train: 10/10 images") for line in lines), run.output
    assert not [line for line in lines if JOB_METADATA.search(line)], run.output
