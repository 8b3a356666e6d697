"""Snakemake's words that the logger plugin matches (board/snakemake_words.py): the pinned Snakemake,
run on a workflow of three tiny rules, still says each one the plugin waits for (a finished job's
rule, a failed job's closing lines, "Nothing to be done", the stop on SIGINT and on SIGTERM), and
the words were read from the release installed."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from importlib.metadata import version
from pathlib import Path

import pytest

from imagefolder_lmdb.board import snakemake_words
from support.interrupting import StartedCommands
from support.workflow import BIN, snakemake_environment

#: One rule that works, one that fails (with a log), one that waits (writing ``started`` first).
WORKFLOW = """\
rule works:
    output: "works.txt"
    shell: "touch {output}"

rule fails:
    output: "fails.txt"
    log: "fails.log"
    shell: "echo failing > {log}; exit 3"

rule waits:
    output: "waits.txt"
    shell: "touch started; sleep 600; touch {output}"
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "Snakefile").write_text(WORKFLOW)
    return tmp_path


def snakemake(folder: Path, target: str) -> str:
    """Snakemake's output (its log lines) for ``target``."""
    command = [str(BIN / "snakemake"), "--cores", "1", target]
    done = subprocess.run(command, cwd=folder, env=snakemake_environment(), capture_output=True, text=True, timeout=300)
    return done.stdout + done.stderr


def stopped(commands: StartedCommands, folder: Path, signum: int) -> str:
    """Snakemake's output when ``signum`` reaches it and its job, as a terminal's Ctrl-C does."""
    command = [str(BIN / "snakemake"), "--cores", "1", "waits.txt"]
    process = commands.start(
        command, cwd=folder, env=snakemake_environment(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    while not (folder / "started").exists():
        assert process.poll() is None, process.communicate()[0]
        time.sleep(0.05)
    os.killpg(process.pid, signum)  # Snakemake and its job, as a terminal's Ctrl-C reaches them
    output, _ = process.communicate(timeout=120)
    (folder / "started").unlink()
    return output


def test_the_words_were_read_from_the_installed_snakemake() -> None:
    assert version("snakemake") == snakemake_words.READ_FROM, (
        "read board/snakemake_words.py's words again, then its pin"
    )


def test_snakemake_still_says_each_word_the_plugin_waits_for(commands: StartedCommands, folder: Path) -> None:
    finished = snakemake(folder, "works.txt").splitlines()
    assert "works" in [snakemake_words.finished_rule(line) for line in finished]
    assert any(
        line.startswith(snakemake_words.NOTHING_TO_BE_DONE) for line in snakemake(folder, "works.txt").splitlines()
    )
    failed = snakemake(folder, "fails.txt")
    assert any(line.startswith(snakemake_words.COMPLETE_LOGS) for line in failed.splitlines()), failed
    assert all(words in failed for words in snakemake_words.REPEATS), failed
    assert any(snakemake_words.INTERNAL_LINE.search(line) for line in failed.splitlines()), failed
    for signum in (signal.SIGINT, signal.SIGTERM):
        output = stopped(commands, folder, signum)
        said = {snakemake_words.stop_signal(line) for line in output.splitlines()} - {None}
        assert said == {signal.Signals(signum).name}, output
