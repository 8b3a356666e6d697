"""The crash tests' hook: a step reaching the point named in HOLD_ENV creates the file named in
HOLD_MARKER_ENV and waits there to be killed, so that a SIGKILL lands at a known moment (between
two outputs, say). Unset, as in every real run, it does nothing."""

from __future__ import annotations

import os
import time

HOLD_ENV = "IMAGEFOLDER_LMDB_TEST_HOLD"
HOLD_MARKER_ENV = "IMAGEFOLDER_LMDB_TEST_HOLD_MARKER"


def hold_point(name: str) -> None:
    """Wait here to be killed if the test running this asked to hold at ``name``."""
    if os.environ.get(HOLD_ENV) != name:
        return
    with open(os.environ[HOLD_MARKER_ENV], "w"):
        pass
    while True:
        time.sleep(1)
