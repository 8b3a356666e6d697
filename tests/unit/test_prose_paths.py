"""Paths named in prose resolve: every ``src/``, ``scripts/``, ``rules/``, ``docs/`` or ``tests/`` path
and every dotted ``imagefolder_lmdb.…`` name in a docstring or comment of the code (src, scripts,
rules, the Snakefile, tests, benchmarks) names something that exists, so a move cannot leave a
pointer behind."""

from __future__ import annotations

import ast
import importlib
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

from support import REPO

#: Where prose names things: the code's docstrings and comments.
CODE = ("src", "scripts", "rules", "tests", "benchmarks")
#: A path from the repository's top (a placeholder like ``<rule>`` or a pattern like ``*.py`` is no path).
PATH = re.compile(r"(?<![\w./-])((?:src|scripts|rules|docs|tests)/[\w./-]*\w)")
#: A path inside the package, as the package's prose names its modules (``work/paths.py``); ``config/``
#: also names the repository's top folder of configs.
SUBPACKAGES = sorted(path.parent.name for path in (REPO / "src" / "imagefolder_lmdb").glob("*/__init__.py"))
PACKAGE_PATH = re.compile(rf"(?<![\w./-])((?:{'|'.join(SUBPACKAGES)})/[\w/]*\w\.(?:py|yaml|tsv|txt))")
#: A dotted name in the package.
DOTTED = re.compile(r"(?<![\w.])(imagefolder_lmdb(?:\.\w+)+)")


def python_prose(text: str) -> Iterator[str]:
    """A Python file's comments and docstrings."""
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            yield token.string
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            yield ast.get_docstring(node, clean=False) or ""


def snakemake_prose(text: str) -> Iterator[str]:
    """A Snakemake file's comments and triple-quoted docstrings."""
    yield from re.findall(r"#.*$", text, re.M)
    yield from re.findall(r'"""(.*?)"""', text, re.S)


def prose() -> Iterator[tuple[Path, str]]:
    files = [path for top in CODE for path in sorted((REPO / top).rglob("*")) if path.suffix in (".py", ".smk")]
    for path in [*files, REPO / "Snakefile"]:
        text = path.read_text(encoding="utf-8")
        for chunk in python_prose(text) if path.suffix == ".py" else snakemake_prose(text):
            yield path.relative_to(REPO), chunk


def resolves(dotted: str) -> bool:
    """Whether ``dotted`` is a module of the package, or a name in one."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            if not hasattr(found, name):
                return False
            found = getattr(found, name)
        return True
    return False


def test_every_path_and_dotted_name_in_prose_resolves() -> None:
    missing = set()
    for path, chunk in prose():
        for named in PATH.findall(chunk):
            if not (REPO / named.rstrip(".")).exists():
                missing.add(f"{path}: {named}")
        for named in PACKAGE_PATH.findall(chunk):
            if not any((top / named).exists() for top in (REPO, REPO / "src" / "imagefolder_lmdb")):
                missing.add(f"{path}: {named}")
        for dotted in DOTTED.findall(chunk):
            if not resolves(dotted.rstrip(".")):
                missing.add(f"{path}: {dotted}")
    assert sorted(missing) == []
