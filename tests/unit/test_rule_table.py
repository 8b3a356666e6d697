"""One table of rules (board/rule_table.py): the Snakefile's rules, their scripts, the wheel's copies of
the scripts and docs/cluster.md's resources table agree with it, so a rule added in one place and
not the others fails here rather than leaving the summary or the report silently short."""

from __future__ import annotations

import re
import tomllib

from imagefolder_lmdb.board.progress import STAGES
from imagefolder_lmdb.board.rule_table import RULES
from support import REPO
from support.readme import section

#: The workflow's own rule, in the Snakefile: no stage, no script.
TARGET_RULE = "all"


def rule_files() -> dict[str, str]:
    """Every rule and checkpoint of rules/*.smk, by name: the text of its file."""
    found = {}
    for path in sorted((REPO / "rules").glob("*.smk")):
        text = path.read_text(encoding="utf-8")
        for name in re.findall(r"^(?:rule|checkpoint) (\w+):", text, re.M):
            found[name] = text
    return found


def test_every_rule_of_the_workflow_is_in_the_table_and_the_reverse() -> None:
    defined = set(rule_files())
    snakefile = (REPO / "Snakefile").read_text(encoding="utf-8")
    assert re.findall(r"^rule (\w+):", snakefile, re.M) == [TARGET_RULE], "rules live in rules/, not the Snakefile"
    assert defined == {rule.name for rule in RULES}, "add the rule to board/rule_table.py's RULES (or remove it there)"
    included = re.findall(r'^include: "rules/(\w+)\.smk"', snakefile, re.M)
    assert [name for name in included if name in defined] == [rule.name for rule in RULES], "the table's order"


def test_each_rule_runs_its_script_and_keeps_its_benchmark() -> None:
    files = rule_files()
    for rule in RULES:
        text = files[rule.name]
        assert f'"../{rule.script}"' in text and (REPO / rule.script).is_file(), rule.name
        benchmark = re.search(rf'PATHS\.benchmark\("{rule.name}"(, shard=SHARD)?\)', text)
        assert (benchmark is not None) == rule.timed, f"{rule.name}: a benchmark: record iff timed"
        assert benchmark is None or (benchmark.group(1) is not None) == rule.per_shard, rule.name


def test_the_wheel_ships_every_rule_script() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    shipped = pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    scripts = {source for source in shipped if source.startswith("scripts/")}
    assert scripts == {rule.script for rule in RULES}, "pyproject.toml's force-include: one line per rule script"
    assert all(shipped[rule.script] == f"imagefolder_lmdb/workflow/{rule.script}" for rule in RULES)


def test_the_cluster_page_lists_every_rule() -> None:
    table = section((REPO / "docs" / "cluster.md").read_text(encoding="utf-8"), "## Resources")
    assert re.findall(r"^\| (\w+) \| \d+ \| \d+ \|", table, re.M) == [rule.name for rule in RULES]


def test_the_board_names_every_rule() -> None:
    assert list(STAGES) == [rule.name for rule in RULES]
