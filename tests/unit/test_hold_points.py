"""Every moment the crash harness can try is one entry of HOLD_POINTS (issue 49): a hold point named
anywhere else would be a moment no test reaches."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from imagefolder_lmdb.writing.hold_points import ALL_POINTS, COMMAND_POINTS, HOLD_POINTS, POINT_LISTS, hold_point

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "imagefolder_lmdb"


def hold_point_names() -> list[tuple[str, object]]:
    """(file, the first argument) of every ``hold_point(...)`` call in the package."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "hold_point":
                first = node.args[0]
                found.append((str(path.relative_to(PACKAGE)), first.value if isinstance(first, ast.Constant) else None))
    return found


def test_every_hold_point_call_names_an_entry_of_the_list() -> None:
    calls = hold_point_names()
    assert len(calls) >= 15
    assert [call for call in calls if call[1] not in ALL_POINTS] == []


def test_every_entry_is_reached_somewhere() -> None:
    assert sorted(ALL_POINTS - {name for _, name in hold_point_names()}) == []


def test_a_command_point_is_none_of_a_conversion() -> None:
    """The harness of conversions (tests/workflow/test_every_moment.py) tries HOLD_POINTS: a command's
    point there would be a moment no conversion reaches."""
    assert set(HOLD_POINTS) & set(COMMAND_POINTS) == set()


def test_a_name_outside_the_list_is_refused() -> None:
    with pytest.raises(ValueError, match=r"not in HOLD_POINTS, .*LIVE_POINTS") as refused:
        hold_point("nowhere")
    assert all(name in str(refused.value) for name in POINT_LISTS)


def test_a_hold_waits_until_its_marker_is_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    marker = tmp_path / "held"
    monkeypatch.setenv("IMAGEFOLDER_LMDB_TEST_HOLD", "encode_shard:2")
    monkeypatch.setenv("IMAGEFOLDER_LMDB_TEST_HOLD_MARKER", str(marker))
    hold_point("encode_shard", 1)  # another shard: passes
    waiter = threading.Thread(target=hold_point, args=("encode_shard", 2))
    waiter.start()
    waiter.join(timeout=0.5)
    assert waiter.is_alive() and marker.exists()
    marker.unlink()
    waiter.join(timeout=10)
    assert not waiter.is_alive()
