# SPDX-License-Identifier: MIT
"""How ``imagefolder-lmdb convert`` and ``imagefolder_lmdb.convert()`` run Snakemake: a child
process whose output this process relays (so that a notebook shows it too), with the logger plugin
``imagefolder-lmdb`` drawing the progress board unless ``verbose``; a failure's closing lines come
back through a file and are raised as :class:`ConvertError` (its ``lines``), each once.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from contextvars import ContextVar
from pathlib import Path
from types import FrameType
from typing import IO, Any, TextIO

from imagefolder_lmdb.board.plugin_environment import (
    ERROR_FILE_VARIABLE,
    INTERRUPT_FILE_VARIABLE,
    PARENT_VARIABLE,
    PLUGIN,
    TERMINAL_VARIABLE,
)
from imagefolder_lmdb.run.convert_error import ConvertError as ConvertError
from imagefolder_lmdb.run.ownership import TEMPORARY_FOLDER, clear_temporaries, inherited_lock_fds, lock_environment
from imagefolder_lmdb.run.shared_temporaries import shared_temporary_folder
from imagefolder_lmdb.run.workflow_folder import PROFILES as PROFILES
from imagefolder_lmdb.run.workflow_folder import SNAKEFILE as SNAKEFILE
from imagefolder_lmdb.run.workflow_folder import WORKFLOW as WORKFLOW

#: Lines Snakemake prints before its logger exists, shown only with ``verbose``.
CHATTER = (b"Using workflow specific profile ", b"Using profiles ", b"Using profile ")
#: A run's temporary folder inside the work folder's ``.temporary`` (which only its owner clears).
RUN_FOLDER_PREFIX = "imagefolder-lmdb-"
#: What runs beside this process's next Snakemake run, entered before it starts and left once it ended
#: (a URL OUTDIR without a merge: its data files uploaded as they finish, publish/live.py sets it).
BESIDE_RUN: ContextVar[Callable[[], AbstractContextManager[None]] | None] = ContextVar("beside_run", default=None)


def snakemake_command(configfile: Path, directory: Path | None, options: Sequence[str], verbose: bool) -> list[str]:
    """Snakemake's command line, with this interpreter (and so its installed package); the logger
    plugin unless ``verbose`` or the caller chose a logger of their own."""
    command = [sys.executable, "-m", "snakemake", "--snakefile", str(SNAKEFILE)]
    # named, not searched for: Snakemake would take a profiles/default of the current folder first
    command += ["--workflow-profile", str(PROFILES / "default"), "--configfile", str(configfile)]
    if directory is not None:
        command += ["--directory", str(directory)]
    if not verbose and "--logger" not in options:
        command += ["--logger", PLUGIN]
    return [*command, *options]


def snakemake_environment() -> dict[str, str]:
    """This environment with this interpreter's bin folder first on PATH, as in an activated venv
    (jobs that start ``snakemake`` or ``python`` by name find this installation's)."""
    return {**os.environ, "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}


def check_snakemake() -> None:
    """Converting needs Snakemake (and PyYAML, which it requires), which the ``convert`` extra installs."""
    from imagefolder_lmdb.extras import installed, missing_extra

    if not installed("snakemake") or not installed("yaml"):
        needs = "converting (it runs the Snakemake workflow)"
        raise ConvertError(f"{missing_extra(needs, 'snakemake')} (or [slurm] for --profile slurm)", 1)


def relay(streams: dict[IO[bytes], TextIO], verbose: bool, stop: Stop | None = None) -> None:
    """Copy the child's stdout and stderr, line by line as they come, to this process's (a terminal,
    a log, a notebook's cell): one reader for both, so that lines keep the order they were written in.

    Each stream is read with plain ``os.read`` (a buffered reader keeps lines that ``select`` no longer
    sees, which then came out only at the end, after the summary), and where several are ready at once
    they are served in the order of ``streams``: the board's stderr first, then the summary's stdout,
    as the child wrote them. Once a signal has stopped the run (``stop``), the child's stderr is
    read and dropped: what Snakemake and its jobs say as they stop is no news to the user."""
    order = {source.fileno(): rank for rank, source in enumerate(streams)}
    targets = {source.fileno(): target for source, target in streams.items()}
    partial = dict.fromkeys(targets, b"")
    with selectors.DefaultSelector() as selector:
        for fd in targets:
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map():
            for key, _ in sorted(selector.select(), key=lambda event: order[event[0].fd]):
                chunk = os.read(key.fd, 1 << 16)
                if not chunk:
                    selector.unregister(key.fd)
                lines = (partial[key.fd] + chunk).split(b"\n")
                partial[key.fd] = lines.pop() if chunk else b""  # a line not ended yet waits for its end
                if stop is not None and stop.signals and targets[key.fd] is sys.stderr and not verbose:
                    continue
                show([line + b"\n" for line in lines if chunk or line], targets[key.fd], verbose)


def show(lines: list[bytes], target: TextIO, verbose: bool) -> None:
    """Write ``lines`` to ``target``, leaving out Snakemake's own chatter unless ``verbose``."""
    shown = [line.decode(errors="replace") for line in lines if verbose or not line.startswith(CHATTER)]
    if shown:
        target.write("".join(shown))
        target.flush()


def run_snakemake(command: list[str], verbose: bool = False, runs: Sequence[tuple[Any, list[str]]] = ()) -> None:
    """Snakemake run (``run_and_relay``) with what BESIDE_RUN names running beside it, which sees how it ended."""
    beside = BESIDE_RUN.get()
    with beside() if beside is not None else contextlib.nullcontext():
        run_and_relay(command, verbose, runs)


def run_and_relay(command: list[str], verbose: bool = False, runs: Sequence[tuple[Any, list[str]]] = ()) -> None:
    """Run Snakemake and relay its output; ConvertError with the closing lines when it fails,
    :class:`Interrupted` with how far each split got when a signal stopped it.

    Snakemake runs in a process group of its own, so that a signal reaches it (and its jobs) only
    through :func:`stopping_on_signals`: the same way whether the terminal's Ctrl-C, a notebook's
    interrupt or a ``kill`` sent it. ``runs``: (RunPaths, split names) to tell how far each split
    got where Snakemake could not (a second Ctrl-C). A dry run's output is Snakemake's, whole."""
    verbose = verbose or "--dry-run" in command or "-n" in command
    with temporary_folder(runs) as folder:
        error_file, interrupt_file = os.path.join(folder, "error.txt"), os.path.join(folder, "interrupted.txt")
        environment = {**snakemake_environment(), ERROR_FILE_VARIABLE: error_file}
        environment[INTERRUPT_FILE_VARIABLE] = interrupt_file
        environment[PARENT_VARIABLE] = str(os.getpid())
        environment[TERMINAL_VARIABLE] = "1" if sys.stderr.isatty() else "0"
        environment.update(lock_environment())  # the OUTDIR's lock, which convert took: Snakemake adopts it
        environment["TMPDIR"] = folder  # Snakemake's and its jobs' temporaries: gone with it, or in the work folder
        environment["PYTHONUNBUFFERED"] = "1"  # the summary (stdout) after the board's last lines (stderr)
        with stopping_on_signals(interrupt_file) as stop:
            process = subprocess.Popen(
                command,
                env=environment,
                stdin=subprocess.DEVNULL,
                pass_fds=inherited_lock_fds(),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                # its own group where signals are ours to hand on (the main thread); from another
                # thread, in ours: a Ctrl-C then reaches it as it reaches this process
                process_group=0 if threading.current_thread() is threading.main_thread() else None,
            )
            stop.started(process)
            streams = {process.stderr: sys.stderr, process.stdout: sys.stdout}  # stderr first: see relay
            thread = threading.Thread(target=relay, args=(streams, verbose, stop), daemon=True)
            thread.start()
            returncode = process.wait()
            thread.join()
        lines = read_lines(error_file)
        stopped_lines = [line for line in read_lines(interrupt_file) if line not in SIGNAL_WORDS]
    if returncode != 0 and (stop.signals or stopped_lines):  # 0: it had finished all the same
        signum = stop.signals[0] if stop.signals else signal.SIGINT
        raise Interrupted(signum, stopped_lines or interruption_fallback(runs, signum))
    if returncode != 0:
        fallback = f"the workflow failed (Snakemake exit status {returncode}); see its messages above"
        raise ConvertError("\n".join(lines) or fallback, returncode, lines)


@contextlib.contextmanager
def temporary_folder(runs: Sequence[tuple[Any, list[str]]]) -> Iterator[str]:
    """Where a run's temporaries go, removed when the run ends: in ``{work}/.temporary`` of the run's
    work folder (this command holds OUTDIR's lock, so what a killed run left there is removed first);
    for a run that owns no folder (a config file's), in $TMPDIR, named and marked with its owner
    (run/shared_temporaries.py), never touching another program's or another host's folders."""
    work = getattr(runs[0][0], "work", None) if runs else None
    if not inherited_lock_fds() or not isinstance(work, str) or not os.path.isdir(work):
        with shared_temporary_folder() as folder:
            yield folder
        return
    own = os.path.join(work, TEMPORARY_FOLDER)
    clear_temporaries(work)
    os.makedirs(own)
    with tempfile.TemporaryDirectory(prefix=RUN_FOLDER_PREFIX, dir=own) as folder:
        yield folder


def read_lines(path: str) -> list[str]:
    return Path(path).read_text().splitlines() if os.path.exists(path) else []


class Interrupted(KeyboardInterrupt):
    """A signal (SIGINT, SIGTERM, SIGHUP) stopped the conversion; ``lines``: how far each split got
    and how to go on, ``signum``: the signal (the command's exit status is 128 + it)."""

    def __init__(self, signum: int, lines: Sequence[str] = ()) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.lines = list(lines) or interruption_fallback((), signum)


def interruption_fallback(runs: Sequence[tuple[Any, list[str]]], signum: int) -> list[str]:
    """The closing lines from the work folder's files, where Snakemake's logger left none."""
    from imagefolder_lmdb.board.progress import interruption_lines, states_from_files

    return interruption_lines(states_from_files(list(runs)), signal.Signals(signum).name)


#: The signals that stop a conversion; each is handed on to Snakemake as SIGINT (its SIGTERM would
#: let every running job end first: hours for a large shard).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
SIGNAL_WORDS = ("SIGINT", "SIGTERM", "SIGHUP")


class Stop:
    """What :func:`stopping_on_signals` knows: the Snakemake process, the signals received."""

    def __init__(self, interrupt_file: str | None) -> None:
        self.interrupt_file = interrupt_file
        self.process: subprocess.Popen[bytes] | None = None
        self.signals: list[int] = []

    def started(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        if self.signals:  # a signal came while it started
            self.forward(signal.SIGINT)

    def received(self, signum: int, frame: FrameType | None) -> None:
        """The first signal: Snakemake (and its jobs) stopped as by Ctrl-C; a second one: at once.
        Before Snakemake starts (SOURCE still being listed): raised as :class:`Interrupted`."""
        first = not self.signals
        self.signals.append(signum)
        if self.process is None:
            if self.interrupt_file is None:
                raise Interrupted(signum)
            return
        if first and self.interrupt_file:
            with contextlib.suppress(OSError), open(self.interrupt_file, "w") as stream:
                stream.write(signal.Signals(signum).name)  # for the logger plugin's closing words
        self.forward(signal.SIGINT if first else signal.SIGKILL)

    def forward(self, signum: int) -> None:
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signum)


@contextlib.contextmanager
def stopping_on_signals(interrupt_file: str | None = None) -> Iterator[Stop]:
    """While inside: SIGINT, SIGTERM and SIGHUP stop the conversion (see :class:`Stop`), each only
    where this process has not been told to ignore it (``nohup``, a background job). Only the main
    thread can set handlers: elsewhere signals keep their handlers (Python's KeyboardInterrupt)."""
    stop = Stop(interrupt_file)
    previous: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for signum in STOP_SIGNALS:
            if signal.getsignal(signum) is not signal.SIG_IGN:
                previous[signum] = signal.signal(signum, stop.received)
    try:
        yield stop
    finally:
        for number, handler in previous.items():
            with contextlib.suppress(ValueError, TypeError):
                signal.signal(number, handler)


def show_interruption(exc: Interrupted) -> None:
    """The closing lines of an interrupted conversion, on stderr; where that is gone (``| tee``: the
    terminal's Ctrl-C stopped tee too), on the terminal itself, if there is one."""
    text = "\n".join(exc.lines) + "\n"
    try:
        start = "\n" if sys.stderr.isatty() else ""  # off the line the terminal echoed ^C on
        sys.stderr.write(start + text)
        sys.stderr.flush()
        return
    except (OSError, ValueError):
        pass
    with contextlib.suppress(OSError), open("/dev/tty", "w") as terminal:
        terminal.write("\n" + text)


def end_interrupted_call(exc: Interrupted) -> None:
    """``convert()`` stopped by a signal, after its lines: SIGINT is raised as KeyboardInterrupt (this
    :class:`Interrupted`); SIGTERM or SIGHUP goes to the handler the caller had (by default the
    process ends by it, exit status 128 + the signal), and if that handler returns, it is raised too."""
    if exc.signum != signal.SIGINT:
        signal.raise_signal(exc.signum)
    raise exc


@contextlib.contextmanager
def interruptible_call() -> Iterator[None]:
    """``convert()``'s body: a signal stops it at any moment (stopping_on_signals), its lines are
    shown, and then SIGINT is raised as KeyboardInterrupt (:class:`Interrupted`, with ``lines``), while
    SIGTERM or SIGHUP goes to the handler the caller had (end_interrupted_call)."""
    try:
        with stopping_on_signals():
            yield
    except Interrupted as exc:
        exc.lines = [line.replace("Run the same command again", "Call it again the same way") for line in exc.lines]
        show_interruption(exc)
        end_interrupted_call(exc)
