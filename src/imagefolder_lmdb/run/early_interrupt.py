"""Ctrl-C while the ``imagefolder-lmdb`` command is still starting: Python importing the package and
the command's modules, its first tenth of a second or so. Python's own handler would end that in a
KeyboardInterrupt traceback and exit status 1; a command that has nothing written yet ends as a later
Ctrl-C before any work does: the same two closing lines (run/progress.py ``interruption_lines``) and
exit status 130.

``guard_the_start`` is called first thing by the package's ``__init__``; it acts only in a process
that is the command (its console script, or ``python -m imagefolder_lmdb.cli``), never in a program
that imports the package, and only where SIGINT has Python's default handler: a background job's
ignored SIGINT stays ignored. The command hands SIGINT back to Python (``started``) once its modules
are imported and its own handling takes over. Standard library only: it runs before anything else.
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType

#: What a Ctrl-C before any work prints: run/progress.py's interruption_lines with no split started
#: (a unit test holds the two equal; that module is too heavy to import this early).
NOTHING_STARTED = ("interrupted: nothing started.", "Run the same command again: it goes on from there.")
CONSOLE_SCRIPT = "imagefolder-lmdb"
COMMAND_MODULE = "imagefolder_lmdb.cli"


def guard_the_start() -> None:
    """Install the starting command's SIGINT handler, where this process is the command."""
    if not is_the_command(sys.argv[0], getattr(sys, "orig_argv", sys.argv)):
        return
    try:
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, interrupted_while_starting)
    except ValueError:  # imported outside the main thread: no handler can be set there
        pass


def started() -> None:
    """The command's modules are imported: SIGINT raises KeyboardInterrupt again, for its own handling."""
    if signal.getsignal(signal.SIGINT) is interrupted_while_starting:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def is_the_command(script: str, interpreter_argv: list[str]) -> bool:
    """Whether this process runs the console script (``sys.argv[0]`` is it) or the CLI module:
    ``python -m imagefolder_lmdb.cli``, where ``sys.argv[0]`` is "-m" while the package imports and
    the interpreter's own command line (``sys.orig_argv``) names the module."""
    if script == "-m":
        return "-m" in interpreter_argv[:-1] and interpreter_argv[interpreter_argv.index("-m") + 1] == COMMAND_MODULE
    return os.path.basename(script).removesuffix(".exe") == CONSOLE_SCRIPT


def interrupted_while_starting(signum: int, frame: FrameType | None) -> None:
    """Nothing is written yet: the closing lines, and out at once (no import half done to unwind)."""
    try:
        start = "\n" if os.isatty(2) else ""  # off the line the terminal echoed ^C on, as later
        os.write(2, (start + "\n".join(NOTHING_STARTED) + "\n").encode())
    except OSError:  # stderr closed: the exit status still says it
        pass
    os._exit(128 + signal.SIGINT)
