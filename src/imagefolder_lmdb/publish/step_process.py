"""How a publish step run as a process of its own (``python -m imagefolder_lmdb.publish.sync``, ``.preflight``)
ends: 0 when done, 130 at Ctrl-C, 1 with the problem's one line on stderr."""

from __future__ import annotations

import sys
from collections.abc import Callable


def run_step(step: Callable[[], None]) -> int:
    """Run ``step`` with obstore allowed in this process (it forks nothing) and return the exit status."""
    from imagefolder_lmdb.publish.replace_rule import PublishError
    from imagefolder_lmdb.remote.client import allow_in_process

    allow_in_process()
    try:
        step()
    except KeyboardInterrupt:
        return 130
    except (OSError, ValueError, PublishError) as exc:
        print(str(exc), file=sys.stderr)
        return 1
    return 0
