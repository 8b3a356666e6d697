# SPDX-License-Identifier: MIT
"""The Snakemake logger plugin ``imagefolder-lmdb``: the progress board instead of Snakemake's
per-job chatter, and a failure's actionable lines, each once, as the last lines of the run.

Snakemake finds it as the top-level package ``snakemake_logger_plugin_imagefolder_lmdb`` (which
re-exports :class:`LogHandler`): ``snakemake --logger imagefolder-lmdb ...``; ``imagefolder-lmdb
convert`` selects it unless ``--verbose``. A dry run shows Snakemake's own lines, as without it.

A failing job's own message comes from its step (src/imagefolder_lmdb/board/rule_runner.py), which,
when this plugin runs the show (``IMAGEFOLDER_LMDB_MESSAGES`` in the jobs' environment), writes it
to ``<its log>.message`` instead of the terminal; Snakemake's internals (the rule's temp script,
``CalledProcessError``, ``WorkflowError``) are left out. Where ``IMAGEFOLDER_LMDB_ERROR_FILE`` is
set (by ``imagefolder_lmdb.convert``), the closing lines go to that file for the caller to show
(or raise as ``ConvertError``) instead of to stderr.

An interrupted run (Ctrl-C, SIGINT to Snakemake, SIGTERM, which Snakemake answers by letting its
running jobs end) ends with the lines of :func:`imagefolder_lmdb.board.progress.interruption_lines`
instead: how far each split got and that the same command goes on from there; the jobs it stopped
are not failures (a step stopped by SIGINT leaves ``INTERRUPTED_MESSAGE`` as its message). Where
``IMAGEFOLDER_LMDB_INTERRUPT_FILE`` is set, those lines go to that file.
"""

from __future__ import annotations

import logging
import os
import re
import signal
import sys
import threading
import time
from types import FrameType
from typing import Any

from snakemake_interface_logger_plugins.base import LogHandlerBase

from imagefolder_lmdb.board import progress as progress_board
from imagefolder_lmdb.board.plugin_environment import (
    ERROR_FILE_VARIABLE,
    INTERRUPT_FILE_VARIABLE,
    PARENT_VARIABLE,
    TERMINAL_VARIABLE,
)
from imagefolder_lmdb.board.rule_runner import INTERRUPTED_MESSAGE
from imagefolder_lmdb.board.snakemake_words import (
    COMPLETE_LOGS,
    INTERNAL_LINE,
    NOTHING_TO_BE_DONE,
    REPEATS,
    finished_rule,
    stop_signal,
)
from imagefolder_lmdb.board.summary import up_to_date_lines

#: Set in the jobs' environment: a failing step writes its message beside its log, not to stderr.
MESSAGES_VARIABLE = "IMAGEFOLDER_LMDB_MESSAGES"


def message_file(log_path: str) -> str:
    """Where a failing step leaves its message: beside its log."""
    return f"{log_path}.message"


def event_of(record: logging.LogRecord) -> str:
    return str(getattr(record, "event", "") or "")


def plain_error(text: str) -> list[str]:
    """A Snakemake error's own lines, less the ones naming its internals (its files and lines)."""
    lines = [line for line in text.splitlines() if line.strip() and not INTERNAL_LINE.search(line)]
    return [line for line in lines if not re.fullmatch(r"\w+(Error|Exception):", line.strip())]


