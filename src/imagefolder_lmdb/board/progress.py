# SPDX-License-Identifier: MIT
"""One display of a whole conversion: per split, images done/total, img/s, ETA and bad images.

The encode jobs write a small progress file beside their shard report (``parts/{shard}.progress``:
done, bad, total), at most once a second: through the work folder, so that a job on another node
(``--profile slurm``) reaches the display as a local one does. The display lives in Snakemake's
controller (the logger plugin ``snakemake_logger_plugin_imagefolder_lmdb``); the workflow's
``common.smk`` registers each run's splits here (:func:`register`), and the plugin tells the board
which step each split is at. On a terminal it redraws a few lines; elsewhere (a log file, CI, a
notebook) it prints one plain line every few seconds.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import NamedTuple, TextIO

from imagefolder_lmdb.board.rule_table import RULES
from imagefolder_lmdb.work.paths import RunPaths

#: What an encode job's progress file is called, beside its shard report ``parts/{shard}.json``.
PROGRESS_SUFFIX = ".progress"
#: Seconds between an encode job's writes of its progress file.
WRITE_INTERVAL = 1.0
#: Seconds between redraws on a terminal, and between plain lines elsewhere; an unchanged plain line
#: is printed again only after HEARTBEAT_INTERVAL (a log shows the run is alive, without a line every 5 s).
TERMINAL_INTERVAL, PLAIN_INTERVAL, HEARTBEAT_INTERVAL = 0.5, 5.0, 60.0
#: The step a rule's job puts its split at, as the display names it (board/rule_table.py).
STAGES = {rule.name: rule.stage for rule in RULES}


def progress_path(shard_report: str) -> str:
    """The progress file of the encode job whose shard report is ``shard_report``."""
    return os.path.splitext(shard_report)[0] + PROGRESS_SUFFIX


class ProgressWriter:
    """An encode job's side: done/bad/total in a file, replaced whole at most once a second."""

    def __init__(self, path: str, total: int) -> None:
        self.path, self.total, self.written = path, total, 0.0
        self.started = time.time()  # encoding starts now: the job's start-up is no encoding time
        self.last = (0, 0)  # the latest counts, written or not yet
        WRITERS.append(self)
        self.update(0, 0, force=True)

    def update(self, done: int, bad: int, force: bool = False) -> None:
        self.last = (done, bad)
        now = time.monotonic()
        if not force and now - self.written < WRITE_INTERVAL:
            return
        self.written = now
        partial = f"{self.path}.incomplete"
        try:
            with open(partial, "w") as stream:
                times = {"started": self.started, "updated": time.time()}
                stream.write(json.dumps({"done": done, "bad": bad, "total": self.total, **times}))
            os.replace(partial, self.path)
        except OSError:
            pass  # progress is a courtesy: a full disk is the job's own error to report, not this


#: This process's progress writers: an interrupted job writes their latest counts (flush_progress).
WRITERS: list[ProgressWriter] = []


def flush_progress() -> None:
    """Write every writer's latest counts: an interrupted job's true count for the closing lines
    (a write is skipped within a second of the last one)."""
    for writer in WRITERS:
        writer.update(*writer.last, force=True)


class Progress(NamedTuple):
    """One encode job's progress file: images done and bad, and when it started and last wrote."""

    done: int = 0
    bad: int = 0
    started: float = 0.0
    updated: float = 0.0


def read_progress(path: str) -> Progress:
    """One progress file; zeros where it is missing or half written (no times: an older version's)."""
    try:
        with open(path) as stream:
            state = json.load(stream)
        times = (float(state["started"]), float(state["updated"])) if "updated" in state else (0.0, 0.0)
        return Progress(int(state["done"]), int(state["bad"]), *times)
    except (OSError, ValueError, KeyError, TypeError):
        return Progress()


