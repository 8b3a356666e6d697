"""Rule data_file (``merge: false``, rules/data_file.smk): one shard's data file of the split, a complete
split file of its own (docs/FORMAT.md, "A split of revisions (version 5)").

The shard's records in its order, renumbered from 0 around its skipped images: the re-encoded ones
from its part, the passed-through ones from the source, each checked against the CRC-32 its encode
job recorded (merge.py's ``append_shard``, for one shard); then its meta (write_meta's builder over the
shard's rows of the manifest) and record locations, under a temporary name renamed when complete
(write_meta's ``place_with_meta``). Every shard's job runs at once: no step copies the whole split, and
write_pointer, the one step after them, reads only their meta.
"""

from __future__ import annotations

import contextlib
import logging
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, TextIO

from imagefolder_lmdb.config.step_settings import WriteMetaSettings
from imagefolder_lmdb.reader import Meta
from imagefolder_lmdb.run.rule_runner import run_rule
from imagefolder_lmdb.sources import open_sample_reader
from imagefolder_lmdb.steps.merge import MergeError, ShardInput, append_shard, cyclic_gc_paused
from imagefolder_lmdb.steps.write_meta import build_meta, place_with_meta, recorded_made_from
from imagefolder_lmdb.work.files import ShardReport, read_counts, read_manifest, read_manifest_header, read_shard_report
from imagefolder_lmdb.writing.atomic import TMP_SUFFIX, remove_path
from imagefolder_lmdb.writing.lmdb_writer import atomic_lmdb

log = logging.getLogger("imagefolder_lmdb.data_file")

#: The records file a data file is made from, beside it in the work folder (removed once placed): a
#: temporary's name, so a leftover of a killed job goes with the others (rules/resume.smk).
RECORDS_SUFFIX = ".records" + TMP_SUFFIX


def check_report_covers_shard(report: ShardReport, report_path: str) -> None:
    """The shard report accounts for each image of its slice once, stored or skipped."""
    accounted = len(report.index) + len(report.skipped)
    if accounted != report.stop - report.start:
        raise MergeError(
            f"{report_path} covers {accounted} images of a shard of {report.stop - report.start}; delete it "
            "and run the same command again to encode that shard anew"
        )


def refuse_targets_a_pointer_cannot_hold(manifest: str) -> None:
    """A split of revisions holds one label per image and no fields yet (docs/FORMAT.md, version 5)."""
    header = read_manifest_header(manifest)
    if header.label_kind == "multi" or header.field_types:
        raise MergeError(
            f"{manifest}: this split has several labels per image or fields, which a split of data files "
            "(merge: false, --no-merge) cannot hold yet; convert it without --no-merge (set merge: true)"
        )


def write_records(part: str, report_path: str, report: ShardReport, manifest: str, output: str, threads: int) -> int:
    """The shard's records, renumbered from 0, in a records file at ``output``; returns their count."""
    header = read_manifest_header(manifest)
    rows = {sample.index: sample for sample in read_manifest(manifest, report.start, report.stop)}
    stored_bytes = sum(report.stored_bytes)
    with (
        contextlib.closing(open_sample_reader(header)) as reader,
        atomic_lmdb(output, expected_bytes=stored_bytes + 2048 * len(report.index)) as writer,
        ThreadPoolExecutor(max(1, threads - 1), thread_name_prefix="data-file-read") as readers,
        cyclic_gc_paused(),
    ):
        written = append_shard(writer, ShardInput(part, report_path, report, rows), reader, readers, 0)
        writer.flush()
        if writer.records != len(report.index):
            raise MergeError(f"{output}: {writer.records} records written, {report_path} lists {len(report.index)}")
    return written


def data_file(
    part: str,
    report_path: str,
    manifest: str,
    counts_path: str,
    output: str,
    settings: WriteMetaSettings,
    made_from: dict[str, Any] | None = None,
    threads: int = 2,
) -> Meta:
    """Shard ``part``/``report_path``'s data file at ``output``: records, meta, locations; complete or absent."""
    refuse_targets_a_pointer_cannot_hold(manifest)
    report = read_shard_report(report_path)
    check_report_covers_shard(report, report_path)
    records = output + RECORDS_SUFFIX
    write_records(part, report_path, report, manifest, records, threads)
    meta = build_meta(manifest, read_counts(counts_path), [report], settings, made_from, (report.start, report.stop))
    try:
        place_with_meta(records, output, meta, shard=report.shard)
    finally:
        remove_path(records)  # a hard link (or copy) of it is the data file now
    log.info("shard %d: data file of %d records at %s", report.shard, meta.length, output)
    return meta


def main(smk: Any, stream: TextIO) -> None:
    data_file(
        smk.input.part,
        smk.input.report,
        smk.input.manifest,
        smk.input.counts,
        smk.output[0],
        WriteMetaSettings.from_params(smk.params),
        recorded_made_from(smk.input.made_from[0]),
        threads=smk.threads,
    )


#: What the rule's script (scripts/data_file.py) calls with ``snakemake``: ``main`` with the rule's log set up.
run_in_rule = partial(run_rule, main)
