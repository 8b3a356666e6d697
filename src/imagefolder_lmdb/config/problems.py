"""One problem of a config, as one line naming the key, the value and the fix; and the error that
reports every problem of a config at once (src/imagefolder_lmdb/config/check.py collects them).

Snakemake prints an error raised while it reads the workflow as ``<class> in file "<file>", line
<n>:``, the message, and the frames between the raise and Snakemake's own code. A config problem is
the user's, not the code's: ConfigError shows Snakemake that first line and the problem lines only.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from snakemake.exceptions import WorkflowError

#: A key path in the config: ("splits", "train", "shards").
KeyPath = tuple[str, ...]

#: The longest value a problem line quotes (a list of 1,000 classes is shown cut short).
SHOWN_VALUE = 60


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a config: where (a key path, or a file) and what to do."""

    where: str  # "config key splits.train.shards", "config file /data/config.yaml"; "" when text says it
    text: str  # what is wrong and the fix
    path: KeyPath = ()  # the key's place in the config, for the order of the lines
    missing_path: bool = False  # only that a path the config names does not exist (yet)

    @property
    def line(self) -> str:
        stop = "" if self.text.endswith(("?", ".", ":")) else "."
        return f"{self.where}: {self.text}{stop}" if self.where else f"{self.text}{stop}"


def key_problem(path: Sequence[str], text: str, missing_path: bool = False) -> Problem:
    """A problem of the config key at ``path``."""
    return Problem(f"config key {dotted(path)}", text.rstrip("."), tuple(path), missing_path)


def dotted(path: Sequence[str]) -> str:
    return ".".join(str(part) for part in path)


def shown(value: Any) -> str:
    """A value as a problem line quotes it: its repr, cut short when long."""
    text = repr(value)
    return text if len(text) <= SHOWN_VALUE else text[: SHOWN_VALUE - 4] + " ..."


class ConfigError(WorkflowError):
    """Every problem of a config, one per line. Its traceback is hidden from Snakemake's printer: the
    frames of the checking code would only bury the lines that say what to change."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(problem.line for problem in self.problems))
        self.snakefile, self.lineno = workflow_caller()  # Snakemake's first line names the call

    @property
    def __traceback__(self) -> None:
        return None

    @__traceback__.setter
    def __traceback__(self, value: object) -> None:
        vars(BaseException)["__traceback__"].__set__(self, value)  # the slot the property hides


def workflow_caller() -> tuple[str | None, int | None]:
    """The file and line of the innermost frame outside this package: the rules file that asked
    for the check (Snakemake maps the line to the rules file's own numbering)."""
    package = os.path.dirname(os.path.abspath(__file__))
    frame = sys._getframe(1)
    while frame is not None and os.path.dirname(os.path.abspath(frame.f_code.co_filename)).startswith(package):
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:
        return None, None
    return frame.f_code.co_filename, frame.f_lineno