def encoding_seconds(states: list[Progress]) -> float:
    """The time during which at least one job encoded: the union of each job's span from its start to
    its last write, so that neither a job's start-up nor a wait between jobs (another split's class
    list, a free core) counts."""
    spans = sorted((state.started, state.updated) for state in states if state.done and state.updated)
    total, reached = 0.0, float("-inf")
    for start, end in spans:
        if end > reached:
            total += end - max(start, reached)
            reached = end
    return total


@dataclass
class SplitState:
    """What the display knows of one split."""

    name: str
    paths: RunPaths
    stage: str = "waiting"
    total: int | None = None
    done: int = 0
    bad: int = 0
    kept: int = 0  # the images of shards whose part is complete: what a rerun does not encode again
    shards: set[str] = field(default_factory=set)
    # encode jobs started in this run that Snakemake has not seen finish: it redoes them on a rerun
    # even where the job wrote its report (Snakemake's own "incomplete" mark goes only then)
    unfinished: set[str] = field(default_factory=set)
    seconds: float = 0.0  # encoding time, from the progress files (encoding_seconds)
    listed: float = 0.0  # when the counts report that gave ``total`` was written
    listed_after: float = 0.0  # a listing job started at this time: counts older than it are stale

    def refresh(self) -> None:
        """Read the counts report (the total) and the progress files written since it (a listing
        made again makes the shards of the earlier one stale, however many there were)."""
        counts = self.paths.counts(self.name)
        if self.stage == "waiting" and verified_since_listing(self.paths, self.name):
            self.stage = "done"  # finished before this run: no job of it has started (one would say)
        if self.total is None:
            try:
                if os.path.getmtime(counts) < self.listed_after:
                    return  # the earlier listing's, about to be replaced in this run
                with open(counts) as stream:
                    self.total = int(json.load(stream)["images"])
                self.listed = os.path.getmtime(counts)
            except (OSError, ValueError, KeyError, TypeError):
                return
        folder = os.path.dirname(self.paths.part_report(self.name, "x"))
        files = [os.path.join(folder, name) for name in listing(folder) if name.endswith(PROGRESS_SUFFIX)]
        current = {path: read_progress(path) for path in files if modified(path) >= self.listed}
        states = list(current.values())
        self.done, self.bad = sum(state.done for state in states), sum(state.bad for state in states)
        kept = [state for path, state in current.items() if shard_finished(path, self.unfinished)]
        self.kept = sum(state.done for state in kept)
        self.seconds = encoding_seconds(states)

    def line(self, width: int = 0) -> str:
        """``train  1,234/12,000 images  850 img/s  ETA 0:13  0 bad  encoding``."""
        if self.total is None:
            return f"{self.name}: {self.stage}"
        interrupted = self.stage.startswith("interrupted")  # its last line: what a rerun keeps, as how_far
        counting = self.stage in ("encoding", "waiting", "listing") or interrupted
        done = min(self.kept if interrupted else self.done, self.total) if counting else self.total
        parts = [f"{self.name}: {done:,}/{self.total:,} images"]
        rate = self.rate()
        if rate and self.stage == "encoding" and done < self.total:
            parts.append(f"{rate:,.0f} img/s, ETA {clock((self.total - done) / rate)}")
        elif rate:
            parts.append(f"{rate:,.0f} img/s")
        parts.append(f"{self.bad:,} bad")
        text = ", ".join(parts) + f" ({self.stage})"
        return f"{bar(done, self.total, width)} {text}" if width else text

    def rate(self) -> float | None:
        """Images per second of encoding time (encoding_seconds), None before there is any."""
        return self.done / self.seconds if self.seconds > 0 and self.done else None


def shard_finished(progress_file: str, unfinished: set[str]) -> bool:
    """Whether the encode job of ``progress_file`` finished: its shard report, written last, is there
    (an interrupted job leaves neither it nor its part, and its images are encoded again), and it is
    not among the ``unfinished`` shards (started in this run, its end not yet recorded by Snakemake)."""
    report = os.path.splitext(progress_file)[0] + ".json"
    return os.path.basename(os.path.splitext(report)[0]) not in unfinished and os.path.exists(report)


