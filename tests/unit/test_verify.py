"""`python scripts/verify.py PATH` on what is no dataset, and the choice of the contact sheet's records."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.commands import run_script


@pytest.mark.parametrize("content", [None, b"\x00" * 4096], ids=["missing", "not-lmdb"])
def test_verify_refuses_what_is_not_a_dataset(tmp_path: Path, content: bytes | None) -> None:
    path = tmp_path / "x.lmdb"
    if content is not None:
        path.write_bytes(content)
    result = run_script("verify.py", path, "--full")
    assert result.returncode == 1
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"FAIL {path}")
    assert "Traceback" not in result.stderr


def test_contact_sheet_of_a_full_check_shows_records_from_everywhere() -> None:
    from imagefolder_lmdb.verify.contact_sheet import MAX_SHEET_IMAGES, sheet_indices

    assert sheet_indices([3, 1, 4]) == [3, 1, 4]
    shown = sheet_indices(list(range(10_000)))
    assert len(shown) == MAX_SHEET_IMAGES == len(set(shown)) and shown == sorted(shown)
    assert max(shown) > 5_000, "not just the first records"
