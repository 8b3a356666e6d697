"""The code stays formatted, lint-clean and type-checked: ruff, mypy and snakefmt (tests/workflow/test_style.py:
snakemake --lint), its imports layered as docs/architecture.md says (lint-imports); and small: no function
over 50 lines, no class over 150, in the package and the scripts, no module of the package over 500 lines;
and one meaning per name: no class name twice, no private name imported by another module."""

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


#: The most lines a module of the package may have (the standards: modules small, ~500 lines).
MODULE_LINES = 500
READER = REPO / "src" / "imagefolder_lmdb" / "reader"


def test_the_package_is_made_of_small_modules() -> None:
    assert len(list(READER.glob("*.py"))) >= 10, "the reader: one concern per module"
    modules = sorted((REPO / "src").rglob("*.py"))
    sizes = {str(path.relative_to(REPO)): len(path.read_text(encoding="utf-8").splitlines()) for path in modules}
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


PACKAGE = REPO / "src" / "imagefolder_lmdb"


def package_modules() -> dict[Path, ast.Module]:
    return {path: ast.parse(path.read_text(encoding="utf-8"), str(path)) for path in sorted(PACKAGE.rglob("*.py"))}


def private_names_imported(path: Path, tree: ast.Module) -> list[str]:
    """``from imagefolder_lmdb… import _name`` (or a relative one) anywhere in ``path``, inside
    functions too: a name used by another module is part of its home's interface, so it is public."""
    return [
        f"{path.relative_to(REPO)}:{node.lineno} imports {alias.name} from {node.module or '.'}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("imagefolder_lmdb"))
        for alias in node.names
        if alias.name.startswith("_") and not alias.name.startswith("__")
    ]


def test_no_module_imports_another_modules_private_name() -> None:
    found = [line for path, tree in package_modules().items() for line in private_names_imported(path, tree)]
    assert found == [], "make these public where they are defined:\n" + "\n".join(found)


def test_no_two_classes_of_the_package_share_a_name() -> None:
    # one meaning per name: a class named twice is two concepts a reader of the code can mix up
    homes: dict[str, list[str]] = {}
    for path, tree in package_modules().items():
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                homes.setdefault(node.name, []).append(str(path.relative_to(PACKAGE)))
    assert {name: where for name, where in homes.items() if len(where) > 1} == {}
