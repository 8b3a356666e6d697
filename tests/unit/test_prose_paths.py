"""Names in prose resolve, so that a move or a rename cannot leave a pointer behind. In the code's
docstrings and comments (src, scripts, rules, the Snakefile, tests, benchmarks) and in the docs (docs/,
README.md): every ``src/``, ``scripts/``, ``rules/``, ``docs/`` or ``tests/`` path and every dotted
``imagefolder_lmdb.…`` name names something that exists; a name given after its module
(``config/flags.py`` ``CONVERT_FLAGS``) is defined there; a flag (``--…``) is an option of the command
line it stands in (``imagefolder-lmdb info --json``), or standing alone, of a command, of Snakemake,
or one the code passes or parses itself; a dotted config key (``encode.short_side``) is a key of
config/schema.yaml. BENCHMARKS.md is left out: a record of runs, it names what the code was then."""

from __future__ import annotations

import ast
import functools
import importlib
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

from support import REPO
from support.prose_names import code_flags, command_flags, defined_names, is_key, snakemake_flags, top_keys

#: Where prose names things: the code's docstrings and comments, and the docs.
CODE = ("src", "scripts", "rules", "tests", "benchmarks")
DOCS = (*sorted((REPO / "docs").glob("*.md")), REPO / "README.md")
#: A path from the repository's top (a placeholder like ``<rule>`` or a pattern like ``*.py`` is no path).
PATH = re.compile(r"(?<![\w./-])((?:src|scripts|rules|docs|tests)/[\w./-]*\w)(?![\w./<*{-])")
#: A path inside the package, as the package's prose names its modules (``work/paths.py``); ``config/``
#: also names the repository's top folder of configs.
SUBPACKAGES = sorted(path.parent.name for path in (REPO / "src" / "imagefolder_lmdb").glob("*/__init__.py"))
PACKAGE_PATH = re.compile(rf"(?<![\w./-])((?:{'|'.join(SUBPACKAGES)})/[\w/]*\w\.(?:py|yaml|tsv|txt))")
#: A dotted name in the package.
DOTTED = re.compile(r"(?<![\w.])(imagefolder_lmdb(?:\.\w+)+)")
#: Files a reader makes, named by the steps that make them (``cp config/imagenet.yaml config/mine.yaml``).
USERS_FILES = {"config/mine.yaml"}


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


@functools.cache
def prose() -> list[tuple[Path, str]]:
    """Each file's prose, by the file's path from the repository's top (read once for every test)."""
    return list(each_prose())


def each_prose() -> Iterator[tuple[Path, str]]:
    files = [path for top in CODE for path in sorted((REPO / top).rglob("*")) if path.suffix in (".py", ".smk")]
    for path in [*files, REPO / "Snakefile"]:
        text = path.read_text(encoding="utf-8")
        for chunk in python_prose(text) if path.suffix == ".py" else snakemake_prose(text):
            yield path.relative_to(REPO), chunk
    for path in DOCS:
        yield path.relative_to(REPO), path.read_text(encoding="utf-8")


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


def workflow_defines(dotted: str) -> bool:
    """Whether ``dotted`` is a function of the workflow as a Snakemake module names it
    (``imagefolder_lmdb.print_summary``: docs/sources.md)."""
    files = [REPO / "Snakefile", *sorted((REPO / "rules").glob("*.smk"))]
    name = dotted.removeprefix("imagefolder_lmdb.")
    return any(re.search(rf"^def {name}\(", path.read_text(encoding="utf-8"), re.M) for path in files)


def test_every_path_and_dotted_name_in_prose_resolves() -> None:
    missing = set()
    for path, chunk in prose():
        for named in PATH.findall(chunk):
            if not (REPO / named.rstrip(".")).exists():
                missing.add(f"{path}: {named}")
        for named in PACKAGE_PATH.findall(chunk):
            if named not in USERS_FILES and not any(
                (top / named).exists() for top in (REPO, REPO / "src" / "imagefolder_lmdb")
            ):
                missing.add(f"{path}: {named}")
        for dotted in DOTTED.findall(chunk):
            if not resolves(dotted.rstrip(".")) and not workflow_defines(dotted.rstrip(".")):
                missing.add(f"{path}: {dotted}")
    assert sorted(missing) == []


#: A name given after its module: ``cli.py`` ``convert_parser``, `run/paths.py`'s `shard_name`,
#: `config/settings.py` `apply(...)`.
NAMED = re.compile(r"(?<![\w./-])((?:\w+/)*\w+\.(?:py|smk))`{0,2}(?:'s)?:? `{1,2}([A-Za-z_]\w*)(?:\([^`]*\))?`{1,2}")


def module_file(named: str, where: Path) -> Path | None:
    """A module as prose names it: from the repository's top, the package's, or the naming file's folder."""
    for top in (REPO, REPO / "src" / "imagefolder_lmdb", (REPO / where).parent):
        if (top / named).is_file():
            return top / named
    return None


