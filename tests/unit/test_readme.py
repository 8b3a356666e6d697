"""The documentation stays true: README.md and docs/*.md. Their config reference is the schema's,
every link resolves, every config they show is valid, the README is short and opens with the two
commands, and they hold the blocks marked ``<!-- runnable -->`` that tests/workflow/test_readme.py
runs."""

from __future__ import annotations

import re
from pathlib import Path

import jsonschema
import pytest
import yaml
from packaging.requirements import Requirement

from support import REPO
from support.config_reference import BEGIN, COMMAND, END, PAGE, load_schema, render
from support.package import project_requirements
from support.readme import (
    PAGES,
    README,
    anchors,
    fenced_blocks,
    install_lines,
    links,
    page_name,
    parsed_install,
    runnable,
)


def schema_defaults() -> dict[str, object]:
    """Every config key the schema knows (``splits.<name>.*`` for split keys) and its default."""
    schema = load_schema()
    keys: dict[str, object] = {}
    for name, spec in schema["properties"].items():
        if name == "splits":
            continue
        if spec.get("type") == "object":
            keys.update({f"{name}.{k}": v.get("default", "—") for k, v in spec["properties"].items()})
        else:
            keys[name] = spec.get("default")
    for name, spec in schema["$defs"]["split"]["properties"].items():
        keys[f"splits.<name>.{name}"] = spec.get("default", "—")
    return keys


def documented_defaults() -> dict[str, str]:
    """The key and default of every row of docs/configuration.md's tables."""
    tables = PAGE.read_text().split(BEGIN, 1)[1].split(END, 1)[0]
    rows = re.findall(r"^\| `([^`]+)` \| .+? \| (`[^`]*`|—) \|", tables, re.M)
    return dict(rows)


def as_documented(value: object) -> str:
    if value == "—":
        return "—"
    return f"`{'null' if value is None else str(value).lower() if isinstance(value, bool) else value}`"


def test_config_reference_matches_the_schema() -> None:
    documented = documented_defaults()
    assert set(documented) == set(schema_defaults())
    for key, default in schema_defaults().items():
        assert documented[key] == as_documented(default), key


def test_configuration_page_is_generated_from_the_schema() -> None:
    page = PAGE.read_text()
    assert page == render(page, load_schema()), f"config/schema.yaml changed: run `.venv/bin/{COMMAND}`"


def test_there_are_runnable_blocks() -> None:
    blocks = runnable()
    kinds = [block.kind for block in blocks]
    assert kinds.count("bash") >= 3 and "python" in kinds
    assert blocks[0].page == "README.md" and blocks[0].code.startswith("make demo"), "the demo makes their data"
    assert {block.page for block in blocks} >= {"README.md", "docs/training.md"}


def test_readme_is_short_and_opens_with_the_two_commands() -> None:
    """The two commands that work on a fresh machine first (make demo, make test), then a user's two
    (install, convert a folder of splits)."""
    lines = README.splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines"
    first, second, user = fenced_blocks(README, "bash")[:3]
    install, convert = (line.split("#")[0].strip() for line in user.strip().splitlines())
    assert (
        install.startswith("pip install") and "[convert]" in install and convert == "imagefolder-lmdb convert data out"
    )
    assert first.split("#")[0].strip() == "make demo" and second.split("#")[0].strip() == "make test"
    assert README.index(first) < README.index(second) < README.index(user) < README.index("\n## "), "in this order"


#: What a training line brings: LMDBDataset and the transforms the README's training code imports.
TORCH = {"torch", "torchvision"}
#: The extras that bring torch (pyproject.toml): a line with one of them is a training machine's.
TRAINING_EXTRAS = {"torch", "tensor", "all"}
#: PyTorch's own index of CPU-only wheels (no CUDA libraries).
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def names(requirements: list[str] | tuple[str, ...]) -> set[str]:
    return {Requirement(line).name for line in requirements}


def test_each_install_line_brings_torch_where_it_trains_and_nowhere_else() -> None:
    """Issue 59: a converter's line (the quick start's among them) installs no torch; a training
    line brings torch and torchvision, from pyproject.toml's extras. tests/workflow/test_installs.py
    runs each line without torch; the training lines are checked here, and resolved by one network test."""
    lines = [line for line in install_lines() if line.project is not None]
    assert len(lines) >= 8
    for line in lines:
        brought = names(project_requirements(line.project)) | names(line.packages)
        if line.project & TRAINING_EXTRAS:
            assert brought >= TORCH, f"{line.text}: brings {sorted(brought & TORCH)} of torch, torchvision"
        else:
            assert not brought & TORCH, f"{line.text}: a line without a training extra brings {brought & TORCH}"
    quick_start = parsed_install(fenced_blocks(README, "bash")[2].splitlines()[0].split("#")[0])
    assert quick_start.project == {"convert"} and not quick_start.packages, "the quick start converts: no torch"


