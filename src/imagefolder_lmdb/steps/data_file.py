"""A shard's data file of the split (``merge: false``), finished by the encode job that wrote its records
(steps/encode_shard.py): a complete split file of its own (docs/FORMAT.md, "A split of revisions
(version 5)").

With ``merge: false`` the encode job writes every image it stores into its part, in its order, numbered
from 0 around its skipped images (``every_record``): each image read from the source once, and no job
copies a record. Then, in the same process (a job per shard of its own cost a process start and
Snakemake's scheduling, and nothing else: BENCHMARKS.md §20), this module adds the shard's meta (write_meta's
builder over the shard's rows of the manifest) and record locations to a hard link of the part, under a
temporary name renamed when complete (write_meta's ``place_with_meta``), and checks the file as
``imagefolder-lmdb verify FILE`` does by default: so the split's verify job opens no data file of revision 1
(verify/revisions.py). write_pointer, the one step after the encode jobs, reads only their meta.
"""

from __future__ import annotations

import logging
from typing import Any

from imagefolder_lmdb.config.step_settings import WriteMetaSettings
from imagefolder_lmdb.reader import Meta
from imagefolder_lmdb.reader.handles import close_all_envs
from imagefolder_lmdb.steps.merge import MergeError
from imagefolder_lmdb.steps.write_meta import build_meta, place_with_meta
from imagefolder_lmdb.work.files import ShardReport, read_counts, read_manifest_header
from imagefolder_lmdb.writing.atomic import remove_path

log = logging.getLogger("imagefolder_lmdb.data_file")

#: The records of a split its encode jobs decode and check together, each job its share of them in its own
#: file: ``imagefolder-lmdb verify``'s default sample, seeded as it is, as the one-file split's verify job
#: checks it (verify.sample and verify.all are the split's verify job's: a change of them must not encode
#: every shard again). Each file's pages, meta and record locations are checked whole all the same.
CHECKED_RECORDS = 64
#: The fewest records of one data file decoded and checked, however many shards share the sample.
CHECKED_PER_FILE_AT_LEAST = 8
CHECK_SEED = 0


def checked_records(shards: int) -> int:
    """The records each of ``shards`` data files decodes and checks: its share of CHECKED_RECORDS."""
    return max(CHECKED_PER_FILE_AT_LEAST, -(-CHECKED_RECORDS // max(1, shards)))


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


def check_data_file(path: str, shards: int = 1) -> None:
    """``path``, one of ``shards`` data files of a split, checked as ``imagefolder-lmdb verify`` checks a file
    (its pages, its meta against its records, the record locations, a sample read back and decoded: its share
    of the split's, ``checked_records``); a file that fails is removed, the error naming its problems."""
    from imagefolder_lmdb.verify.checks import verify_file  # Pillow and the checks: only where a file is made

    try:
        report = verify_file(path, checked_records(shards), False, CHECK_SEED)[0]
    finally:
        close_all_envs()  # the file is linked into the split next, by another process
    if not report["ok"]:
        remove_path(path)
        raise MergeError(
            f"{path}: the data file just written does not read back as written: "
            + "; ".join(report["problems"])
            + ". Check the disk it lies on, then run the same command again"
        )


def finish_data_file(
    part: str,
    report: ShardReport,
    report_path: str,
    manifest: str,
    counts_path: str,
    output: str,
    settings: WriteMetaSettings,
    made_from: dict[str, Any] | None = None,
) -> Meta:
    """Shard ``report``'s data file at ``output`` from its ``part`` (every record, just written by this
    process): records, meta, locations, checked; complete or absent."""
    check_report_covers_shard(report, report_path)
    meta = build_meta(manifest, read_counts(counts_path), [report], settings, made_from, (report.start, report.stop))
    place_with_meta(part, output, meta, shard=report.shard)  # a hard link of the part, the meta added
    check_data_file(output, report.shards)
    log.info("shard %d: data file of %d records at %s, checked", report.shard, meta.length, output)
    return meta
