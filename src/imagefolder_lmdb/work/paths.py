"""Where every file of a run lies: the one definition of the results and work folder layout.

The rules (rules/*.smk) take their inputs and outputs from here as Snakemake patterns (the default
arguments ``{split}`` and ``{shard}`` are Snakemake wildcards); the end-of-run summary and the
clean-up after a run fill in real split names. Change a path here and every user of it follows.

    {results}/{split}.lmdb, .verify.json, .contact.png, .classes.png, .benchmarks.tsv
    {work}/{split}/made_from.json      what the split is made from (run/made_from.py): written before any job
    {work}/{split}/source/             what extract made readable (source.json, members.jsonl, tree/)
    {work}/{split}/manifest.jsonl      count_check: every image in ImageFolder order
    {work}/{split}/counts.json         count_check: the counts report
    {work}/{split}/shards/{shard}.json count_check: what decides each shard's part (work/shard_stamps.py)
    {work}/{split}/parts/{shard}.lmdb  encode_shard: the re-encoded images (temporary unless keep_parts)
    {work}/{split}/parts/{shard}.json  encode_shard: the shard report
    {work}/{split}/merged.lmdb         merge: every record, no meta yet (temporary)
    {work}/{split}/files/{shard}.lmdb  encode_shard (merge: false): one shard's data file (temporary)
    {work}/logs/{rule}/{split}[/{shard}].log, {work}/benchmarks/{rule}/{split}[/{shard}].tsv
"""

from __future__ import annotations

from dataclasses import dataclass

# Defined beside the shard stamps that name their files by it (work/files.py); the rules import it here.
from imagefolder_lmdb.work.files import shard_name as shard_name

SPLIT = "{split}"
SHARD = "{shard}"


@dataclass(frozen=True)
class RunPaths:
    """The file layout of one config's run (its ``results`` and ``work`` keys)."""

    results: str
    work: str

    # -- results/: what the user gets --------------------------------------------------------------

    def dataset(self, split: str = SPLIT) -> str:
        return f"{self.results}/{split}.lmdb"

    def verify_report(self, split: str = SPLIT) -> str:
        return f"{self.results}/{split}.verify.json"

    def contact_sheet(self, split: str = SPLIT) -> str:
        return f"{self.results}/{split}.contact.png"

    def class_histogram(self, split: str = SPLIT) -> str:
        return f"{self.results}/{split}.classes.png"

    def benchmark_table(self, split: str = SPLIT) -> str:
        return f"{self.results}/{split}.benchmarks.tsv"

    def result_files(self, split: str = SPLIT) -> str:
        """A glob of every file results/ holds for the split (temporaries of killed jobs too)."""
        return f"{self.results}/{split}.*"

    def final_outputs(self, split: str = SPLIT) -> list[str]:
        """Everything rule ``all`` asks for, per split."""
        return [
            self.dataset(split),
            self.verify_report(split),
            self.contact_sheet(split),
            self.class_histogram(split),
            self.benchmark_table(split),
        ]

    # -- work/: what the rules pass to each other ---------------------------------------------------

    def split_work(self, split: str = SPLIT) -> str:
        return f"{self.work}/{split}"

    def source(self, split: str = SPLIT) -> str:
        return f"{self.work}/{split}/source"

    def manifest(self, split: str = SPLIT) -> str:
        return f"{self.work}/{split}/manifest.jsonl"

    def made_from(self, split: str = SPLIT) -> str:
        return f"{self.work}/{split}/made_from.json"

    def counts(self, split: str = SPLIT) -> str:
        return f"{self.work}/{split}/counts.json"

    def shard_stamps(self, split: str = SPLIT) -> str:
        return f"{self.work}/{split}/shards"

    def shard_stamp(self, split: str = SPLIT, shard: str = SHARD) -> str:
        return f"{self.shard_stamps(split)}/{shard}.json"

    def part(self, split: str = SPLIT, shard: str = SHARD) -> str:
        return f"{self.work}/{split}/parts/{shard}.lmdb"

    def part_report(self, split: str = SPLIT, shard: str = SHARD) -> str:
        return f"{self.work}/{split}/parts/{shard}.json"

    def merged(self, split: str = SPLIT) -> str:
        return f"{self.work}/{split}/merged.lmdb"

    def data_file(self, split: str = SPLIT, shard: str = SHARD) -> str:
        """merge: false: one shard's data file, which write_pointer links into the split's data folder."""
        return f"{self.work}/{split}/files/{shard}.lmdb"

    # -- logs and Snakemake's benchmark records, per job --------------------------------------------

    def benchmarks(self) -> str:
        """The folder of every job's benchmark record."""
        return f"{self.work}/benchmarks"

    def log(self, rule: str, split: str = SPLIT, shard: str | None = None) -> str:
        return f"{self.work}/logs/{rule}/{split}" + (f"/{shard}" if shard else "") + ".log"

    def benchmark(self, rule: str, split: str = SPLIT, shard: str | None = None) -> str:
        return f"{self.benchmarks()}/{rule}/{split}" + (f"/{shard}" if shard else "") + ".tsv"
