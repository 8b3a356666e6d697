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
from collections.abc import Sequence
from pathlib import Path
from typing import IO, TextIO

from imagefolder_lmdb.run.workflow_folder import workflow_folder

#: The packaged workflow: its Snakefile is what a host workflow's ``module`` may name, too.
WORKFLOW = workflow_folder()
SNAKEFILE = WORKFLOW / "Snakefile"
#: Profiles shipped with the workflow: ``default`` (always applied) and ``slurm`` (``--profile slurm``).
PROFILES = WORKFLOW / "profiles"
#: The logger plugin (``snakemake_logger_plugin_imagefolder_lmdb``) as ``--logger`` names it.
PLUGIN = "imagefolder-lmdb"
#: Set for the plugin: where its closing lines go (this process shows them, once).
ERROR_FILE_VARIABLE = "IMAGEFOLDER_LMDB_ERROR_FILE"
#: Set for the plugin: "1" where this process's stderr is a terminal (the plugin's is a pipe to it).
TERMINAL_VARIABLE = "IMAGEFOLDER_LMDB_TERMINAL"
#: Lines Snakemake prints before its logger exists, shown only with ``verbose``.
CHATTER = (b"Using workflow specific profile ", b"Using profiles ", b"Using profile ")


class ConvertError(RuntimeError):
    """The workflow failed or could not be started; ``lines`` are what to do about it (file, cause, fix)."""

    def __init__(self, message: str, returncode: int = 1, lines: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.returncode = returncode
        self.lines = list(lines) or message.splitlines()


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
    import importlib.util

    if importlib.util.find_spec("snakemake") is None or importlib.util.find_spec("yaml") is None:
        raise ConvertError(
            "converting runs the Snakemake workflow, and Snakemake is not installed here: "
            "pip install 'imagefolder-lmdb[convert]' (or [slurm] for --profile slurm)",
            1,
        )


def relay(streams: dict[IO[bytes], TextIO], verbose: bool) -> None:
    """Copy the child's stdout and stderr, line by line as they come, to this process's (a terminal,
    a log, a notebook's cell): one reader for both, so that lines keep the order they were written in.

    Each stream is read with plain ``os.read`` (a buffered reader keeps lines that ``select`` no longer
    sees, which then came out only at the end, after the summary), and where several are ready at once
    they are served in the order of ``streams``: the board's stderr first, then the summary's stdout,
    as the child wrote them."""
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
                show([line + b"\n" for line in lines if chunk or line], targets[key.fd], verbose)


def show(lines: list[bytes], target: TextIO, verbose: bool) -> None:
    """Write ``lines`` to ``target``, leaving out Snakemake's own chatter unless ``verbose``."""
    shown = [line.decode(errors="replace") for line in lines if verbose or not line.startswith(CHATTER)]
    if shown:
        target.write("".join(shown))
        target.flush()


def run_snakemake(command: list[str], verbose: bool = False) -> None:
    """Run Snakemake and relay its output; ConvertError with the closing lines when it fails.
    On Ctrl-C Snakemake (which got the signal too) is waited for while it stops its jobs; a
    SIGTERM to this process is passed on to it. A dry run's output is Snakemake's, whole."""
    verbose = verbose or "--dry-run" in command or "-n" in command
    with tempfile.TemporaryDirectory(prefix="imagefolder-lmdb-") as folder:
        error_file = os.path.join(folder, "error.txt")
        environment = {**snakemake_environment(), ERROR_FILE_VARIABLE: error_file}
        environment[TERMINAL_VARIABLE] = "1" if sys.stderr.isatty() else "0"
        environment["PYTHONUNBUFFERED"] = "1"  # the summary (stdout) after the board's last lines (stderr)
        process = subprocess.Popen(command, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        streams = {process.stderr: sys.stderr, process.stdout: sys.stdout}  # stderr first: see relay
        thread = threading.Thread(target=relay, args=(streams, verbose), daemon=True)
        thread.start()
        returncode = wait_passing_signals(process)
        thread.join()
        lines = Path(error_file).read_text().splitlines() if os.path.exists(error_file) else []
    if returncode != 0:
        fallback = f"the workflow failed (Snakemake exit status {returncode}); see its messages above"
        raise ConvertError("\n".join(lines) or fallback, returncode, lines)


def wait_passing_signals(process: subprocess.Popen[bytes]) -> int:
    """Wait for ``process``; SIGTERM here is sent on to it (as a kill of the command would reach Snakemake)."""
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, lambda signum, frame: process.send_signal(signum))
    try:
        while True:
            try:
                return process.wait()
            except KeyboardInterrupt:
                continue  # Snakemake received the same SIGINT and is stopping its jobs
    finally:
        if previous is not None:
            with contextlib.suppress(ValueError):
                signal.signal(signal.SIGTERM, previous)
