"""The plain-line progress of a run shown where no terminal is (a log, CI, a notebook): a line when
something changed, the same line again only as a heartbeat."""

from __future__ import annotations

import io

import pytest

from imagefolder_lmdb.run import progress
from imagefolder_lmdb.run.progress import HEARTBEAT_INTERVAL, Board


def test_an_unchanged_line_is_printed_again_only_as_a_heartbeat(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: now[0])
    stream = io.StringIO()
    board = Board(stream, terminal=False)
    for line, later in [("a 1/4", 5), ("a 1/4", 5), ("a 2/4", 5), ("a 2/4", HEARTBEAT_INTERVAL), ("a 2/4", 5)]:
        board.plain_line(line)
        now[0] += later
    assert stream.getvalue().splitlines() == ["a 1/4", "a 2/4", "a 2/4"]
