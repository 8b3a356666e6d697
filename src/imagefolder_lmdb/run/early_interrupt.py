"""Ctrl-C while the ``imagefolder-lmdb`` command is still starting: Python importing the package and
the command's modules, its first tenth of a second or so. Python's own handler would end that in a
KeyboardInterrupt traceback and exit status 1; the command ends instead as a Ctrl-C before its work
does: the words of the command being run (``BEFORE_WORK``, chosen by its name on the command line)
and exit status 130.

``guard_the_start`` is called first thing by the package's ``__init__``; it acts only in a process
that is the command (its console script, or ``python -m imagefolder_lmdb.cli``), never in a program
that imports the package, and only where SIGINT has Python's default handler: a background job's
ignored SIGINT stays ignored. The command hands SIGINT back to Python (``started``) once its modules
are imported and its own handling takes over; a Ctrl-C the command does not answer itself ends with
the same words (cli.py's dispatch, ``say_interrupted``).

Standard library only, and not even ``signal``: it runs before anything else, and ``signal``
imports ``enum`` (4 ms here), a window in which a Ctrl-C would still end in a traceback. ``_signal``
is the C module ``signal`` wraps, loaded by Python at start-up; its functions are the same.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # no stub: ``signal``'s own functions, untyped
import os
import sys

#: What a Ctrl-C before a command's work prints, by command: true at that moment, and true of what
#: the command's own handling says later where it says nothing more precise. convert's are
#: board/progress.py's interruption_lines with no split started (a unit test holds the two equal;
#: that module is too heavy to import this early).
BEFORE_WORK: dict[str, tuple[str, ...]] = {
    "convert": ("interrupted: nothing started.", "Run the same command again: it goes on from there."),
    "verify": ("interrupted: nothing checked (verify changes no dataset). Run the same command again to check.",),
    "info": ("interrupted: info stopped before it finished (it only reads: nothing changed). Run it again.",),
    "add-locations": ("interrupted: no file changed. Run the same command again.",),
    "convert-legacy": ("interrupted: nothing written. Run the same command again.",),
    "flatten": ("interrupted: no flattened file written (it appears only when complete). Run the same command again.",),
    "gc": (
        "interrupted: every kept revision is whole; some unused data files may be left. Run the same command again.",
    ),
    "init-config": ("interrupted: nothing written. Run it again.",),
    "snakefile": ("interrupted: nothing written. Run it again.",),
}
#: No command named (``--help``, ``--version``, a misspelt command): nothing to say but that.
NO_COMMAND = ("interrupted.",)
NOTHING_STARTED = BEFORE_WORK["convert"]
CONSOLE_SCRIPT = "imagefolder-lmdb"
COMMAND_MODULE = "imagefolder_lmdb.cli"
SIGINT = int(_signal.SIGINT)
#: The exit status of a command ended by Ctrl-C, as a shell gives it.
INTERRUPTED_STATUS = 128 + SIGINT


def guard_the_start() -> None:
    """Install the starting command's SIGINT handler, where this process is the command."""
    if not is_the_command(sys.argv[0], getattr(sys, "orig_argv", sys.argv)):
        return
    try:
        if _signal.getsignal(SIGINT) is _signal.default_int_handler:
            _signal.signal(SIGINT, interrupted_while_starting)
    except ValueError:  # imported outside the main thread: no handler can be set there
        pass


def started() -> None:
    """The command's modules are imported: SIGINT raises KeyboardInterrupt again, for its own handling."""
    if _signal.getsignal(SIGINT) is interrupted_while_starting:
        _signal.signal(SIGINT, _signal.default_int_handler)


def is_the_command(script: str, interpreter_argv: list[str]) -> bool:
    """Whether this process runs the console script (``sys.argv[0]`` is it) or the CLI module:
    ``python -m imagefolder_lmdb.cli``, where ``sys.argv[0]`` is "-m" while the package imports and
    the interpreter's own command line (``sys.orig_argv``) names the module."""
    if script == "-m":
        return "-m" in interpreter_argv[:-1] and interpreter_argv[interpreter_argv.index("-m") + 1] == COMMAND_MODULE
    return os.path.basename(script).removesuffix(".exe") == CONSOLE_SCRIPT


def words_of(argv: list[str]) -> tuple[str, ...]:
    """The words of a Ctrl-C before the work of the command ``argv`` runs (``sys.argv``: the command's
    name follows the script, or "-m" while ``python -m`` imports; only --help or --version come first)."""
    return BEFORE_WORK.get(argv[1] if len(argv) > 1 else "", NO_COMMAND)


def interrupted_while_starting(signum: int, frame: object) -> None:
    """Nothing is done yet: the command's words, and out at once (no import half done to unwind)."""
    try:  # noqa: SIM105 - contextlib imports functools and collections: this runs before them
        os.write(2, interruption_text(words_of(sys.argv), os.isatty(2)).encode())
    except OSError:  # stderr closed: the exit status still says it
        pass
    os._exit(INTERRUPTED_STATUS)


def interruption_text(lines: tuple[str, ...] | list[str], terminal: bool) -> str:
    """``lines`` as written: on a terminal off the line it echoed ^C on."""
    return ("\n" if terminal else "") + "\n".join(lines) + "\n"


def say_interrupted(lines: tuple[str, ...] | list[str]) -> int:
    """A command's answer to Ctrl-C: its lines on stderr, a second Ctrl-C meanwhile ignored (it would
    cut them short), and the exit status to end with."""
    try:
        previous, ignoring = _signal.signal(SIGINT, _signal.SIG_IGN), True
    except ValueError:  # not the main thread: no handler can be set there
        previous, ignoring = None, False
    try:
        sys.stderr.write(interruption_text(lines, sys.stderr.isatty()))
        sys.stderr.flush()
    except (OSError, ValueError):  # stderr closed: the exit status still says it
        pass
    finally:
        if ignoring:
            _signal.signal(SIGINT, previous)
    return INTERRUPTED_STATUS
