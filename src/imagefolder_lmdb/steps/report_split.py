"""Rule report_split: the per-split pieces of ``snakemake --report``: a class-count histogram and
every job's Snakemake benchmark record (time, peak memory, I/O) in one table."""

import csv
import json
import os
from functools import partial
from typing import Any, TextIO

from imagefolder_lmdb.board.rule_runner import run_rule
from imagefolder_lmdb.verify.class_histogram import (  # noqa: F401 - the rule's, and named here for the tests
    HEIGHT,
    LABEL_BAND,
    MARGIN,
    NAMED_BARS,
    WIDTH,
    class_histogram,
)
from imagefolder_lmdb.writing.atomic import atomic_file
from imagefolder_lmdb.writing.hold_points import hold_point


def benchmark_table(records: list[str], output: str, benchmarks: str) -> None:
    """One row per job: which job (its record's path under ``benchmarks``), then Snakemake's columns."""
    rows: list[dict[str, Any]] = []
    for path in sorted(records):
        job = os.path.relpath(path, benchmarks).removesuffix(".tsv")
        with open(path, newline="", encoding="utf-8") as stream:
            rows.extend({"job": job, **row} for row in csv.DictReader(stream, delimiter="\t"))
    fields = ["job"] + [f for f in (rows[0].keys() if rows else []) if f != "job"]
    with atomic_file(output, newline="", encoding="utf-8") as stream:
        writer = csv.DictWriter(stream, fieldnames=fields, delimiter="\t")
        writer.writeheader()
        writer.writerows(rows)


def main(smk: Any, stream: TextIO) -> None:
    with open(smk.input.verify, encoding="utf-8") as report:
        class_counts = json.load(report)["class_counts"]
    class_histogram(class_counts, smk.output.histogram, smk.wildcards.split)
    benchmark_table(list(smk.input.benchmarks), smk.output.benchmarks, smk.params.benchmarks)
    hold_point("reported")  # every output of the split in place


#: What the rule's script (scripts/report_split.py) calls with ``snakemake``: ``main`` with the rule's log set up.
run_in_rule = partial(run_rule, main)
