"""The plain-line progress of a run shown where no terminal is (a log, CI, a notebook): a line when
something changed, the same line again only as a heartbeat."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from imagefolder_lmdb.board import progress
from imagefolder_lmdb.board.progress import HEARTBEAT_INTERVAL, Board, SplitState
from imagefolder_lmdb.run.launch import relay
from imagefolder_lmdb.work.paths import RunPaths


def test_an_unchanged_line_is_printed_again_only_as_a_heartbeat(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: now[0])
    stream = io.StringIO()
    board = Board(stream, terminal=False)
    for line, later in [("a 1/4", 5), ("a 1/4", 5), ("a 2/4", 5), ("a 2/4", HEARTBEAT_INTERVAL), ("a 2/4", 5)]:
        board.plain_line(line)
        now[0] += later
    assert stream.getvalue().splitlines() == ["a 1/4", "a 2/4", "a 2/4"]


def test_the_relay_keeps_the_order_the_child_wrote_its_two_streams_in() -> None:
    """The board's last lines (stderr) written before the summary (stdout) are shown before it, and
    no line waits in a reader's buffer until the end (where it came after the summary)."""
    err_read, err_write = os.pipe()
    out_read, out_write = os.pipe()
    os.write(err_write, b"progress: train 1/2\ntrain: 2/2 images (done)\n")
    os.write(out_write, b"Summary\ntrain: 2 images\nno newline at the end")
    os.close(err_write)
    os.close(out_write)
    shown = io.StringIO()
    with os.fdopen(err_read, "rb") as err, os.fdopen(out_read, "rb") as out:
        relay({err: shown, out: shown}, verbose=False)
    assert shown.getvalue() == (
        "progress: train 1/2\ntrain: 2/2 images (done)\nSummary\ntrain: 2 images\nno newline at the end\n"
    )


def test_a_split_finished_before_the_run_shows_done_not_waiting(tmp_path: Path) -> None:
    """A rerun with nothing to do starts no job: a line the board prints meanwhile (a slow start)
    says the split is done, as its verify report newer than its listing says; once a listing of
    the split starts again, the job's stage replaces it."""
    paths = RunPaths(str(tmp_path / "out"), str(tmp_path / "out" / "work"))
    os.makedirs(os.path.dirname(paths.counts("train")))
    Path(paths.counts("train")).write_text(json.dumps({"images": 4}))
    state = SplitState("train", paths)
    state.refresh()
    assert state.line() == "train: 0/4 images, 0 bad (waiting)"  # listed, never verified: still to come
    Path(paths.verify_report("train")).write_text("{}")
    os.utime(paths.counts("train"), (1, 1))
    state.refresh()
    assert state.line() == "train: 4/4 images, 0 bad (done)"
