"""One problem of a config, as one line naming the key, the value and the fix; and the error that
reports every problem of a config at once (src/imagefolder_lmdb/config/check.py collects them).

Snakemake prints an error raised while it reads the workflow as ``<class> in file "<file>", line
<n>:``, the message, and the frames between the raise and Snakemake's own code. A config problem is
the user's, not the code's: ConfigError shows Snakemake that first line and the problem lines only.

This module imports no Snakemake (issue 57): ``imagefolder-lmdb --help``, ``info`` and ``verify`` read
the command's flags from here on ``pip install .``, which has none. Code catches BaseConfigError and
raises ``config_error(...)``; ``ConfigError`` is Snakemake's WorkflowError subclass where Snakemake is
installed (made on first use, config_error_class), and BaseConfigError where it is not.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

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


class BaseConfigError(Exception):
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


def config_error(problems: Iterable[Problem]) -> BaseConfigError:
    """The error to raise for ``problems``: a ConfigError (see the module's docstring)."""
    return config_error_class()(problems)


@functools.cache
def config_error_class() -> type[BaseConfigError]:
    """ConfigError: made once, in a process that has Snakemake, as a WorkflowError that Snakemake's
    printer shows as ``ConfigError in file "<rules file>", line <n>:`` and the problem lines; without
    Snakemake (a reader's install) nothing prints it so, and the base says the same lines."""
    from imagefolder_lmdb.extras import installed

    if not installed("snakemake"):
        return BaseConfigError
    from snakemake.exceptions import WorkflowError

    class ConfigError(BaseConfigError, WorkflowError):
        """Every problem of a config, one per line, in Snakemake's error printer."""

    ConfigError.__qualname__ = "ConfigError"  # as the module names it (__getattr__)
    return ConfigError


def __getattr__(name: str) -> Any:
    # PEP 562: ``from imagefolder_lmdb.config.problems import ConfigError`` (the tests, a host's
    # workflow) imports Snakemake only then, and gets the class that config_error raises.
    if name == "ConfigError":
        return config_error_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
