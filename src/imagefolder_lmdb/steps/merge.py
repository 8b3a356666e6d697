"""Rule merge: assemble every shard's records, in order, into one LMDB.

A shard's part holds only the images it re-encoded; the images stored as they are (passed
through) are copied here straight from the source, each checked against the CRC-32 recorded when
its shard checked it. The bulk of the data is thus written once, and the work folder never holds a
second copy of it. Records are renumbered 0..n-1 around skipped images, so the final indices are
ImageFolder's minus the skipped ones; a split whose skipped images leave it empty, or below
expected_images minus allow_skipped, stops here before anything is written. They go in with
sequential appends (no B-tree searches), every append is checked, and the final count is compared
with the shard reports.

The merge is the one serial step of a conversion, so it splits its work: threads read the
passed-through images ahead and check their CRC-32 (``os.pread``, file reads, zip inflating and
the CRC-32 (``dataset.checksum``) release the GIL), while the main thread only appends to the LMDB. Reads run at
most ``READ_AHEAD_BYTES`` ahead, so memory stays bounded whatever the image sizes.
"""

import collections
import contextlib
import gc
import itertools
import logging
import os
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Any, TextIO

from imagefolder_lmdb.board.rule_runner import progress_kwargs, run_rule
from imagefolder_lmdb.config.step_settings import MergeSettings
from imagefolder_lmdb.reader import checksum, record_key
from imagefolder_lmdb.sources import open_sample_reader
from imagefolder_lmdb.sources.base import SampleReader
from imagefolder_lmdb.work.files import (
    Sample,
    ShardReport,
    kept_indices,
    read_manifest,
    read_manifest_header,
    read_shard_report,
)
from imagefolder_lmdb.writing.hold_points import hold_point
from imagefolder_lmdb.writing.lmdb_open import count_records, open_lmdb_readonly
from imagefolder_lmdb.writing.lmdb_writer import atomic_lmdb
from imagefolder_lmdb.writing.reencode import kept_in_part

log = logging.getLogger("imagefolder_lmdb.merge")

WORK_HINT = "the split's folder under `work`"

#: How far the reading threads may run ahead of the writer: enough to cover an LMDB commit.
READ_AHEAD_BYTES = 64 << 20
READ_AHEAD_IMAGES = 1024


class MergeError(RuntimeError):
    """A part or a source does not hold what the shard report says."""


def check_reports_cover(reports: list[ShardReport], count: int) -> None:
    """The shard reports must account for every manifest image exactly once, stored or skipped."""
    position = 0
    for report in reports:
        accounted = len(report.index) + len(report.skipped)
        if report.start != position or accounted != report.stop - report.start:
            raise MergeError(
                f"shard {report.shard} report covers images {report.start}..{report.stop - 1} "
                f"with {accounted} entries; expected to start at {position}. Delete {WORK_HINT} and rerun."
            )
        position = report.stop
    if position != count:
        raise MergeError(f"the shard reports cover {position} images, the manifest lists {count}")


#: A merge with no bound on the records it must end with but one.
NO_BOUND = MergeSettings("this split", expected_images=None, allow_skipped=0)


def check_enough_stored(reports: list[ShardReport], enough: MergeSettings, reports_folder: str) -> None:
    """Stop before writing anything when the images skipped as bad leave the split empty, or with
    fewer records than the config accepts."""
    skipped = [entry for report in reports for entry in report.skipped]
    listed = sum(report.stop - report.start for report in reports)
    stored = listed - len(skipped)
    example = f"the first: {skipped[0]['reason']}" if skipped else ""
    where = f"every one is listed with its reason in the shard reports {reports_folder}/*.json"
    if stored == 0 and listed:
        raise MergeError(
            f"split {enough.split}: none of its {listed} images could be stored, every one was skipped as bad "
            f"({example}); {where}. A dataset of no image is no result: check that splits.{enough.split}.source and "
            "layout name the images themselves, fix them and run the same command again."
        )
    wanted = None if enough.expected_images is None else enough.expected_images - enough.allow_skipped
    if wanted is not None and stored < wanted:
        raise MergeError(
            f"split {enough.split}: {stored} images stored, fewer than expected_images {enough.expected_images} "
            f"minus allow_skipped {enough.allow_skipped}: {len(skipped)} were skipped as bad ({example}); {where}. "
            f"Fix or remove those images and run the same command again, or set splits.{enough.split}.allow_skipped: "
            f"{len(skipped)} to accept the split without them."
        )