class LogHandler(LogHandlerBase):
    """Progress board, failed jobs' messages, and nothing else of Snakemake's (but a dry run's plan)."""

    def __post_init__(self) -> None:
        self.logs: list[str] = []
        self.jobs: dict[object, str | None] = {}  # job id: its split
        self.job_shards: dict[object, str | None] = {}  # job id: its shard (an encode job's)
        self.messages: list[str] = []
        self.closed = False
        self.nothing_to_do = False  # Snakemake found every output up to date
        self.interrupted: str | None = None  # the signal that stopped the run, by name
        self.dryrun = bool(self.common_settings.dryrun)
        if self.dryrun:
            from snakemake.logging import DefaultFormatter

            self.plain = DefaultFormatter(self.common_settings.quiet, self.common_settings.show_failed_logs)
            return
        os.environ[MESSAGES_VARIABLE] = "1"
        terminal = os.environ.get(TERMINAL_VARIABLE)
        self.board = progress_board.start_board(sys.stderr, None if terminal is None else terminal == "1")
        watch_interrupts(self)
        watch_parent(os.environ.get(PARENT_VARIABLE))

    def interrupt(self, signal_name: str) -> None:
        if self.interrupted is None:
            self.interrupted = signal_name

    def emit(self, record: logging.LogRecord) -> None:
        if self.dryrun:
            text = self.plain.format(record)
            if text and text != "None":
                print(text, file=sys.stderr, flush=True)
            return
        event = event_of(record)
        if event == "job_info":
            wildcards = dict(getattr(record, "wildcards", None) or {})
            split, shard, job = wildcards.get("split"), wildcards.get("shard"), getattr(record, "jobid", None)
            self.jobs[job], self.job_shards[job] = split, shard
            rule = str(record.rule_name)  # type: ignore[attr-defined]  # Snakemake's extra
            self.board.job(rule, split, shard=shard)
        elif event == "job_finished":
            self.finished(record)
        elif event == "job_error":
            self.job_failed(record)
        elif (stopped_on := stop_signal(str(record.msg))) is not None:
            self.interrupt(stopped_on)
        elif record.levelno >= logging.ERROR and event != "job_error":
            self.error(record.getMessage())
        elif str(record.msg).startswith(COMPLETE_LOGS):
            self.add(self.logs, str(record.msg).removeprefix(COMPLETE_LOGS))
        elif str(record.msg).startswith(NOTHING_TO_BE_DONE):
            self.nothing_to_do = True

    def finished(self, record: logging.LogRecord) -> None:
        """Snakemake names a finished job by its id and rule; its split comes from the job's info."""
        rule = finished_rule(record.getMessage())
        job = getattr(record, "job_id", None)
        if rule and job in self.jobs:
            self.board.job(rule, self.jobs[job], finished=True, shard=self.job_shards.get(job))

    def job_failed(self, record: logging.LogRecord) -> None:
        rule = str(getattr(record, "rule_name", "a job"))
        logs = [str(path) for path in getattr(record, "log", None) or []]
        if any(read_message(path) == INTERRUPTED_MESSAGE for path in logs):
            self.interrupt("SIGINT")
        if self.interrupted:  # stopped, not failed: its split's count is what the closing line gives
            return
        self.board.job(rule, self.jobs.get(getattr(record, "jobid", None)), failed=True)
        for path in logs:
            self.add(self.logs, path)
        shown = [message for message in map(read_message, logs) if message]
        for message in shown or [f"{rule} failed; its log says why: {', '.join(logs) or '(none)'}"]:
            self.add(self.messages, message)

    def error(self, text: str) -> None:
        if self.interrupted or any(repeat in text for repeat in REPEATS):
            return
        lines = plain_error(text)
        if lines:
            self.add(self.messages, "\n".join(lines))

    @staticmethod
    def add(where: list[str], text: str) -> None:
        if text not in where:
            where.append(text)

    def close(self) -> None:
        """At the end of the run: the board's final state, then the closing lines of a failure."""
        if not self.closed and not self.dryrun:
            self.closed = True
            if self.interrupted:
                self.conclude_interrupted(self.interrupted)
            elif self.nothing_to_do and not self.messages:
                progress_board.stop_board(draw=False)  # every split "waiting": say what is there instead
                print("\n".join(up_to_date_lines()), flush=True)
            else:
                progress_board.stop_board()
            if self.messages:
                self.conclude(closing_lines(self.logs, self.messages))
        super().close()

    def conclude_interrupted(self, signal_name: str) -> None:
        """How far each split got, and how to go on; the board's last state first, each running split
        marked interrupted. Under ``imagefolder-lmdb convert`` the lines go to its file, which names
        the signal it got (it stops Snakemake with SIGINT whatever stopped it)."""
        target = os.environ.get(INTERRUPT_FILE_VARIABLE)
        signal_name = read_signal_name(target) or signal_name
        lines = progress_board.interruption_lines(progress_board.board_states(), signal_name)
        for state in self.board.known().values():
            if state.stage not in ("waiting", "done"):
                state.stage = f"interrupted while {state.stage.removesuffix(' failed')}"
        progress_board.stop_board()
        leave_lines(lines, target)

    def conclude(self, lines: list[str]) -> None:
        leave_lines(lines, os.environ.get(ERROR_FILE_VARIABLE))

    @property
    def writes_to_stream(self) -> bool:
        return True

    @property
    def writes_to_file(self) -> bool:
        return False

    @property
    def has_filter(self) -> bool:
        return True

    @property
    def has_formatter(self) -> bool:
        return True

    @property
    def needs_rulegraph(self) -> bool:
        return False


