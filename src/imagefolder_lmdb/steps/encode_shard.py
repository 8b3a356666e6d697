"""Rule encode_shard: check and encode one contiguous slice of the manifest into a part LMDB.

How each image is checked and stored is the image policy (src/imagefolder_lmdb/writing/reencode.py). Bad images
fail the shard once it has checked all of its images, naming every one, or with
``on_error: skip`` are left out and listed in the shard report. A file the file system cannot read
(EACCES, EIO, ESTALE on NFS) is no bad image: it stops the shard at once, whatever ``on_error``
says. Only re-encoded images go into the part; merge copies the others from the source. With
``merge: false`` every image goes into the part, and the same job makes the part the shard's data file of
the split (steps/data_file.py).
"""

import errno
import logging
from collections.abc import Iterable
from functools import partial
from typing import Any, TextIO

from tqdm import tqdm

from imagefolder_lmdb.board.progress import ProgressWriter, progress_path
from imagefolder_lmdb.board.rule_runner import progress_kwargs, run_rule
from imagefolder_lmdb.config.step_settings import EVERY_RECORD, EncodeShardSettings, WriteMetaSettings
from imagefolder_lmdb.reader import checksum, record_key
from imagefolder_lmdb.sources import open_sample_reader
from imagefolder_lmdb.sources.base import DamagedSampleError, SampleReader
from imagefolder_lmdb.work.files import (
    Sample,
    ShardReport,
    read_manifest,
    read_manifest_header,
    write_shard_report,
)
from imagefolder_lmdb.work.paths import RunPaths
from imagefolder_lmdb.work.shard_stamps import checked_range
from imagefolder_lmdb.writing.atomic import remove_path
from imagefolder_lmdb.writing.hold_points import hold_point
from imagefolder_lmdb.writing.lmdb_writer import LMDBWriter, atomic_lmdb
from imagefolder_lmdb.writing.reencode import (
    UNUSABLE_IMAGE,
    BadImageError,
    Encoded,
    EncodeSettings,
    encode_image,
    kept_in_part,
    likely_cause,
    what_went_wrong,
)

log = logging.getLogger("imagefolder_lmdb.encode_shard")

#: How many bad images a failing shard names in its error (the log has every one).
LISTED_BAD_IMAGES = 20


class SourceReadError(RuntimeError):
    """The file system did not give a source file's bytes (EACCES, EIO, ESTALE, ...): no bad image,
    so never skipped; the shard stops at once, naming the file and the errno."""


def read_source(reader: SampleReader, sample: Sample) -> bytes:
    """A sample's bytes as the source holds them; an OSError here is the file system's, not the image's."""
    try:
        return reader.read(sample.path, sample.location)
    except OSError as exc:
        raise SourceReadError(read_error_message(reader.describe(sample.path, sample.location), exc)) from exc


def read_error_message(where: str, exc: OSError) -> str:
    name = errno.errorcode.get(exc.errno, "unknown") if exc.errno is not None else "no errno"
    if isinstance(exc, FileNotFoundError):
        remedy = (
            "It was listed when the source was indexed but is gone now: the source changed since. Run the "
            "same command with --forcerun extract to list it again."
        )
    else:
        remedy = (
            "Check the file and the disk or network share it lies on (permissions, mount, hardware), then run "
            "the same command again."
        )
    return (
        f"{where}: cannot be read: {exc.strerror or exc} (errno {exc.errno}, {name}). A read error of the file "
        f"system, not a damaged image: it is never skipped as one, whatever encode.on_error says. {remedy}"
    )


def read_and_encode(reader: SampleReader, sample: Sample, settings: EncodeSettings) -> tuple[Encoded, int]:
    """Encoded image and source size of one sample; BadImageError names the file (SourceReadError
    where the file could not be read at all)."""
    try:
        data = read_source(reader, sample)
    except DamagedSampleError as exc:
        raise BadImageError(str(exc)) from exc
    try:
        if not data:
            raise ValueError("an empty file (0 bytes)")
        return encode_image(data, settings), len(data)
    except UNUSABLE_IMAGE as exc:
        where = reader.describe(sample.path, sample.location)
        raise BadImageError(f"{where}: {what_went_wrong(exc)}{likely_cause(sample.path)}") from exc


def bad_images_message(bad: list[dict[str, Any]], how_to_go_on: str) -> str:
    listed = "\n".join(f"  {entry['reason']}" for entry in bad[:LISTED_BAD_IMAGES])
    more = f"\n  ... and {len(bad) - LISTED_BAD_IMAGES} more" if len(bad) > LISTED_BAD_IMAGES else ""
    noun = "bad image" if len(bad) == 1 else "bad images"
    return f"{len(bad)} {noun} in this shard:\n{listed}{more}\n{how_to_go_on}"


def how_to_go_on(reader: SampleReader, all_bad: bool) -> str:
    """What to do about a shard's bad images. Where every image of the shard is bad, the source is not
    what the workflow takes it for (paths where bytes should be, another format): skipping would only
    leave an empty dataset, so it is not suggested."""
    if all_bad:
        return (
            f"Every image of this shard is bad: check that splits.<name>.source and layout name the images "
            f"themselves. {reader.remedy} and run the same command again."
        )
    return (
        f"{reader.remedy} and run the same command again, or set encode.on_error: skip to leave bad images out "
        "(they are listed in the report; with expected_images set, splits.<name>.allow_skipped says how many may be)."
    )


