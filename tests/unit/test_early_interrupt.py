"""A Ctrl-C while the command still imports (run/early_interrupt.py): which processes it guards, and
that its lines are the ones a later Ctrl-C before any work prints. The signal itself lands in
tests/workflow/test_every_moment.py, at the hold point "starting"."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from imagefolder_lmdb.board.progress import interruption_lines
from imagefolder_lmdb.publish.upload import after_forwarded_signal
from imagefolder_lmdb.run import early_interrupt


@pytest.mark.parametrize(
    ("script", "interpreter_argv", "guarded"),
    [
        ("/venv/bin/imagefolder-lmdb", ["/venv/bin/python", "/venv/bin/imagefolder-lmdb", "convert"], True),
        ("/venv/Scripts/imagefolder-lmdb.exe", ["python.exe"], True),
        ("-m", ["python", "-m", "imagefolder_lmdb.cli", "convert", "a", "b"], True),
        ("-m", ["python", "-m", "imagefolder_lmdb.publish.upload", "f", "s3://b/k"], False),
        ("-m", ["python", "-m", "pytest", "-m", "slow"], False),
        ("train.py", ["python", "train.py"], False),  # a program that imports the reader
        ("-c", ["python", "-c", "import imagefolder_lmdb"], False),
        ("", ["python"], False),  # the interactive interpreter
    ],
)
def test_only_the_command_is_guarded(script: str, interpreter_argv: list[str], guarded: bool) -> None:
    assert early_interrupt.is_the_command(script, interpreter_argv) is guarded


def test_its_lines_are_those_of_an_interruption_before_any_work() -> None:
    assert list(early_interrupt.NOTHING_STARTED) == interruption_lines([])
    assert early_interrupt.BEFORE_WORK["convert"] == early_interrupt.NOTHING_STARTED


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["/venv/bin/imagefolder-lmdb", "verify", "x.lmdb", "--full"], "verify"),
        (["-m", "info", "x.lmdb"], "info"),  # python -m imagefolder_lmdb.cli, while the package imports
        (["/venv/bin/imagefolder-lmdb", "add-locations", "x.lmdb"], "add-locations"),
        (["imagefolder-lmdb", "convert-legacy", "a", "b"], "convert-legacy"),
        (["imagefolder-lmdb", "convert", "--configfile", "c.yaml"], "convert"),
    ],
)
def test_the_words_are_those_of_the_command_being_run(argv: list[str], command: str) -> None:
    """Issue 57: it answered verify, info, ... with convert's words ("nothing started ... goes on")."""
    assert early_interrupt.words_of(argv) == early_interrupt.BEFORE_WORK[command]


@pytest.mark.parametrize("argv", [["imagefolder-lmdb"], ["imagefolder-lmdb", "--help"], ["imagefolder-lmdb", "vrify"]])
def test_no_command_named_is_just_interrupted(argv: list[str]) -> None:
    assert early_interrupt.words_of(argv) == ("interrupted.",)


def test_every_command_has_its_words() -> None:
    from imagefolder_lmdb.cli import COMMANDS

    assert set(early_interrupt.BEFORE_WORK) == set(COMMANDS)
    for command, lines in early_interrupt.BEFORE_WORK.items():
        assert lines[0].startswith("interrupted: "), command
        if command != "convert":  # only a conversion goes on from where it stopped
            assert "goes on from there" not in " ".join(lines), command


def test_a_second_ctrl_c_while_the_words_are_written_is_ignored(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """say_interrupted ignores SIGINT while it writes, then gives back the handler there was."""
    during = []

    def text(lines: list[str], terminal: bool) -> str:
        during.append(signal.getsignal(signal.SIGINT))  # the handler while it writes
        return "\n".join(lines) + "\n"

    monkeypatch.setattr(early_interrupt, "interruption_text", text)
    before = signal.getsignal(signal.SIGINT)
    assert early_interrupt.say_interrupted(["interrupted: x."]) == 130
    assert during == [signal.SIG_IGN]
    assert signal.getsignal(signal.SIGINT) is before
    assert capsys.readouterr().err == "interrupted: x.\n"


def test_convert_legacy_interrupted_after_its_output_was_complete(tmp_path: Path) -> None:
    """OUT renamed into place, then Ctrl-C: it is whole, not "not written"; one there before is not its."""
    from imagefolder_lmdb.commands.convert_legacy import interrupted_line

    out = tmp_path / "new.lmdb"
    assert interrupted_line(str(out), existed=False).startswith(f"interrupted: {out} not written")
    out.write_bytes(b"")
    assert interrupted_line(str(out), existed=False).startswith(f"interrupted after {out} was complete: it is whole")
    assert interrupted_line(str(out), existed=True).startswith(f"interrupted: {out} not written")


def test_an_ignored_sigint_stays_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    """A background job's command keeps ignoring SIGINT, as the rest of the command does."""
    monkeypatch.setattr(early_interrupt, "is_the_command", lambda script, argv: True)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        early_interrupt.guard_the_start()
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        signal.signal(signal.SIGINT, signal.default_int_handler)
        early_interrupt.guard_the_start()
        assert signal.getsignal(signal.SIGINT) is early_interrupt.interrupted_while_starting
        early_interrupt.started()
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, previous)


AS_IT_STARTED = "interrupted: the upload to s3://b/k was stopped as it started (no object)\n"
REFUSED = "s3://b/k: the abort was refused (AccessDenied)\n"


@pytest.mark.parametrize(
    ("returncode", "errors", "said"),
    [
        (-signal.SIGINT, "", AS_IT_STARTED),  # killed before Python's handler
        (1, "Traceback (most recent call last):\n  ...\nKeyboardInterrupt\n", AS_IT_STARTED),
        (1, REFUSED, REFUSED),  # its own error after its own handling: kept
    ],
)
def test_an_upload_child_ended_by_a_forwarded_signal_is_an_interruption(
    returncode: int, errors: str, said: str
) -> None:
    assert after_forwarded_signal(signal.SIGINT, returncode, errors, "s3://b/k") == said
