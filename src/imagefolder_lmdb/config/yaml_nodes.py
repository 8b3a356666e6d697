"""Keys given twice in a YAML config file. YAML loaders keep the last of two equal keys and drop the
first in silence (a split written twice loses its first block), so each config file Snakemake read
is read again here, as a tree of nodes that still holds every key and its line."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import yaml

from imagefolder_lmdb.config.problems import KeyPath, Problem, dotted

#: The merge key (``<<: *defaults``): its keys are meant to be overridden.
MERGE_TAG = "tag:yaml.org,2002:merge"


@dataclass(frozen=True)
class DuplicateKey:
    file: str
    path: KeyPath  # the key given twice, e.g. ("splits", "train")
    first_line: int
    second_line: int

    @property
    def problem(self) -> Problem:
        return Problem(
            f"config file {self.file}",
            f"key {dotted(self.path)} is given twice, at lines {self.first_line} and {self.second_line} "
            "(YAML keeps only the second, dropping the first in silence); remove or rename one",
        )


def duplicate_keys(path: str) -> list[DuplicateKey]:
    """Every key given twice in one mapping of the YAML (or JSON) file ``path``."""
    try:
        with open(path, encoding="utf-8-sig") as stream:
            root = yaml.compose(stream, Loader=yaml.SafeLoader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return []  # Snakemake read this file itself, or has said why it cannot
    return list(duplicates_under(root, (), path, set()))


def duplicates_under(node: yaml.Node | None, path: KeyPath, file: str, seen: set[int]) -> Iterator[DuplicateKey]:
    if node is None or id(node) in seen:  # an alias repeats a node already walked
        return
    seen.add(id(node))
    if isinstance(node, yaml.SequenceNode):
        for position, item in enumerate(node.value):
            yield from duplicates_under(item, (*path, str(position)), file, seen)
    if not isinstance(node, yaml.MappingNode):
        return
    lines: dict[str, int] = {}
    for key_node, value_node in node.value:
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == MERGE_TAG:
            continue
        line = key_node.start_mark.line + 1
        if key_node.value in lines:
            yield DuplicateKey(file, (*path, key_node.value), lines[key_node.value], line)
        lines.setdefault(key_node.value, line)
        yield from duplicates_under(value_node, (*path, key_node.value), file, seen)
