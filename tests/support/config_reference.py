"""docs/configuration.md's tables of keys, generated from config/schema.yaml, the one home of every
key, its default and its meaning. tests/unit/test_readme.py checks that the page holds exactly what
this makes; after a change to the schema, rewrite the tables from the checkout:

    .venv/bin/python -m tests.support.config_reference
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from . import REPO

SCHEMA = REPO / "config" / "schema.yaml"
PAGE = REPO / "docs" / "configuration.md"
COMMAND = "python -m tests.support.config_reference"
BEGIN = f"<!-- generated from config/schema.yaml by `{COMMAND}`: edit the schema, not these tables -->"
END = "<!-- end of the generated tables -->"
#: The groups of keys, in page order: (heading, dotted prefix, where their properties are).
GROUPS = (
    ("Top level", "", ("properties",)),
    ("`splits.<name>`: each split", "splits.<name>.", ("$defs", "split", "properties")),
    ("`encode`: how images are checked and stored", "encode.", ("properties", "encode", "properties")),
    ("`verify`: the check after conversion", "verify.", ("properties", "verify", "properties")),
)


@dataclass(frozen=True)
class Key:
    """One row of a table: the key's dotted name, what values it takes, its default, its meaning."""

    name: str
    values: str
    default: str
    meaning: str


def load_schema(path: Path = SCHEMA) -> dict[str, Any]:
    return yaml.safe_load(path.read_text())


def as_yaml(value: object) -> str:
    """A value as it is written in a config file: null, true, 16, auto."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def type_words(spec: dict[str, Any]) -> str:
    """What values a key takes, in words: its enum, or its types with their bounds."""
    if "enum" in spec:
        return " \\| ".join(f"`{as_yaml(choice)}`" for choice in spec["enum"])
    if "oneOf" in spec:
        return " or ".join(type_words(option) for option in spec["oneOf"])
    types = spec.get("type", [])
    words = [type_word(name, spec) for name in ([types] if isinstance(types, str) else types)]
    return " or ".join(words)


def type_word(name: str, spec: dict[str, Any]) -> str:
    if name == "array":
        return f"list of {type_word(spec.get('items', {}).get('type', 'string'), {})}s"
    if name == "integer" and "minimum" in spec:
        upper = f" to {spec['maximum']:,}" if "maximum" in spec else ""
        return f"integer {'≥ ' if not upper else ''}{spec['minimum']}{upper}"
    return {"null": "`null`", "boolean": "`true` \\| `false`"}.get(name, name)


def meaning(spec: dict[str, Any]) -> str:
    """The schema's description of a key on one line, ready for a table cell."""
    return re.sub(r"\s+", " ", spec.get("description", "")).strip().replace("|", "\\|")


def keys(schema: dict[str, Any]) -> dict[str, list[Key]]:
    """The keys of each group, in schema order (``splits`` itself is the group of its own keys)."""
    groups: dict[str, list[Key]] = {}
    for heading, prefix, where in GROUPS:
        properties = schema
        for step in where:
            properties = properties[step]
        groups[heading] = [
            key(prefix + name, spec)
            for name, spec in properties.items()
            if spec.get("type") != "object" and name != "splits"
        ]
    return groups


def key(name: str, spec: dict[str, Any]) -> Key:
    """The row of one key; a key without a default (a split's ``source``) must be given."""
    default = f"`{as_yaml(spec['default'])}`" if "default" in spec else "—"
    return Key(name, type_words(spec), default, meaning(spec))


def tables(schema: dict[str, Any]) -> str:
    """The generated part of the page: a heading and a table per group."""
    parts = [BEGIN]
    for heading, rows in keys(schema).items():
        parts += [f"\n### {heading}\n", "| key | values | default | meaning |", "| --- | --- | --- | --- |"]
        parts += [f"| `{key.name}` | {key.values} | {key.default} | {key.meaning} |" for key in rows]
    parts.append(f"\n{END}")
    return "\n".join(parts)


def render(page: str, schema: dict[str, Any]) -> str:
    """``page`` with the text between its markers replaced by the tables of ``schema``."""
    before, rest = page.split(BEGIN, 1)
    _, after = rest.split(END, 1)
    return before + tables(schema) + after


def main() -> int:
    PAGE.write_text(render(PAGE.read_text(), load_schema()))
    print(f"wrote the tables of {PAGE.relative_to(REPO)} from {SCHEMA.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
