# SPDX-License-Identifier: MIT
"""The live upload of a ``--no-merge`` conversion to a URL (issue 60, point 4): each data file sent as
its job finishes, while the others still encode.

    python -m imagefolder_lmdb.publish.live_helper --work W --split FILES DATASET URL [--split ...] [--overwrite]

Started by ``convert`` beside Snakemake (publish/live.py), a process of its own that forks nothing, so
obstore may run here (remote/client.py). Every half second it looks in each split's FILES folder
(``WORK/<split>/files``), where a shard's data file appears only whole (renamed into place when
complete), and sends each new one to ``URL.d/<content id>.lmdb`` as a split file is sent (publish/upload.py
``publish``: multipart, read back and checked); one already there is never sent again (its name is its
content). Each content id is recorded (publish/live_record.py) before its upload starts. The pointer is
never sent here: ``convert`` publishes it once Snakemake has ended, after every data file is there.

Where the object at URL would refuse the pointer at the end (publish/revisions.py: a published pointer
this run does not hold, or a single file without --overwrite), that split's files are left for the end,
which says why: nothing is sent that the replace rule would leave unnamed.

stdin: ``done`` from ``convert`` once Snakemake has ended: one last look, then exit 0. End of input without
it (``convert`` killed): the upload in flight aborted, as on SIGTERM (exit 143). SIGINT: 130.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from dataclasses import dataclass, field

from imagefolder_lmdb.publish.live_record import LiveRecord
from imagefolder_lmdb.writing.atomic import TMP_SUFFIX
from imagefolder_lmdb.writing.hold_points import hold_point

#: Seconds between two looks at the folders (a shard's job takes far longer; NFS shows a rename within seconds).
POLL_S = 0.5


@dataclass
class WatchedSplit:
    """One split's data files: where they appear, its local pointer (whose data folder holds them once
    write_pointer linked them), its URL, and what was seen and sent."""

    files: str
    dataset: str
    url: str
    seen: set[str] = field(default_factory=set)
    sent: int = 0
    sent_bytes: int = 0

    def summary(self) -> str:
        return f"{self.url}: {self.sent} data file(s) uploaded while converting ({self.sent_bytes / 1e6:,.1f} MB)"


def finished_files(folder: str) -> list[str]:
    """The data files whole in ``folder`` (a temporary name is renamed to ``<shard>.lmdb`` when complete)."""
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return []
    return sorted(os.path.join(folder, name) for name in names if name.endswith(".lmdb") and TMP_SUFFIX not in name)


def content_of(path: str) -> tuple[str, int]:
    """The content id of the data file ``path`` (its name under the pointer) and its record count."""
    from imagefolder_lmdb.reader import decode_meta
    from imagefolder_lmdb.reader.handles import open_env_readonly
    from imagefolder_lmdb.reader.identity import content_id

    env = open_env_readonly(path)
    try:
        with env.begin() as txn:
            meta = decode_meta(txn, path)
    finally:
        env.close()  # publish() opens it again: one environment per inode and process
    return content_id(meta), meta.length


def accepts_live(url: str, overwrite: bool) -> bool:
    """Whether the pointer published at the end may replace what ``url`` holds now (publish/revisions.py's
    rule): nothing there, or a single file replaced with --overwrite."""
    from imagefolder_lmdb.publish.revisions import published_state

    state = published_state(url)
    return state is None or (overwrite and state.pointer is None)


def send(split: WatchedSplit, path: str, work: str) -> None:
    """The data file ``path`` sent to ``split``'s data folder unless it is there already."""
    from imagefolder_lmdb.publish.replace_rule import head
    from imagefolder_lmdb.publish.upload import publish
    from imagefolder_lmdb.reader.revision_format import data_file_path
    from imagefolder_lmdb.remote.revisions import data_file_url

    split.seen.add(os.path.basename(path))
    try:
        content, length = content_of(path)
    except FileNotFoundError:
        return  # write_pointer linked it and Snakemake removed it: the end sends it from the data folder
    target = data_file_url(split.url, content)
    if length == 0 or head(target) is not None:
        return  # a shard of skipped images only is no file of the revision; one there holds these records
    LiveRecord.in_folder(work, split.url).add(content)
    linked = data_file_path(split.dataset, content)  # write_pointer's link stays; the work copy is temp()
    source = linked if os.path.exists(linked) else path
    publish(source, target, True, work=work)
    split.sent += 1
    split.sent_bytes += os.path.getsize(source)
    hold_point("live-sent", split.sent - 1)  # the data object complete and unnamed, encoding going on


def look(splits: list[WatchedSplit], work: str) -> None:
    """Each data file finished since the last look, sent."""
    for split in splits:
        for path in finished_files(split.files):
            if os.path.basename(path) not in split.seen:
                send(split, path, work)


def watch(splits: list[WatchedSplit], work: str, done: threading.Event) -> None:
    """Look until ``convert`` says Snakemake has ended, then once more (a file the looks missed, its work copy
    removed by Snakemake, is sent by the publish after the run)."""
    while not done.wait(POLL_S):
        look(splits, work)
    look(splits, work)


def read_stdin(done: threading.Event) -> None:
    """``done`` set at the line ``done``; end of input without it (``convert`` gone): SIGTERM to this process."""
    for line in sys.stdin:
        if line.strip() == "done":
            done.set()
            return
    os.kill(os.getpid(), signal.SIGTERM)


def parsed(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m imagefolder_lmdb.publish.live_helper", description=__doc__)
    parser.add_argument("--work", required=True, help="the folder that records the uploads while they run")
    parser.add_argument("--split", nargs=3, action="append", default=[], metavar=("FILES", "DATASET", "URL"))
    parser.add_argument("--overwrite", action="store_true")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    from imagefolder_lmdb.publish.replace_rule import PublishError
    from imagefolder_lmdb.publish.upload import UploadInterrupted, interrupt
    from imagefolder_lmdb.remote.client import allow_in_process

    args = parsed(argv)
    allow_in_process()  # a process of its own that forks nothing
    signal.signal(signal.SIGTERM, interrupt)
    done = threading.Event()
    threading.Thread(target=read_stdin, args=(done,), daemon=True).start()
    try:
        splits = [WatchedSplit(*given) for given in args.split if accepts_live(given[2], args.overwrite)]
        watch(splits, args.work, done)
    except KeyboardInterrupt:
        return 130
    except UploadInterrupted as exc:
        return exc.code
    except (PublishError, OSError, ValueError) as exc:
        print(str(exc), file=sys.stderr)
        return 1
    for split in splits:
        if split.sent:
            print(split.summary(), flush=True)
    return 0


if __name__ == "__main__":
    from imagefolder_lmdb.remote.leaving import leave

    leave(main())