def modified(path: str) -> float:
    try:
        return os.path.getmtime(path)
    except OSError:
        return 0.0


def listing(folder: str) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def clock(seconds: float) -> str:
    minutes, seconds = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes}:{seconds:02d}"


def bar(done: int, total: int, width: int) -> str:
    filled = width * done // total if total else width
    return "[" + "#" * filled + "." * (width - filled) + "]"


#: The runs the workflow's controller registered (one per config; a host workflow may import several).
REGISTERED: list[tuple[RunPaths, list[str]]] = []


def register(paths: RunPaths, splits: list[str]) -> None:
    """Called by rules/common.smk as Snakemake reads the workflow: which splits the display shows."""
    absolute = RunPaths(os.path.abspath(paths.results), os.path.abspath(paths.work))
    if (absolute, splits) not in REGISTERED:
        REGISTERED.append((absolute, list(splits)))


class Board:
    """Every registered split's state, and the drawing of it (redraws on a terminal, lines elsewhere)."""

    def __init__(self, stream: TextIO, terminal: bool) -> None:
        self.stream, self.terminal = stream, terminal
        self.splits: dict[str, SplitState] = {}
        self.drawn: list[str] = []  # the lines of the last redraw, to move back over
        self.lock = threading.Lock()
        self.last_plain = 0.0
        self.last_plain_line = ""
        self.stopped = False

    def known(self) -> dict[str, SplitState]:
        for paths, names in REGISTERED:
            for name in names:
                self.splits.setdefault(name, SplitState(name, paths))
        return self.splits

    def job(
        self, rule: str, split: str | None, finished: bool = False, failed: bool = False, shard: str | None = None
    ) -> None:
        """A job of ``rule`` for ``split`` (and ``shard``) started (or finished, or failed): the split's
        step, and which of its encode jobs are running."""
        state = self.known().get(split or "")
        if state is None or rule not in STAGES:
            return
        with self.lock:
            if rule == "encode_shard" and shard is not None:
                if finished:
                    state.unfinished.discard(shard)
                else:
                    state.unfinished.add(shard)
            if failed:
                state.stage = f"{STAGES[rule]} failed"
            elif not finished:
                state.stage = STAGES[rule]
                if rule in ("extract", "count_check"):  # the split is listed again: its total is to come
                    state.total, state.listed_after = None, time.time()
            elif rule == "report_split" or (rule == "verify" and state.stage == "verifying"):
                state.stage = "done"

    def tick(self) -> None:
        """Redraw (terminal) or, every few seconds, print one plain line."""
        with self.lock:
            if self.stopped or not self.known():
                return
            for state in self.splits.values():
                state.refresh()
            if self.terminal:
                self.redraw()
            elif time.monotonic() - self.last_plain >= PLAIN_INTERVAL:
                self.plain_line("progress: " + "; ".join(state.line() for state in self.splits.values()))

    def plain_line(self, line: str) -> None:
        """Print ``line``, unless it is the last one printed and that was less than a heartbeat ago."""
        if line != self.last_plain_line or time.monotonic() - self.last_plain >= HEARTBEAT_INTERVAL:
            self.write(line + "\n")
            self.last_plain, self.last_plain_line = time.monotonic(), line

    def redraw(self) -> None:
        lines = [state.line(width=24) for state in self.splits.values()]
        if lines != self.drawn:
            back = f"\x1b[{len(self.drawn)}F\x1b[J" if self.drawn else ""
            self.write(back + "".join(line + "\n" for line in lines))
            self.drawn = lines

    def stop(self, draw: bool = True) -> None:
        """The final state, once: the terminal's last redraw stays; elsewhere one plain line per split.
        ``draw=False``: stop without it (a run that had nothing to do shows its summary instead)."""
        with self.lock:
            if self.stopped:
                return
            self.stopped = True
            if not draw:
                return
            for state in self.known().values():
                state.refresh()
            if self.terminal and self.splits:
                self.redraw()
            else:
                self.write("".join(state.line() + "\n" for state in self.splits.values()))

    def write(self, text: str) -> None:
        if text:
            self.stream.write(text)
            self.stream.flush()


