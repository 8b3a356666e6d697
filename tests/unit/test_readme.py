"""The README stays true: its config table matches the schema, and it holds the blocks marked
``<!-- runnable -->`` that tests/workflow/test_readme.py runs."""

from __future__ import annotations

import re

import yaml

from support import REPO
from support.readme import README, runnable_blocks


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


def test_there_are_runnable_blocks() -> None:
    kinds = [kind for kind, _ in runnable_blocks()]
    assert kinds.count("bash") >= 3 and "python" in kinds
