"""What a name in prose can name, for tests/unit/test_prose_paths.py: each command's flags, Snakemake's,
the flags the repository's code passes or parses itself, the names a module defines, and the config
schema's keys."""

from __future__ import annotations

import argparse
import ast
import contextlib
import functools
import importlib
import io
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import yaml

from . import REPO

#: A config key's part that stands for any name: ``*``, ``<name>``, ``NAME``.
PLACEHOLDER = re.compile(r"\*|<[\w-]+>|[A-Z][A-Z_]*")


class _Parsed(Exception):
    """Raised instead of parsing, to hand the parser a command built back to the caller."""

    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.parser = parser


def _capture(parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> Any:
    raise _Parsed(parser)


@functools.cache
def command_flags() -> dict[str, frozenset[str]]:
    """Each ``imagefolder-lmdb`` command's options, from the parser its ``main`` builds (caught as it
    parses, so that nothing runs); ``""``: the top-level command's."""
    from imagefolder_lmdb.cli import COMMANDS, overview

    flags = {"": options_of(overview())}
    for name, (target, _) in COMMANDS.items():
        module, _, function = target.partition(":")
        main = getattr(importlib.import_module(module), function or "main")
        flags[name] = options_of(parser_built_by(main))
    return flags


def parser_built_by(main: Any) -> argparse.ArgumentParser:
    try:
        with (
            mock.patch.object(argparse.ArgumentParser, "parse_args", _capture),
            contextlib.redirect_stdout(io.StringIO()),
        ):
            main([])
    except _Parsed as parsed:
        return parsed.parser
    raise AssertionError(f"{main.__module__}.{main.__name__} parsed no arguments")


def options_of(parser: argparse.ArgumentParser) -> frozenset[str]:
    return frozenset(option for action in parser._actions for option in action.option_strings)


@functools.cache
def snakemake_flags() -> frozenset[str]:
    """The installed Snakemake's options (its plugins' options are named by the code that passes them)."""
    from snakemake.cli import get_argument_parser

    return options_of(get_argument_parser())


@functools.cache
def code_flags() -> frozenset[str]:
    """Every flag (``--…``) the repository's Python code holds as a string: the options its scripts and
    benchmarks parse, and those it hands other tools (pip, sbatch, a Snakemake plugin)."""
    flags = set()
    for top in ("src", "scripts", "tests", "benchmarks"):
        for path in (REPO / top).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    flags.update(re.findall(r"^(--[\w-]+)", node.value))
    return frozenset(flags)


@functools.cache
def defined_names(path: Path) -> frozenset[str]:
    """The names a Python file defines or imports anywhere in it (functions, methods, classes, names
    and attributes assigned, parameters); a Snakemake file's words."""
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".py":
        return frozenset(re.findall(r"\w+", text))
    return frozenset(name for node in ast.walk(ast.parse(text)) for name in names_of(node))


def names_of(node: ast.AST) -> Iterator[str]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        yield node.name
    elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
        for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
            for part in ast.walk(target):
                if isinstance(part, ast.Name):
                    yield part.id
                elif isinstance(part, ast.Attribute):
                    yield part.attr
    elif isinstance(node, ast.ImportFrom | ast.Import):
        yield from (alias.asname or alias.name for alias in node.names)
    elif isinstance(node, ast.arg):
        yield node.arg


@functools.cache
def schema() -> dict[str, Any]:
    return dict(yaml.safe_load((REPO / "config" / "schema.yaml").read_text(encoding="utf-8")))


def is_key(parts: list[str]) -> bool:
    """Whether ``parts`` (``encode``, ``short_side``) name a key of config/schema.yaml: after ``splits``,
    any split's name; a placeholder (``encode.*``, ``splits.NAME.KEY``) stands for any key."""
    properties: dict[str, Any] = schema()["properties"]
    parts = list(parts)
    while parts:
        part = parts.pop(0)
        if PLACEHOLDER.fullmatch(part):
            return True
        if part not in properties:
            return False
        if part == "splits" and parts:
            parts.pop(0)  # the split's name
            properties = schema()["$defs"]["split"]["properties"]
        else:
            properties = properties[part].get("properties", {})
    return True


def top_keys() -> list[str]:
    return sorted(schema()["properties"])
