"""The README stays true: its config table matches the schema, and every block marked
``<!-- runnable -->`` runs, in a copy of the repository, as a new user would type it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import BIN, REPO

README = (REPO / "README.md").read_text()
RUNNABLE = re.compile(r"<!-- runnable -->\n```(bash|python)\n(.*?)```", re.S)


def schema_defaults() -> dict[str, object]:
    """Every config key the schema knows (``splits.<name>.*`` for split keys) and its default."""
    schema = yaml.safe_load((REPO / "config" / "schema.yaml").read_text())
    keys: dict[str, object] = {}
    for name, spec in schema["properties"].items():
        if name == "splits":
            continue
        if spec.get("type") == "object":
            keys.update({f"{name}.{k}": v.get("default") for k, v in spec["properties"].items()})
        else:
            keys[name] = spec.get("default")
    for name, spec in schema["$defs"]["split"]["properties"].items():
        keys[f"splits.<name>.{name}"] = spec.get("default", "—")
    return keys


def readme_config_table() -> dict[str, str]:
    section = README.split("### Config reference", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([^`]+)` \| (.+?) \|", section, re.M)
    return {key: default.strip() for key, default in rows}


def as_readme(value: object) -> str:
    if value == "—":
        return "—"
    return f"`{'null' if value is None else str(value).lower() if isinstance(value, bool) else value}`"


def test_config_reference_matches_the_schema() -> None:
    documented = readme_config_table()
    assert set(documented) == set(schema_defaults())
    for key, default in schema_defaults().items():
        assert documented[key] == as_readme(default), key


def runnable_blocks() -> list[tuple[str, str]]:
    return RUNNABLE.findall(README)


def test_there_are_runnable_blocks() -> None:
    kinds = [kind for kind, _ in runnable_blocks()]
    assert kinds.count("bash") >= 3 and "python" in kinds


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository's tracked files (mtimes kept, so make sees .venv as up to date) and .venv."""
    copy = tmp_path_factory.mktemp("checkout") / "repo"
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    for name in filter(None, files.decode().split("\0")):
        target = copy / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, target)
    os.symlink(BIN.parent, copy / ".venv")
    return copy


def run_block(kind: str, code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = ["bash", "-euo", "pipefail", "-c", code] if kind == "bash" else [sys.executable, "-c", code]
    environment = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=900, env=environment, check=False)


def test_runnable_blocks_run_in_order(checkout: Path) -> None:
    for number, (kind, code) in enumerate(runnable_blocks()):
        result = run_block(kind, code, checkout)
        assert result.returncode == 0, (
            f"README block {number} ({kind}) failed:\n{code}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
        )
