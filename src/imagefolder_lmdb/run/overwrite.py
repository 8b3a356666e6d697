# SPDX-License-Identifier: MIT
"""``--overwrite``'s old files: set aside before Snakemake starts, put back if the run fails or is
interrupted (removed once it succeeds: run/invocation.py)."""

from __future__ import annotations

import os
from collections.abc import Sequence

from imagefolder_lmdb.writing.hold_points import hold_point


def set_aside(paths: Sequence[str]) -> dict[str, str]:
    """Rename the files a run with --overwrite replaces (``X`` -> ``X.replaced``), so that the run
    builds them anew and a failed run can put them back; {original: set-aside path}."""
    kept = {}
    for path in paths:
        os.replace(path, f"{path}.replaced")
        kept[path] = f"{path}.replaced"
    return kept


def put_back(kept: dict[str, str]) -> None:
    """After a failed run: the files set aside back in place (over whatever the run left there)."""
    for path, aside in kept.items():
        os.replace(aside, path)
        hold_point("put-back")  # one file back in place, maybe not all