def undefined_names(path: Path, chunk: str) -> Iterator[str]:
    for module, name in NAMED.findall(chunk):
        file = module_file(module, path)
        if file is not None and name not in defined_names(file):
            yield f"{module} {name}"


def test_every_name_given_after_its_module_is_defined_there() -> None:
    missing = {f"{path}: {named}" for path, chunk in prose() for named in undefined_names(path, chunk)}
    assert sorted(missing) == []


FLAG = re.compile(r"(?<![\w-])--[a-z][\w-]*[a-z0-9]")
#: A command line in prose: ``imagefolder-lmdb info --json`` (``--logger imagefolder-lmdb`` names the plugin).
COMMAND_LINE = re.compile(r"(?<![\w-])(?<!--logger )imagefolder-lmdb ([a-z-]+)([^\n`|;]*)")
#: A code span: ``x`` in a docstring, `x` in Markdown.
SPAN = re.compile(r"``([^`]+)``|`([^`\n]+)`")
#: Flags named alone that are other tools' (the tool), or named as flags that do not exist (why).
OTHERS = {
    "--array": "sbatch",
    "--comment": "sbatch",
    "--copies": "tests/cluster/measure_peak_rss.py's own, parsed by hand",
    "--dist": "pytest-xdist",
    "--durations": "pytest",
    "--endpoint-url": "the aws command",
    "--no-index": "pip",
    "--shm-size": "docker",
    "--rep": "an abbreviation of --report, which convert refuses",
    "--stats": "an option Snakemake 9 no longer has",
}


def flags_in(chunk: str) -> Iterator[tuple[str, str]]:
    """Each flag of ``chunk`` with the command it is given to: ``imagefolder-lmdb info``'s before a
    ``--``, else ``""`` (a code span that starts with it: ``--shards 8``)."""
    for command, rest in COMMAND_LINE.findall(chunk):
        for flag in FLAG.findall(rest.split(" -- ")[0]) if command in command_flags() else []:
            yield command, flag
    for double, single in SPAN.findall(chunk):
        if (double or single).startswith("--") and (flag := FLAG.match(double or single)):
            yield "", flag.group()


def unknown_flags(chunk: str) -> Iterator[str]:
    anyones = frozenset().union(*command_flags().values(), snakemake_flags(), code_flags(), OTHERS)
    for command, flag in flags_in(chunk):
        if command and flag not in command_flags()[command]:
            yield f"imagefolder-lmdb {command} {flag}"
        elif not command and flag not in anyones:
            yield flag


def test_every_flag_in_prose_is_an_option() -> None:
    missing = {f"{path}: {flag}" for path, chunk in prose() for flag in unknown_flags(chunk)}
    assert sorted(missing) == []


#: A dotted config key in a code span: `encode.short_side`, ``splits.<name>.layout``, `--set encode.quality=90`.
KEY = re.compile(rf"`{{1,2}}(?:--set )?((?:{'|'.join(top_keys())})(?:\.[\w*<>-]+)+)(?:[=:][^`]*)?`{{1,2}}")
#: A file's name is no key (`verify.py`, `config.yaml`).
FILE_NAME = re.compile(r"\.(?:py|smk|yaml|json|jsonl|md|txt|tsv|lmdb|png)$")
#: Keys misspelt on purpose: a did-you-mean's example (config/settings.py).
MISSPELT = {"encode.qualty"}


def unknown_keys(chunk: str) -> Iterator[str]:
    for key in KEY.findall(chunk):
        if not FILE_NAME.search(key) and key not in MISSPELT and not is_key(key.split(".")):
            yield key


def test_every_config_key_in_prose_is_a_key_of_the_schema() -> None:
    missing = {f"{path}: {key}" for path, chunk in prose() for key in unknown_keys(chunk)}
    assert sorted(missing) == []


def test_the_checks_find_a_name_of_each_kind_that_names_nothing() -> None:
    """Each check above, on prose that names a flag, a key and a module's name that do not exist (and
    on the same prose naming ones that do)."""
    wrong = (
        "``imagefolder-lmdb info --overwrite``, ``--shards-per-job 4``, ``encode.short_sides``, cli.py ``FLAG_NAMES``"
    )
    right = "``imagefolder-lmdb info --json``, ``--shards 4``, ``encode.short_side``, cli.py ``convert_parser``"
    where = Path("src/imagefolder_lmdb/config/flags.py")
    # the flag not written whole here: a string of the code that starts with one names an option
    assert list(unknown_flags(wrong)) == ["imagefolder-lmdb info --overwrite", f"--{'shards-per-job'}"]
    assert (list(unknown_keys(wrong)), list(undefined_names(where, wrong))) == (
        ["encode.short_sides"],
        ["cli.py FLAG_NAMES"],
    )
    assert [*unknown_flags(right), *unknown_keys(right), *undefined_names(where, right)] == []
