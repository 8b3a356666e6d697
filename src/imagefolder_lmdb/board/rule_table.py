"""The workflow's rules, one table: what the progress board, the end-of-run summary, the report's
benchmark table and the wheel read about each rule, in the order a split goes through them.

A rule is added here and in its own files (docs/architecture.md, "Adding a rule");
tests/unit/test_rule_table.py fails while the Snakefile's rules, their scripts, pyproject.toml's
force-include lines or docs/cluster.md's resources table disagree with it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WorkflowRule:
    """One rule of the workflow (``rules/<name>.smk``, running ``scripts/<name>.py``)."""

    name: str
    #: The progress board's word for a split at this rule.
    stage: str
    #: Its jobs' benchmark records count in the summary's job time and the report's table; not for
    #: report_split, which tabulates them.
    timed: bool = True
    #: One job per shard (its benchmark per shard), not one per split.
    per_shard: bool = False
    #: Whether its jobs run with ``merge: true`` (the one-file output), ``False`` (``merge: false``), or both (None).
    merging: bool | None = None

    def runs(self, merging: bool) -> bool:
        """Whether a run of ``merge: merging`` has jobs of this rule."""
        return self.merging is None or self.merging == merging

    @property
    def script(self) -> str:
        """Its script, relative to the workflow's folder (the wheel ships each: pyproject.toml)."""
        return f"scripts/{self.name}.py"


RULES = (
    WorkflowRule("extract", "reading the source"),
    WorkflowRule("count_check", "listing"),
    WorkflowRule("encode_shard", "encoding", per_shard=True),
    WorkflowRule("merge", "merging", merging=True),
    WorkflowRule("write_meta", "writing meta", merging=True),
    WorkflowRule("write_pointer", "writing the pointer", merging=False),
    WorkflowRule("verify", "verifying"),
    WorkflowRule("report_split", "reporting", timed=False),
)

#: The rules whose jobs' benchmark records are a split's job time.
TIMED_RULES = tuple(rule for rule in RULES if rule.timed)