def expected_part_bytes(
    reader: SampleReader, samples: Iterable[Sample], settings: EncodeSettings, every_record: bool = False
) -> int:
    """A guess at the part's size, to size its map (which grows if the guess is short): only
    re-encoded images go into the part (see SOURCE_BYTES_CODES), a small fraction of the source
    unless everything is re-encoded."""
    expected = sum(reader.source_size(sample.path, sample.location) for sample in samples)
    resizing = settings.max_side is not None or settings.short_side is not None
    return expected // 8 if settings.reencode != "always" and not resizing and not every_record else expected


def store(
    writer: LMDBWriter,
    report: ShardReport,
    sample: Sample,
    encoded: Encoded,
    source_bytes: int,
    every_record: bool = False,
) -> None:
    """One checked image: its bytes into the part when merge cannot take them from the source (with
    ``every_record``, merge: false: every image, numbered from 0 as its data file's record), its columns
    into the report."""
    if every_record:
        writer.append(record_key(len(report.index)), encoded.value)
    elif kept_in_part(encoded.storage):
        writer.append(record_key(sample.index), encoded.value)
    crc = checksum(encoded.value)
    report.add(sample.index, encoded.width, encoded.height, crc, encoded.storage, source_bytes, len(encoded.value))


def encode_shard(
    manifest_path: str,
    stamp_path: str,
    part_path: str,
    report_path: str,
    shard: int,
    settings: EncodeShardSettings,
    progress: dict[str, Any],
    every_record: bool = False,
) -> ShardReport:
    """``stamp_path``: the shard's stamp (work/shard_stamps.py), which names its slice of the manifest.
    ``every_record``: the part holds every stored image (merge: false: ``main`` makes it a data file)."""
    shards, encode = settings.shards, settings.encode
    header = read_manifest_header(manifest_path)
    start, stop = checked_range(stamp_path, manifest_path, shard, shards)
    report = ShardReport(shard=shard, shards=shards, start=start, stop=stop)
    log.info("shard %d of %d: images %d..%d of %d from %s", shard, shards, start, stop - 1, header.count, header.root)
    reader = open_sample_reader(header)
    expected = expected_part_bytes(reader, read_manifest(manifest_path, start, stop), encode, every_record)
    board = ProgressWriter(progress_path(report_path), stop - start)
    with atomic_lmdb(part_path, expected_bytes=expected) as writer:
        listed = read_manifest(manifest_path, start, stop)
        samples = tqdm(listed, total=stop - start, desc=f"shard {shard}", unit="img", **progress)
        for position, sample in enumerate(samples):
            if position == (stop - start) // 2:
                hold_point("encode_shard", shard)
            try:
                store(writer, report, sample, *read_and_encode(reader, sample, encode), every_record)
            except BadImageError as exc:
                log.warning("%s %s", "bad image:" if encode.on_error == "fail" else "skipped", exc)
                report.skipped.append({"index": sample.index, "path": sample.path, "reason": str(exc)})
            board.update(position + 1, len(report.skipped))
        board.update(stop - start, len(report.skipped), force=True)
        if report.skipped and encode.on_error == "fail":
            # raised after checking the whole shard, so that one round of fixes covers all of it
            advice = how_to_go_on(reader, all_bad=not report.index and len(report.skipped) > 1)
            raise BadImageError(bad_images_message(report.skipped, advice))
    reader.close()
    write_shard_report(report_path, report)
    log.info("stored %d images, skipped %d", len(report.index), len(report.skipped))
    return report


def main(smk: Any, stream: TextIO) -> None:
    settings = EncodeShardSettings.from_params(smk.params)
    every_record = bool(smk.params.encode.get(EVERY_RECORD))
    if every_record:  # before any image is read: a split of data files cannot hold the split at all
        from imagefolder_lmdb.steps.data_file import refuse_targets_a_pointer_cannot_hold

        refuse_targets_a_pointer_cannot_hold(smk.input.manifest)
    report = encode_shard(
        smk.input.manifest,
        smk.input.stamp,
        part_path(smk, every_record),
        smk.output.report,
        shard=int(smk.wildcards.shard),
        settings=settings,
        progress=progress_kwargs(stream),
        every_record=every_record,
    )
    if every_record:
        finish_data_file(smk, report, settings)


def part_path(smk: Any, every_record: bool) -> str:
    """Where the part goes: the rule's output; with merge: false (no part among the outputs, see rules/common.smk's
    ``encode_part``) its place in the work folder all the same, which a run's clean-up knows."""
    if not every_record:
        return str(smk.output.part)
    return RunPaths(smk.config["results"], smk.config["work"]).part(smk.wildcards.split, smk.wildcards.shard)


def finish_data_file(smk: Any, report: ShardReport, settings: EncodeShardSettings) -> None:
    """merge: false: the part just written made the shard's data file of the split, in this job (no job per
    shard more: rules/encode_shard.smk), and removed (the data file is a hard link of it)."""
    from imagefolder_lmdb.steps import data_file  # write_meta's builder: only where a data file is made
    from imagefolder_lmdb.steps.write_meta import recorded_made_from

    part = part_path(smk, every_record=True)
    data_file.finish_data_file(
        part,
        report,
        smk.output.report,
        smk.input.manifest,
        smk.input.counts,
        smk.output.data_file,
        WriteMetaSettings(settings.encode),
        recorded_made_from(smk.input.made_from[0]),
    )
    remove_path(part)  # a kill before this: the next run writes it again, or its clean-up removes it


#: What the rule's script (scripts/encode_shard.py) calls with ``snakemake``: ``main`` with the rule's log set up.
run_in_rule = partial(run_rule, main)
