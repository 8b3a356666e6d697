"""The code stays formatted, lint-clean and type-checked: ruff, mypy and snakefmt (tests/workflow/test_style.py:
snakemake --lint), its imports layered as docs/architecture.md says (lint-imports); and small: no function
over 50 lines, no class over 150, in the package and the scripts (the reader, src/imagefolder_lmdb/reader/,
included; its modules at most ~500 lines)."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import pytest

from support import BIN, REPO
from support.commands import run_check

CHECKS = {
    "ruff check": [str(BIN / "ruff"), "check", "scripts", "src", "tests", "benchmarks"],
    "ruff format": [str(BIN / "ruff"), "format", "--check", "scripts", "src", "tests", "benchmarks"],
    "snakefmt": [str(BIN / "snakefmt"), "--check", "Snakefile", "rules"],
    "mypy": [str(BIN / "mypy")],  # src and scripts, as pyproject.toml's [tool.mypy] says
    # the layers of docs/architecture.md, the reader without the workflow, no circles: [tool.importlinter]
    "lint-imports": [str(BIN / "lint-imports")],
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
    assert files >= {(REPO / "src" / "imagefolder_lmdb" / "reader" / "dataset.py").resolve()}
    over = [line for path in sorted(files) for line in definitions_over_limit(path)]
    assert over == [], "split these:\n" + "\n".join(over)


#: The most lines a module of the reader may have (the standards: modules small, ~500 lines).
MODULE_LINES = 500
READER = REPO / "src" / "imagefolder_lmdb" / "reader"


def test_reader_is_a_package_of_small_modules() -> None:
    modules = sorted(READER.glob("*.py"))
    assert len(modules) >= 10, "one concern per module"
    sizes = {path.name: len(path.read_text(encoding="utf-8").splitlines()) for path in modules}
    assert {name: lines for name, lines in sizes.items() if lines > MODULE_LINES} == {}, "split these"


@pytest.mark.parametrize("module", ["scripts/dataset.py", "src/imagefolder_lmdb/dataset.py"])
def test_reader_entry_modules_only_re_export(module: str) -> None:
    """``from dataset import LMDBDataset`` (a checkout) and ``imagefolder_lmdb.dataset`` (the reader's
    old home) name the reader's package: no second copy of any of its code to keep in step."""
    tree = ast.parse((REPO / module).read_text(encoding="utf-8"))
    statements = [node for node in tree.body if not isinstance(node, ast.Expr)]  # the docstring aside
    assert statements and all(isinstance(node, ast.ImportFrom) for node in statements), module
    assert {node.module for node in statements} == {"imagefolder_lmdb.reader"}, module


def test_no_merge_conflict_markers() -> None:
    # A merge once left its markers in docs/training.md, where no other check looks.
    tracked = subprocess.run(["git", "-C", str(REPO), "ls-files"], capture_output=True, text=True, check=True)
    markers = ("<<<<<<< ", ">>>>>>> ", "=======\n")
    found = []
    for name in tracked.stdout.splitlines():
        path = REPO / name
        if path.suffix in {".md", ".py", ".smk", ".yaml", ".toml", ".txt"} or path.name in {"Snakefile", "Makefile"}:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
            found += [f"{name}:{number}" for number, line in enumerate(lines, 1) if line.startswith(markers)]
    assert not found, found