def merge(
    part_paths: list[str],
    report_paths: list[str],
    manifest: str,
    output: str,
    progress: dict[str, Any],
    threads: int = 2,
    enough: MergeSettings = NO_BOUND,
) -> int:
    """Write every shard's records, renumbered in order, to ``output``; returns the record count.
    ``threads``: the writer plus ``threads - 1`` (at least one) threads reading ahead; ``enough``:
    the fewest records the split may end with."""
    reports = [read_shard_report(path) for path in report_paths]
    header = read_manifest_header(manifest)
    check_reports_cover(reports, header.count)
    check_enough_stored(reports, enough, os.path.dirname(report_paths[0]) if report_paths else "")
    expected = len(kept_indices(reports))
    stored_bytes = sum(sum(report.stored_bytes) for report in reports)
    log.info("merging %d parts: %d records, %.1f MB", len(part_paths), expected, stored_bytes / 1e6)

    # tqdm here, not at the top: write_pointer and data_file import this module only for its checks,
    # and tqdm imports importlib.metadata (a tenth of a job's start)
    from tqdm import tqdm

    manifest_rows = read_manifest(manifest)  # one pass: shards are contiguous and in order
    next_index = 0
    # left in reverse order: the reading threads finish before the source reader closes
    with (
        contextlib.closing(open_sample_reader(header)) as reader,
        atomic_lmdb(output, expected_bytes=stored_bytes + 2048 * expected) as writer,
        tqdm(total=expected, desc="merge", unit="img", **progress) as bar,
        ThreadPoolExecutor(max(1, threads - 1), thread_name_prefix="merge-read") as readers,
        cyclic_gc_paused(),
    ):
        for part_path, report_path, report in zip(part_paths, report_paths, reports, strict=True):
            rows = itertools.islice(manifest_rows, report.stop - report.start)
            shard = ShardInput(part_path, report_path, report, {sample.index: sample for sample in rows})
            next_index = append_shard(writer, shard, reader, readers, next_index)
            bar.update(len(report.index))
            hold_point("merge")
        writer.flush()
        if writer.records != expected:
            raise MergeError(f"{output}: {writer.records} records written, the shard reports list {expected}")
    log.info("merged %d records into %s", next_index, output)
    return next_index


@dataclass
class ShardInput:
    """One shard's part LMDB (re-encoded images only), its report, and its manifest rows."""

    part_path: str
    report_path: str
    report: ShardReport
    samples: dict[int, Sample]


def source_bytes(reader: SampleReader, sample: Sample, crc: int, shard: ShardInput) -> bytes:
    """A passed-through image, read again from the source and checked against its CRC-32."""
    data = reader.read(sample.path, sample.location)
    if checksum(data) != crc:
        raise MergeError(
            f"{reader.describe(sample.path, sample.location)} changed after it was checked (CRC-32 differs). "
            f"Delete {shard.report_path} and run the same command again to check that shard anew."
        )
    return data


def append_shard(
    writer: Any, shard: ShardInput, reader: SampleReader, readers: ThreadPoolExecutor, first_index: int
) -> int:
    """Append one shard's records renumbered from ``first_index``; returns the next free index."""
    report = shard.report
    in_part = [i for i, code in zip(report.index, report.storage, strict=True) if kept_in_part(code)]
    env = open_lmdb_readonly(shard.part_path)
    try:
        if count_records(env) != len(in_part):
            raise MergeError(
                f"{shard.part_path} holds {count_records(env)} records, its report lists {len(in_part)}; "
                f"delete {shard.report_path} and run the same command again to re-encode that shard"
            )
        next_index = first_index
        with env.begin(buffers=True) as txn:
            for data in in_order(shard_values(shard, txn, reader, readers)):
                writer.append(record_key(next_index), data)
                next_index += 1
        return next_index
    finally:
        env.close()


#: A record's value as the writer will get it: bytes at hand, or a read still running.
Pending = tuple[int, "bytes | Future[bytes]"]


def shard_values(shard: ShardInput, txn: Any, reader: SampleReader, readers: ThreadPoolExecutor) -> Iterator[Pending]:
    """Each stored record's (size, value) in index order: part records read here, in cursor
    order (an LMDB transaction belongs to its thread); passed-through images handed to the
    reading threads."""
    report = shard.report
    part_records = iter(txn.cursor())
    for index, code, crc, size in zip(report.index, report.storage, report.crc32, report.stored_bytes, strict=True):
        if kept_in_part(code):
            key, value = next(part_records)
            if bytes(key) != record_key(index):
                raise MergeError(f"{shard.part_path}: record {bytes(key)!r} where the report lists {index}")
            yield size, bytes(value)
        else:
            yield size, readers.submit(source_bytes, reader, shard.samples[index], crc, shard)


def in_order(values: Iterator[Pending]) -> Iterator[bytes]:
    """The values, in order, letting reads run at most READ_AHEAD_BYTES/_IMAGES ahead."""
    window: collections.deque[Pending] = collections.deque()
    window_bytes = 0
    try:
        for size, value in values:
            window.append((size, value))
            window_bytes += size
            while window_bytes > READ_AHEAD_BYTES or len(window) > READ_AHEAD_IMAGES:
                window_bytes -= window[0][0]
                yield resolved(window.popleft()[1])
        while window:
            yield resolved(window.popleft()[1])
    finally:
        for _, value in window:  # on an error, reads not yet started are not started
            if isinstance(value, Future):
                value.cancel()


def resolved(value: "bytes | Future[bytes]") -> bytes:
    return value.result() if isinstance(value, Future) else value


@contextlib.contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """The merge holds a shard's manifest rows (many small objects, no reference cycles): left on,
    the cyclic garbage collector rescans them again and again (7 % of a profiled merge)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def main(smk: Any, stream: TextIO) -> None:
    merge(
        list(smk.input.parts),
        list(smk.input.reports),
        smk.input.manifest,
        smk.output[0],
        progress_kwargs(stream),
        threads=smk.threads,
        enough=MergeSettings.from_params(smk.params),
    )


#: What the rule's script (scripts/merge.py) calls with ``snakemake``: ``main`` with the rule's log set up.
run_in_rule = partial(run_rule, main)
