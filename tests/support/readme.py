"""The README as the tests read it: its text and its blocks marked ``<!-- runnable -->``."""

from __future__ import annotations

import re

from . import REPO

README = (REPO / "README.md").read_text()
RUNNABLE = re.compile(r"<!-- runnable -->\n```(bash|python)\n(.*?)```", re.S)


def runnable_blocks() -> list[tuple[str, str]]:
    """(kind, code) of every runnable block, in order; kind is "bash" or "python"."""
    return RUNNABLE.findall(README)
