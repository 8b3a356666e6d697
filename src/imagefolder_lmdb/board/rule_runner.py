"""How a rule's step runs: everything it prints goes to the rule's log, the error the user needs
goes to the terminal too, and progress bars suit where they are shown."""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import sys
from collections.abc import Callable
from typing import Any, TextIO

from imagefolder_lmdb.printable import printable
from imagefolder_lmdb.writing.disk_space import DiskFullError, free_bytes, megabytes, mount_point

log = logging.getLogger("imagefolder_lmdb")
#: The message a step stopped by SIGINT leaves (the logger plugin: an interruption, not a failure).
INTERRUPTED_MESSAGE = "(interrupted)"
#: A step's exit status when stopped by SIGINT, as a shell gives it.
INTERRUPTED_STATUS = 130


def log_to(path: str | None) -> TextIO:
    """Send stderr (tracebacks, tqdm) and the logger to ``path``; returns the open stream."""
    # a file name that is not valid UTF-8 (kept as surrogate escapes) must not fail the log's writes
    stream: TextIO = open(path, "w", buffering=1, errors="backslashreplace") if path else sys.stderr  # noqa: SIM115
    sys.stderr = stream
    logging.basicConfig(
        stream=stream,
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(message)s",
        force=True,
    )
    return stream


def run_rule(main: Callable[[Any, TextIO], None], smk: Any) -> None:
    """Run a rule script's ``main(snakemake, log_stream)`` with its log set up.

    The full traceback goes to the rule's log; the error message itself also goes to the
    terminal, so the user sees which file is at fault without opening the log.
    """
    log_path = smk.log[0] if smk.log else None
    stream = log_to(log_path)
    if log_path:
        with contextlib.suppress(FileNotFoundError):
            os.remove(f"{log_path}.message")  # an earlier attempt's: not this one's to show
    try:
        main(smk, stream)
    except KeyboardInterrupt:
        stopped(log_path)
    except Exception as exc:
        log.exception("%s failed", smk.rule)
        if not log_path:
            where = ""
        elif let_go_of_log(stream):
            where = f"\n(full log: {log_path})"
        else:
            where = f"\n(its log {log_path} could not be written: {explain_unwritten(log_path)})"
        if not (log_path and leave_message(log_path, explain(exc))):
            print(f"ERROR in rule {smk.rule}: {explain(exc)}{where}", file=sys.__stderr__, flush=True)
        sys.exit(1)


def stopped(log_path: str | None) -> None:
    """SIGINT (Ctrl-C, or imagefolder-lmdb convert stopping the run): no traceback, the true count
    of images done for the closing lines, and the mark that says interrupted rather than failed."""
    from imagefolder_lmdb.board.progress import flush_progress

    flush_progress()
    log.info("interrupted (SIGINT): the same command goes on from here")
    if log_path:
        leave_message(log_path, INTERRUPTED_MESSAGE)
    sys.exit(INTERRUPTED_STATUS)


def leave_message(log_path: str, message: str) -> bool:
    """Under the ``imagefolder-lmdb`` logger plugin (it sets IMAGEFOLDER_LMDB_MESSAGES for the jobs),
    the message goes beside the log for the plugin to show once, last; False where it cannot."""
    if not os.environ.get("IMAGEFOLDER_LMDB_MESSAGES"):
        return False
    try:
        with open(f"{log_path}.message", "w") as stream:
            stream.write(message + "\n")
    except OSError:
        return False
    return True


def let_go_of_log(stream: TextIO) -> bool:
    """Flush the log; False where that fails (its disk is full too): what cannot be written is
    dropped, so that the script ends with its own status rather than 120 (Python's when flushing
    stderr fails at exit)."""
    try:
        stream.flush()
    except OSError:
        sys.stderr = sys.__stderr__
        with contextlib.suppress(OSError):
            stream.close()
        return False
    return True


def explain_unwritten(path: str) -> str:
    return f"no room on the file system mounted at {mount_point(path)}, {megabytes(free_bytes(path))} free"


def explain(exc: BaseException) -> str:
    """The message a user needs; a bare ENOSPC from any write becomes actionable."""
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC and not isinstance(exc, DiskFullError):
        written = exc.filename2 or exc.filename  # a copy names its source first, what it writes second
        named = isinstance(written, str) and written
        where = f" {written} (the file system mounted at {mount_point(written)})" if named else " an output"
        return (
            f"no space left on the device while writing{where}. Free some space "
            "(or point `work`/`results` elsewhere) and run the same command again."
        )
    return printable(str(exc))  # a name that is not valid UTF-8 with its bytes escaped: printable anywhere


def progress_kwargs(stream: TextIO) -> dict[str, Any]:
    """tqdm settings: live on a terminal, a line every few seconds in a log file."""
    interactive = stream.isatty()
    return {
        "file": stream,
        "mininterval": 0.5 if interactive else 5.0,
        "dynamic_ncols": interactive,
        "ascii": not interactive,
    }
