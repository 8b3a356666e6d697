"""Rule write_pointer (``merge: false``, rules/write_pointer.smk): the split as a pointer over its shards'
data files, revision 1 of a split of revisions (docs/FORMAT.md, "A split of revisions (version 5)").

The one step of such a conversion that sees the whole split, and it reads only each data file's meta:
the files together must account for every image the manifest lists, and hold as many records as the
config accepts (merge.py's check, on the files' counts); then writing/first_revision.py links each file
into ``OUT/<split>.lmdb.d/`` under its content id and renames the pointer over ``OUT/<split>.lmdb``.
"""

from __future__ import annotations

import json
import logging
import os
from functools import partial
from typing import Any, TextIO

from imagefolder_lmdb.board.rule_runner import run_rule
from imagefolder_lmdb.config.step_settings import MergeSettings
from imagefolder_lmdb.reader import META_KEYS
from imagefolder_lmdb.steps.merge import MergeError, check_enough_stored
from imagefolder_lmdb.work.files import ShardReport, read_manifest_header
from imagefolder_lmdb.writing.first_revision import first_revision
from imagefolder_lmdb.writing.hold_points import hold_point
from imagefolder_lmdb.writing.lmdb_open import open_lmdb_readonly

log = logging.getLogger("imagefolder_lmdb.write_pointer")


def file_counts(path: str) -> ShardReport:
    """A data file's images listed and skipped (its meta/json only), as merge's checks take them."""
    env = open_lmdb_readonly(path)
    try:
        with env.begin() as txn:
            raw = txn.get(META_KEYS["json"])
    finally:
        env.close()
    if raw is None:
        raise MergeError(f"{path} has no meta; delete it and run the same command again")
    document = json.loads(bytes(raw))
    images = int(document["source"]["images"])
    return ShardReport(shard=0, shards=1, start=0, stop=images, skipped=list(document["stats"]["skipped"]))


def check_files(files: list[str], manifest: str, enough: MergeSettings) -> None:
    """The data files cover the manifest's images, and leave the split at least as many records as allowed."""
    counts = [file_counts(path) for path in files]
    listed, expected = sum(count.stop for count in counts), read_manifest_header(manifest).count
    if listed != expected:
        raise MergeError(
            f"the data files {os.path.dirname(files[0])}/*.lmdb cover {listed} images, the manifest lists "
            f"{expected}: delete them and run the same command again"
        )
    check_enough_stored(counts, enough, os.path.dirname(files[0]))


def write_pointer(files: list[str], manifest: str, output: str, enough: MergeSettings) -> None:
    check_files(files, manifest, enough)
    hold_point("pointer")  # every data file complete, the pointer not yet written
    written = first_revision(output, files)
    log.info("%s: revision 1 over %d data files", output, len(written.data_files))


def main(smk: Any, stream: TextIO) -> None:
    write_pointer(list(smk.input.files), smk.input.manifest, smk.output[0], MergeSettings.from_params(smk.params))


#: What the rule's script (scripts/write_pointer.py) calls with ``snakemake``: ``main`` with the rule's log set up.
run_in_rule = partial(run_rule, main)