def leave_lines(lines: list[str], target: str | None) -> None:
    """The closing lines: into ``target`` for ``imagefolder-lmdb convert`` to show, else on stderr."""
    if target:
        with open(target, "w") as stream:
            stream.write("\n".join(lines) + "\n")
        return
    print("\n".join(lines), file=sys.stderr, flush=True)


def watch_interrupts(handler: LogHandler) -> None:
    """Note a SIGINT before Snakemake's own handling of it (a KeyboardInterrupt), so that the jobs it
    stops are not reported as failed."""
    if threading.current_thread() is not threading.main_thread():
        return
    previous = signal.getsignal(signal.SIGINT)

    def noted(signum: int, frame: FrameType | None) -> Any:
        handler.interrupt("SIGINT")
        if callable(previous):
            return previous(signum, frame)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, noted)


#: Seconds between two looks at whether ``imagefolder-lmdb convert`` (this process's parent) lives.
PARENT_CHECK_INTERVAL = 0.5


def watch_parent(parent: str | None) -> None:
    """Under ``imagefolder-lmdb convert`` (its pid in ``parent``): should it die without stopping the
    run (SIGKILL, the OOM killer), stop Snakemake and its jobs as a Ctrl-C would, rather than leave
    them running with nobody to see them or to release the results folder."""
    if not parent or not parent.isdigit():
        return

    def watching() -> None:
        while os.getppid() == int(parent):
            time.sleep(PARENT_CHECK_INTERVAL)
        os.killpg(os.getpgrp(), signal.SIGINT)

    threading.Thread(target=watching, name="imagefolder-lmdb parent", daemon=True).start()


def read_signal_name(path: str | None) -> str | None:
    """The signal ``imagefolder-lmdb convert`` got, as it left it in the interrupt file (if it did)."""
    try:
        with open(path or "") as stream:
            text = stream.read().strip()
    except OSError:
        return None
    return text if text in progress_board.SIGNAL_WORDS else None


def read_message(log_path: str) -> str:
    try:
        with open(message_file(log_path)) as stream:
            return stream.read().strip()
    except OSError:
        return ""


def closing_lines(logs: list[str], messages: list[str]) -> list[str]:
    """The logs' paths once, then each distinct actionable message: the last lines a user reads.
    A fix that several messages end with (each failing shard's bad images) comes once, last."""
    head = [f"full log{'s' if len(logs) > 1 else ''}: {', '.join(logs)}"] if logs else []
    endings = [message.splitlines()[-1] for message in messages if len(message.splitlines()) > 1]
    shared = [
        ending for index, ending in enumerate(endings) if endings.count(ending) > 1 and ending not in endings[:index]
    ]
    body = []
    for message in messages:
        lines = message.splitlines()
        body += lines[:-1] if len(lines) > 1 and lines[-1] in shared else lines
    return head + body + shared
