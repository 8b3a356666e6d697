# SPDX-License-Identifier: MIT
"""Leaving a process that ran obstore without tearing its runtime down.

obstore runs its requests on a tokio runtime whose threads live until the process ends. When the
interpreter finalises with that runtime alive (a request still being retried, a connection pool's
tasks), the runtime can abort the process: ``verify s3://…`` against an unreachable endpoint printed
its FAIL line and then died with SIGABRT in about 1 run of 3 (DESIGN §13). A command that used
obstore therefore leaves through ``leave``: the ``atexit`` functions run, the streams are flushed, and
``os._exit`` ends the process before any finaliser can reach the runtime.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
from typing import NoReturn


def obstore_started() -> bool:
    """Whether obstore was imported in this process (it is imported only where requests run)."""
    return "obstore" in sys.modules


def leave(code: int) -> NoReturn:
    """End this process with ``code`` after the exit functions and a flush of the standard streams."""
    try:
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more can be said
                stream.flush()
        os._exit(code)


def leave_if_started(code: int) -> int:
    """``leave(code)`` in a process that ran obstore, else ``code`` (the usual way out)."""
    if obstore_started():
        leave(code)
    return code


def exit_code(exc: BaseException) -> int:
    """The exit status the interpreter would give ``exc`` (its traceback or message printed as it would)."""
    import traceback

    if isinstance(exc, SystemExit):
        if isinstance(exc.code, int) or exc.code is None:
            return int(exc.code or 0)
        print(exc.code, file=sys.stderr)
        return 1
    if isinstance(exc, KeyboardInterrupt):
        return 130
    if isinstance(exc, BrokenPipeError):  # `| head`: the reader has all it wanted
        return 1
    traceback.print_exception(exc)
    return 1
