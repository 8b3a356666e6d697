"""The code stays formatted and lint-clean: ruff and snakefmt (tests/workflow/test_style.py:
snakemake --lint); and small: no function over 50 lines, no class over 150, in the package and the
scripts (the reader, scripts/dataset.py, included)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from support import BIN, REPO
from support.commands import run_check

CHECKS = {
    "ruff check": [str(BIN / "ruff"), "check", "scripts", "src", "tests", "benchmarks"],
    "ruff format": [str(BIN / "ruff"), "format", "--check", "scripts", "src", "tests", "benchmarks"],
    "snakefmt": [str(BIN / "snakefmt"), "--check", "Snakefile", "rules"],
}


@pytest.mark.parametrize("name", CHECKS)
def test_clean(name: str) -> None:
    run_check(CHECKS[name])


#: The project's limits (the standards in the contributors' notes): lines of a definition, its
#: docstring and decorators included.
MOST_LINES = {ast.FunctionDef: 50, ast.AsyncFunctionDef: 50, ast.ClassDef: 150}


def definitions_over_limit(path: Path) -> list[str]:
    """Every function (methods and nested ones too) and class of ``path`` longer than its limit."""
    over = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        limit = MOST_LINES.get(type(node))
        if limit is not None:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            lines = node.end_lineno - first + 1
            if lines > limit:
                over.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name}: {lines} lines (at most {limit})")
    return over


def test_functions_and_classes_are_small() -> None:
    files = {path.resolve() for folder in ("src", "scripts") for path in (REPO / folder).rglob("*.py")}
    assert files >= {(REPO / "scripts" / "dataset.py").resolve()}
    over = [line for path in sorted(files) for line in definitions_over_limit(path)]
    assert over == [], "split these:\n" + "\n".join(over)
