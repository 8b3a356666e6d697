# SPDX-License-Identifier: MIT
"""``ConvertError``, what ``convert()`` and the command raise, on its own: the package imports it at its
start (``from imagefolder_lmdb import ConvertError``) without run/launch.py's subprocess and signal handling."""

from __future__ import annotations

from collections.abc import Sequence


class ConvertError(RuntimeError):
    """The workflow failed or could not be started; ``lines`` are what to do about it (file, cause, fix)."""

    def __init__(self, message: str, returncode: int = 1, lines: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.returncode = returncode
        self.lines = list(lines) or message.splitlines()