def test_the_cpu_lines_install_pytorchs_cpu_wheels_of_the_releases_the_project_pins() -> None:
    other = [line for line in install_lines() if line.project is None]
    cpu = [line for line in other if "--index-url" in line.options]
    assert [line.options["--index-url"] for line in cpu] == [CPU_INDEX, CPU_INDEX], "make's line and pip's"
    assert all(names(line.packages) == TORCH for line in cpu), [line.text for line in cpu]
    pins = {Requirement(line).name: line for line in (REPO / "requirements.txt").read_text().split() if "==" in line}
    pinned = [line for line in cpu if any("==" in package for package in line.packages)]
    assert len(pinned) == 1 and set(pinned[0].packages) == {pins[name] for name in TORCH}, "requirements.txt's pins"
    assert pinned[0].text.startswith(".venv/bin/pip"), "make's venv, before its first run"
    files = [line.options["-r"] for line in other if "-r" in line.options]
    assert len(other) == len(cpu) + len(files) and all((REPO / name).is_file() for name in files)


def test_ci_runs_the_readme_test_command() -> None:
    command = fenced_blocks(README, "bash")[1].split("#")[0].strip()
    script = (REPO / ".ci" / "run").read_text()
    assert command in [line.strip() for line in script.splitlines()], ".ci/run runs what README says runs the tests"


def relative_links(path: Path) -> list[str]:
    return [target for target in links(path.read_text()) if not re.match(r"[a-z]+:", target)]


def broken_links(path: Path, root: Path = REPO) -> list[str]:
    """Relative links of a page that name no file, or an anchor no heading of the page it points to has."""
    broken = []
    for target in relative_links(path):
        file, _, anchor = target.partition("#")
        linked = (path.parent / file).resolve() if file else path
        if not linked.exists() or not linked.is_relative_to(root):
            broken.append(f"{target}: no such file in the repository")
        elif anchor and (linked.suffix != ".md" or anchor not in anchors(linked.read_text())):
            broken.append(f"{target}: no such heading")
    return broken


@pytest.mark.parametrize("path", PAGES, ids=page_name)
def test_links_resolve(path: Path) -> None:
    """Relative links name files that exist; an anchor names a heading of the page it points to."""
    assert broken_links(path) == []


def test_the_link_checker_finds_broken_links(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other page\n")
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n## A `code` heading\n\n[ok](#a-code-heading) [bad](#nowhere) `[not a link](x.md)`\n"
        "[ok](other.md#other-page) [bad](other.md#title) [bad](missing.md) ![ok](other.md)\n"
    )
    assert broken_links(page, root=tmp_path) == [
        "#nowhere: no such heading",
        "other.md#title: no such heading",
        "missing.md: no such file in the repository",
    ]


def test_every_docs_page_is_linked_from_the_readme() -> None:
    linked = {(REPO / target.partition("#")[0]).resolve() for target in relative_links(REPO / "README.md")}
    assert {path for path in PAGES if path.parent == REPO / "docs"} <= linked


def configs_shown() -> list[tuple[str, str]]:
    """Every whole config the pages show: a YAML block that holds ``splits``."""
    return [
        (page_name(path), block)
        for path in PAGES
        for block in fenced_blocks(path.read_text(), "yaml")
        if re.search(r"^splits:", block, re.M)
    ]


def test_every_config_shown_is_valid() -> None:
    shown = configs_shown()
    assert len(shown) >= 6, "a copyable config for every source form"
    validator = jsonschema.Draft202012Validator(load_schema())
    for page, block in shown:
        problems = [error.message for error in validator.iter_errors(yaml.safe_load(block))]
        assert not problems, f"{page}:\n{block}\n{problems}"


def architecture_rows() -> list[set[str]]:
    """The package's parts as docs/architecture.md's table lists them, top to bottom: the module or
    subpackage names in backticks of each row's first cell (``__init__`` aside: it is no layer)."""
    page = (REPO / "docs" / "architecture.md").read_text()
    table = page.split("| subpackage or module | what it holds |", 1)[1].split("\n\n", 1)[0]
    rows = []
    for line in table.splitlines()[2:]:
        names = {re.sub(r"(\.py|/)$", "", name) for name in re.findall(r"`([^`]+)`", line.split(" | ", 1)[0])}
        if names - {"__init__"}:
            rows.append(names - {"__init__"})
    return rows


def contract_layers() -> list[set[str]]:
    """The layers contract of pyproject.toml, top to bottom; ``a | b`` is one layer of two parts."""
    import tomllib

    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layers = next(contract for contract in contracts if contract["id"] == "layers")["layers"]
    return [{part.strip() for part in layer.split("|")} for layer in layers]


def test_the_architecture_page_lists_the_layers_in_the_contracts_order() -> None:
    # the page's picture of the layering is the one lint-imports checks, row for row
    assert architecture_rows() == contract_layers()
