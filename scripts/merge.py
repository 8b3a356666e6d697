"""Rule merge: append the part LMDBs, in shard order, to one LMDB.

Parts hold records keyed by their manifest index, with gaps where images were skipped. The merge
renumbers them 0..n-1 in order, so the final indices are ImageFolder's minus the skipped images.
Records go in with sequential appends (no B-tree searches), every append is checked, and the
final count is compared with what the shard reports say was stored.
"""

import logging
from typing import Any, TextIO

from tqdm import tqdm

from dataset import record_key
from workflow_io import (
    atomic_lmdb,
    count_records,
    hold_point,
    open_lmdb_readonly,
    progress_kwargs,
    read_json,
    read_manifest_header,
    run_rule,
)

log = logging.getLogger("imagefolder_lmdb.merge")

WORK_HINT = "the split's folder under `work`"


class MergeError(RuntimeError):
    """A part does not hold what its shard report says."""


def check_reports_cover(reports: list[dict[str, Any]], count: int) -> None:
    """The shard reports must account for every manifest image exactly once, stored or skipped."""
    position = 0
    for report in reports:
        accounted = len(report["index"]) + len(report["skipped"])
        if report["start"] != position or accounted != report["stop"] - report["start"]:
            raise MergeError(
                f"shard {report['shard']} report covers images {report['start']}..{report['stop'] - 1} "
                f"with {accounted} entries; expected to start at {position}. Delete {WORK_HINT} and rerun."
            )
        position = report["stop"]
    if position != count:
        raise MergeError(f"the shard reports cover {position} images, the manifest lists {count}")


def merge(part_paths: list[str], report_paths: list[str], manifest: str, output: str, progress: dict[str, Any]) -> int:
    reports = [read_json(path) for path in report_paths]
    check_reports_cover(reports, read_manifest_header(manifest).count)
    expected = sum(len(report["index"]) for report in reports)
    stored_bytes = sum(sum(report["stored_bytes"]) for report in reports)
    log.info("merging %d parts: %d records, %.1f MB", len(part_paths), expected, stored_bytes / 1e6)

    next_index = 0
    with (
        atomic_lmdb(output, expected_bytes=stored_bytes + 2048 * expected) as writer,
        tqdm(total=expected, desc="merge", unit="img", **progress) as bar,
    ):
        for part_path, report in zip(part_paths, reports, strict=True):
            next_index = append_part(writer, part_path, report, next_index)
            hold_point("merge")
            bar.update(len(report["index"]))
        writer.flush()
        if writer.records != expected:
            raise MergeError(f"{output}: {writer.records} records written, the shard reports list {expected}")
    log.info("merged %d records into %s", next_index, output)
    return next_index


def append_part(writer: Any, part_path: str, report: dict[str, Any], first_index: int) -> int:
    """Append one part's records renumbered from ``first_index``; returns the next free index."""
    env = open_lmdb_readonly(part_path)
    try:
        if count_records(env) != len(report["index"]):
            raise MergeError(
                f"{part_path} holds {count_records(env)} records, its report lists {len(report['index'])}; "
                "delete it and run the same command again to re-encode that shard"
            )
        next_index = first_index
        with env.begin(buffers=True) as txn:
            for (key, value), index in zip(txn.cursor(), report["index"], strict=True):
                if bytes(key) != record_key(index):
                    raise MergeError(f"{part_path}: record {bytes(key)!r} where the report lists {index}")
                writer.append(record_key(next_index), bytes(value))
                next_index += 1
        return next_index
    finally:
        env.close()


def main(smk: Any, stream: TextIO) -> None:
    merge(list(smk.input.parts), list(smk.input.reports), smk.input.manifest, smk.output[0], progress_kwargs(stream))


if __name__ == "__main__":
    run_rule(main, snakemake)  # type: ignore[name-defined]  # noqa: F821
