# SPDX-License-Identifier: MIT
"""Before ``convert SOURCE URL`` converts: the local folder made to hold what is published (issue 58, point 7).

    python -m imagefolder_lmdb.publish.sync s3://bucket/prefix LOCAL_FOLDER

A change is computed against the PUBLISHED split, not against whatever this machine converted last:
for each split of revisions directly under the prefix whose local copy differs (another machine
published since, or the local folder was cleared), the published state is taken down into the local
folder: each data file of its current revision the local data folder lacks, then the pointer (renamed
into place last). Of a published single split file (a split never changed) where the local folder has
no file of that name, only the meta is taken, by ranged reads (writing/revision_copy.py: a meta copy,
a few pages whatever the split's size): a change is computed on it, and publishing moves the published
file into the data folder by a server-side copy; a run that converts the split whole after all (nothing
changed, or a setting did) removes the meta copy first (run/change.py). On a split taken down the same
command applies the change and publishes only the new data files and the pointer (publish/revisions.py).
Taking a split down downloads its current revision's data files once per machine; an up-to-date folder
downloads nothing (one ranged read of each object's meta).

A process of its own, as the upload is: obstore never runs in ``convert``'s process (remote/client.py).
Exit 0: done (a line per split taken down); 1: the problem on stderr.
"""

from __future__ import annotations

import contextlib
import os
import sys

from imagefolder_lmdb.publish.replace_rule import PublishError
from imagefolder_lmdb.publish.revisions import PublishedState, local_pointer, published_state
from imagefolder_lmdb.reader.identity import content_id
from imagefolder_lmdb.reader.revision_format import data_file_path
from imagefolder_lmdb.remote.urls import RemoteSettings

USAGE = "python -m imagefolder_lmdb.publish.sync s3://bucket/prefix LOCAL_FOLDER"


def local_pointer_json(path: str) -> bytes | None:
    """The meta/json of the local split's pointer as stored (None: no split of revisions there)."""
    from imagefolder_lmdb.reader.format import FormatError

    if not os.path.isfile(path):
        return None
    try:
        found = local_pointer(path)
    except FormatError:
        return None  # not a dataset of ours: the published one is taken
    return None if found is None else found[1]


def _download(url: str, path: str) -> int:
    """The object at ``url`` written to ``path`` whole (a temporary renamed into place); its bytes."""
    from imagefolder_lmdb.remote.client import download

    os.makedirs(os.path.dirname(path), exist_ok=True)
    temporary = f"{path}.{os.getpid()}.download"
    try:
        fetched = download(url, temporary, RemoteSettings())
        os.replace(temporary, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.remove(temporary)
    return fetched.size


def take_down(url: str, path: str, state: PublishedState) -> str | None:
    """The published split at ``url`` made the local one at ``path`` if they differ; a line saying so."""
    from imagefolder_lmdb.remote.revisions import data_file_url

    if state.pointer is None:
        return take_meta(url, path, state)
    if local_pointer_json(path) == state.pointer_json:
        return None
    current = next(entry for entry in state.pointer["revisions"] if entry["revision"] == state.pointer["revision"])
    size = 0
    for file in current["files"]:
        place = data_file_path(path, str(file["id"]))
        if not os.path.isfile(place):
            size += _download(data_file_url(url, str(file["id"])), place)
    size += _download(url, path)  # last: the local pointer names only files that are there
    return (
        f"{url}: revision {state.pointer['revision']} taken as the local {path} ({size / 1e6:,.1f} MB downloaded): "
        "a change is applied on it"
    )


def take_meta(url: str, path: str, state: PublishedState) -> str | None:
    """A single split file published at ``url`` (a split never changed), where nothing lies at ``path``:
    its meta copied there by ranged reads (writing/revision_copy.py), for a change to be computed on it.
    Never its records, and never over a local file (a conversion not yet uploaded, for --overwrite)."""
    from imagefolder_lmdb.reader.format import FormatError
    from imagefolder_lmdb.remote.opening import open_remote, read_values
    from imagefolder_lmdb.writing.revision_copy import PublishedCopy, write_meta_copy

    if os.path.lexists(path) or state.single_file_id is None:
        return None
    try:
        values = read_values(url, RemoteSettings())
        remote = open_remote(url, RemoteSettings(), values)
    except (FormatError, ValueError) as exc:  # no record locations, say: a change of it converts it whole
        return f"{url}: its meta not taken ({exc}); a change of it converts the split again"
    if values.etag != state.etag or content_id(remote.meta) != state.single_file_id:
        raise PublishError(f"{url}: replaced while its meta was read; run the same command again")
    copied = PublishedCopy(url, values.etag, remote.size)
    write_meta_copy(path, values.values, copied, remote.lengths)
    return (
        f"{url}: a single split file ({remote.size / 1e6:,.1f} MB); its meta taken as the local {path} "
        f"({remote.requests} ranged reads, no record): a change is applied on it"
    )


def sync(destination: str, folder: str) -> list[str]:
    """Every split directly under ``destination`` taken down into ``folder`` where the local one differs."""
    from imagefolder_lmdb.remote.listing import datasets_under

    lines = []
    for url in datasets_under(destination.rstrip("/") + "/"):
        state = published_state(url)
        if state is not None:
            line = take_down(url, os.path.join(folder, url.rsplit("/", 1)[1]), state)
            lines += [line] if line else []
    return lines


def main(argv: list[str] | None = None) -> int:
    from imagefolder_lmdb.publish.step_process import run_step

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print(f"usage: {USAGE}", file=sys.stderr)
        return 2

    def step() -> None:
        for line in sync(args[0], args[1]):
            print(line, flush=True)

    return run_step(step)


if __name__ == "__main__":
    from imagefolder_lmdb.remote.leaving import leave

    leave(main())