#: The board of this process's run (the logger plugin starts it; the workflow's onsuccess stops it).
BOARD: Board | None = None


def start_board(stream: TextIO = sys.stderr, terminal: bool | None = None) -> Board:
    """The board and the thread that ticks it until :func:`stop_board`."""
    global BOARD
    interactive = stream.isatty() if terminal is None else terminal
    BOARD = Board(stream, interactive)
    board = BOARD

    def ticking() -> None:
        while not board.stopped:
            time.sleep(TERMINAL_INTERVAL if interactive else 1.0)
            board.tick()

    threading.Thread(target=ticking, name="imagefolder-lmdb progress", daemon=True).start()
    return board


def stop_board(draw: bool = True) -> None:
    """Draw the final state (unless ``draw`` is False) and stop, before the summary prints, so that
    no redraw lands after it."""
    if BOARD is not None:
        BOARD.stop(draw)


# -- an interrupted run: how far each split got ---------------------------------------------------

#: The steps after encoding: every image of the split is encoded by then.
AFTER_ENCODING = ("merging", "writing meta", "verifying", "reporting")
#: How the closing line names each signal: Ctrl-C is the common case and needs no name.
SIGNAL_WORDS = {"SIGINT": "interrupted", "SIGTERM": "interrupted by SIGTERM", "SIGHUP": "interrupted by SIGHUP"}


def how_far(state: SplitState) -> str:
    """``train 58/350 images encoded and kept``: the images of the shards that finished, which a rerun
    does not encode again (an interrupted shard's images are encoded again from its first), or the
    step the split had reached."""
    stage = state.stage.removesuffix(" failed")
    if stage == "done" or (stage == "waiting" and verified_since_listing(state.paths, state.name)):
        return f"{state.name} done"
    if state.total is None:
        return f"{state.name} {'listing' if stage in ('reading the source', 'listing') else 'not started'}"
    if stage in AFTER_ENCODING:
        return f"{state.name} {state.total:,}/{state.total:,} images encoded, stopped while {stage}"
    return f"{state.name} {min(state.kept, state.total):,}/{state.total:,} images encoded and kept"


def verified_since_listing(paths: RunPaths, name: str) -> bool:
    """The split's verify report is newer than its listing: its dataset was finished (in this run or
    before it), and no listing since has started it again."""
    report = modified(paths.verify_report(name))
    return report > 0 and report >= modified(paths.counts(name))


def interruption_lines(states: list[SplitState], signal_name: str = "SIGINT") -> list[str]:
    """The closing lines of an interrupted run: that it was, how far each split got, how to go on."""
    words = SIGNAL_WORDS.get(signal_name, f"interrupted by {signal_name}")
    reached = "; ".join(how_far(state) for state in states) or "nothing started"
    return [f"{words}: {reached}.", "Run the same command again: it goes on from there."]


def states_from_files(runs: list[tuple[RunPaths, list[str]]]) -> list[SplitState]:
    """Each split's state as its files tell it (no board to ask: Snakemake stopped before its logger
    could write the lines, or never started)."""
    states = [SplitState(name, paths) for paths, names in runs for name in names]
    for state in states:
        state.refresh()
    return states


def board_states() -> list[SplitState]:
    """The board's splits, read afresh (the logger plugin's view of an interrupted run)."""
    if BOARD is None:
        return states_from_files(REGISTERED)
    with BOARD.lock:
        states = list(BOARD.known().values())
        for state in states:
            state.refresh()
    return states
