"""Outputs at their final paths only when whole: files and folders.

Every output the workflow finalises goes through here, so "a final path only ever holds a complete
file" is implemented once: build it under a temporary name in the same folder (``*.incomplete``:
a leftover of a killed run is never taken for a result), flush it to disk, rename it, and flush the
folder, so that the rename itself survives a crash. Plain files are written with ``atomic_file``;
a folder or an LMDB built under ``temporary_path`` is renamed into place with ``publish``
(``atomic_lmdb`` in lmdb_writer.py does both for an LMDB written record by record).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Iterator
from typing import IO, Any

#: Suffix of every temporary output. A leftover from a killed run carries it and is never a result.
TMP_SUFFIX = ".incomplete"


def temporary_path(final: str) -> str:
    """The name an output is built under before it is renamed to ``final``."""
    return final + TMP_SUFFIX


def remove_path(path: str) -> None:
    """Remove a file or folder if it exists (leftovers of an interrupted run)."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)


def fsync_path(path: str) -> None:
    """Flush a file's data, or a folder's entries, to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def publish(temporary: str, final: str) -> None:
    """Rename a finished temporary output (a file or a folder) into place, durably: its data first,
    then the rename, then the folder that records the rename."""
    fsync_path(temporary)
    os.replace(temporary, final)
    fsync_path(os.path.dirname(os.path.abspath(final)))


@contextlib.contextmanager
def atomic_file(final: str, mode: str = "w", **open_args: Any) -> Iterator[IO[Any]]:
    """``final`` opened for writing (``open``'s ``mode`` and arguments), whole or not at all: the block
    writes a temporary file beside it, which is published (flushed, renamed, the folder flushed)
    when the block ends without an error. On any error the temporary is removed and ``final`` is
    as it was. The temporary's name holds the process id, so two processes finalising the same
    path never write into one file."""
    os.makedirs(os.path.dirname(os.path.abspath(final)), exist_ok=True)
    temporary = f"{final}.{os.getpid()}{TMP_SUFFIX}"
    try:
        with open(temporary, mode, **open_args) as stream:
            yield stream
        publish(temporary, final)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.remove(temporary)
        if isinstance(exc, OSError) and exc.filename is None:
            exc.filename = final  # a failed write names no file: say which output it was
        raise


def json_text(document: Any, **options: Any) -> str:
    """``document`` as JSON, UTF-8 text as it is; with ``\\u`` escapes only where a name that is not
    UTF-8 (a surrogate escape) could not be written as UTF-8 (json.load gives it back as it was)."""
    text = json.dumps(document, ensure_ascii=False, **options)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(document, ensure_ascii=True, **options)
    return text


def write_json_atomic(path: str, document: Any) -> None:
    with atomic_file(path, encoding="utf-8") as stream:
        stream.write(json_text(document, indent=1, sort_keys=True))
        stream.write("\n")
