"""Rule data_file (``merge: false``, rules/data_file.smk): one shard's data file of the split, a complete
split file of its own (docs/FORMAT.md, "A split of revisions (version 5)").

With ``merge: false`` the shard's encode job already wrote every image it stored into its part, in its
order, numbered from 0 around its skipped images (steps/encode_shard.py, ``every_record``): each image
read from the source once, and no job copies a record. This job adds the shard's meta (write_meta's
builder over the shard's rows of the manifest) and record locations to a hard link of the part, under a
temporary name renamed when complete (write_meta's ``place_with_meta``). Every shard's job runs on its
own as its shard finishes; write_pointer, the one step after them, reads only their meta.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import Any, TextIO

from imagefolder_lmdb.board.rule_runner import run_rule
from imagefolder_lmdb.config.step_settings import WriteMetaSettings
from imagefolder_lmdb.reader import Meta, record_key
from imagefolder_lmdb.steps.merge import MergeError
from imagefolder_lmdb.steps.write_meta import build_meta, place_with_meta, recorded_made_from
from imagefolder_lmdb.work.files import ShardReport, read_counts, read_manifest_header, read_shard_report
from imagefolder_lmdb.writing.lmdb_open import open_lmdb_readonly

log = logging.getLogger("imagefolder_lmdb.data_file")


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


def check_part_holds_every_record(part: str, report: ShardReport, report_path: str) -> None:
    """The part holds records 0..n-1, n the images its report lists as stored (merge: false: encode_shard
    wrote them all); keys past them are the meta of an earlier attempt killed after writing it (the data
    file is a hard link of the part), which ``place_with_meta`` finds the same."""
    stored = len(report.index)
    env = open_lmdb_readonly(part)
    try:
        with env.begin() as txn:
            whole = (stored == 0 or txn.get(record_key(stored - 1)) is not None) and txn.get(record_key(stored)) is None
    finally:
        env.close()
    if not whole:
        raise MergeError(
            f"{part} does not hold the {stored} records {report_path} lists as stored; delete the report and "
            "run the same command again to encode that shard anew"
        )


def data_file(
    part: str,
    report_path: str,
    manifest: str,
    counts_path: str,
    output: str,
    settings: WriteMetaSettings,
    made_from: dict[str, Any] | None = None,
) -> Meta:
    """Shard ``part``/``report_path``'s data file at ``output``: records, meta, locations; complete or absent."""
    refuse_targets_a_pointer_cannot_hold(manifest)
    report = read_shard_report(report_path)
    check_report_covers_shard(report, report_path)
    check_part_holds_every_record(part, report, report_path)
    meta = build_meta(manifest, read_counts(counts_path), [report], settings, made_from, (report.start, report.stop))
    place_with_meta(part, output, meta, shard=report.shard)  # a hard link of the part, the meta added
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
    )


#: What the rule's script (scripts/data_file.py) calls with ``snakemake``: ``main`` with the rule's log set up.
run_in_rule = partial(run_rule, main)
