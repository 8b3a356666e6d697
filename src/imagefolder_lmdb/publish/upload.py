# SPDX-License-Identifier: MIT
"""Publishing a converted split to object storage: one multipart upload per file, checked after.

    python -m imagefolder_lmdb.publish.upload results/train.lmdb s3://bucket/prefix/train.lmdb [--overwrite] [--work W]

(``imagefolder-lmdb convert DATA s3://bucket/prefix`` runs it for each split, in a process of its
own so that obstore never runs in a process that may fork afterwards; remote/client.py says why.)

- The object appears only complete: S3 shows a multipart upload's object once it is completed.
- Parts of ``part_size(size)`` bytes (S3 allows 10,000 parts: 16 MiB up to 160 GB, larger beyond),
  ``concurrency`` of them in flight, each read from the file where it lies (no copy in memory).
- The replace rule is the local one (replace_rule.py): an object made from the same source with the
  same settings is replaced; one made from another source or with other settings (the recipe its
  meta records, read by ranged reads), or not by this tool, is refused without ``overwrite``,
  naming what differs. The check runs before the upload and again before completing it (not atomic
  against another writer: the last to complete wins, and the other is told if it checks after).
- SIGINT / SIGTERM abort the upload (no object, no pending upload) and exit 130 / 143. Its id is
  recorded in ``--work`` until it completed or was aborted: after a SIGKILL the next publish of
  the URL aborts it (pending.py).
- After the upload: the object's size, and a sample of records read back by ranged reads and
  checked against their CRC-32 (``verify URL``).
- A split of revisions (a pointer): its data files the bucket lacks, then the pointer (revisions.py);
  with ``--no-merge`` most were sent while converting (live_helper.py), and once the pointer is
  published, the data objects an interrupted live upload sent and no revision names are removed.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from imagefolder_lmdb.publish.live_record import remove_unnamed
from imagefolder_lmdb.publish.pending import UploadRecord, abort_recorded, obstore_note, others_note
from imagefolder_lmdb.publish.replace_rule import STOPS, Found, PublishError, existing, head, replace_problem
from imagefolder_lmdb.publish.revisions import RevisionsPublished, publish_revisions
from imagefolder_lmdb.publish.s3_multipart import Credentials, S3Multipart, S3RequestError
from imagefolder_lmdb.remote.urls import RemoteSettings, check_url, store_and_key
from imagefolder_lmdb.writing.hold_points import hold_point

__all__ = ["Found", "PublishError", "Published", "UploadInterrupted", "existing", "publish", "replace_problem"]

MIB = 1 << 20
#: S3's limits on a multipart upload.
MAX_PARTS, SMALLEST_PART, LARGEST_PART = 10_000, 5 * MIB, 5 << 30
#: Parts are at least this big (fewer requests); IMAGEFOLDER_LMDB_PART_BYTES sets it (tests: several
#: parts of a small file).
DEFAULT_PART = 16 * MIB
CONCURRENCY = 8
SAMPLE = 64


class UploadInterrupted(BaseException):
    """SIGTERM (143) or SIGINT (130) during an upload."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def part_size(size: int, smallest: int | None = None) -> int:
    """The part size for a file of ``size`` bytes: whole MiB, at most 10,000 parts, within S3's limits."""
    floor = smallest or int(os.environ.get("IMAGEFOLDER_LMDB_PART_BYTES", DEFAULT_PART))
    needed = -(-size // MAX_PARTS)
    return min(LARGEST_PART, max(floor, SMALLEST_PART, -(-needed // MIB) * MIB))


def _check_bucket(url: str) -> None:
    """The bucket's no-such-bucket error, if it is missing (S3 servers refuse an upload into one with
    403 or 404, which says neither)."""
    from imagefolder_lmdb.remote.engine import store_for
    from imagefolder_lmdb.remote.problems import listing_beside, no_bucket_error

    store_url, key = store_and_key(url)
    if listing_beside(store_for(store_url, RemoteSettings(), url), key)[0] == "nobucket":
        raise no_bucket_error(url)


def _send_parts(path: str, upload: S3Multipart, size: int, part: int, concurrency: int) -> list[str]:
    """Every part of ``path`` sent, ``concurrency`` at a time; their ETags in order."""
    count = max(1, -(-size // part))
    etags: list[str] = [""] * count
    with open(path, "rb") as file, ThreadPoolExecutor(concurrency) as pool:

        def send(number: int) -> str:
            data = os.pread(file.fileno(), part, number * part)
            for attempt in range(4):
                try:
                    return upload.put_part(number + 1, data)
                except (S3RequestError, OSError) as exc:
                    if attempt == 3 or (isinstance(exc, S3RequestError) and exc.status < 500):
                        raise
                    time.sleep(0.5 * 2**attempt)
            raise AssertionError("unreachable")

        running: dict[Future[str], int] = {}
        following = 0
        try:
            while following < count or running:
                while following < count and len(running) < concurrency:
                    running[pool.submit(send, following)] = following
                    following += 1
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    etags[running.pop(future)] = future.result()
                hold_point("upload-part")
        except BaseException:
            for future in running:
                future.cancel()
            raise
    return etags


@dataclass(frozen=True)
class Published:
    url: str
    size: int
    etag: str
    seconds: float
    parts: int
    checked: int

    def summary(self) -> str:
        rate = self.size / max(self.seconds, 1e-6) / 1e6
        return (
            f"{self.url}: {self.size / 1e6:,.1f} MB, ETag {self.etag}, uploaded in {self.seconds:.1f} s "
            f"({rate:,.1f} MB/s, {self.parts} parts), {self.checked} records read back and checked"
        )


def _upload_s3(
    path: str,
    url: str,
    before: Found | None,
    credentials: Credentials,
    concurrency: int,
    record: UploadRecord | None = None,
) -> str:
    """The multipart upload, aborted on any failure or interrupt; the object's ETag. Its id is kept
    in ``record`` from before the first part until it completed or was aborted (pending.py)."""
    bucket, key = url.split("://", 1)[1].split("/", 1)
    upload = S3Multipart(bucket, key, credentials)
    size = os.path.getsize(path)
    upload_id = upload.create()
    try:
        if record is not None:
            record.write(upload_id, path)
        etags = _send_parts(path, upload, size, part_size(size), concurrency)
        now = head(url)
        if (now is None) != (before is None) or (now is not None and before and now.get("e_tag") != before.etag):
            raise PublishError(
                f"{url} was written by someone else while this upload ran; not replaced (run the command again "
                "to check it and upload)"
            )
        hold_point("upload-complete")
        etag = upload.complete(etags)
    except BaseException:
        for number in (signal.SIGINT, signal.SIGTERM):
            signal.signal(number, signal.SIG_IGN)  # the abort itself is not interrupted
        upload.abort()
        if record is not None:
            record.remove()
        raise
    if record is not None:
        record.remove()
    return etag


def _upload_obstore(path: str, url: str, concurrency: int) -> str:
    """Through obstore (no AWS keys in the environment: profiles, instance roles; gs://, az://)."""
    import obstore

    from imagefolder_lmdb.remote.engine import store_for

    store_url, key = store_and_key(url)
    size = os.path.getsize(path)
    store = store_for(store_url, RemoteSettings(), url)
    for line in obstore_note(url, size, part_size(size)):
        print(line, flush=True)
    _state["obstore"] = url  # an interrupt cannot promise that no pending upload is left
    try:
        result = obstore.put(store, key, Path(path), chunk_size=part_size(size), max_concurrency=concurrency)
    except Exception as exc:  # noqa: BLE001 - one line with its fix, not obstore's debug dump
        from imagefolder_lmdb.remote.problems import explain, first_line

        raise explain(exc, url, store, key) or PublishError(f"{url}: the upload failed: {first_line(exc)}") from None
    return str(result.get("e_tag") or "")


def _check_uploaded(url: str, size: int) -> int:
    """The object's size and a sample of its records read back; the records checked."""
    from imagefolder_lmdb.verify.remote import verify_remote

    found = head(url)
    if found is None or int(found["size"]) != size:
        raise PublishError(f"{url}: the uploaded object holds {found and found['size']} bytes, not {size:,}")
    report, _, indices = verify_remote(url, SAMPLE, False, 0)
    if not report["ok"]:
        raise PublishError(f"{url}: the uploaded object fails its check: {'; '.join(report['problems'][:3])}")
    return len(indices)


def publish(
    path: str, url: str, overwrite: bool = False, concurrency: int = CONCURRENCY, work: str | None = None
) -> Published | None:
    """Upload the dataset file ``path`` to ``url`` and check it; None if ``url`` already holds this file.
    ``work``: the folder that records the upload while it runs (default: the user's cache)."""
    from imagefolder_lmdb.reader.document import read_document

    check_url(url)
    local = read_document(path)
    if local is None:
        raise PublishError(f"{path}: not an imagefolder-lmdb dataset; nothing uploaded")
    size = os.path.getsize(path)
    credentials = Credentials.from_environment() if url.lower().startswith(("s3://", "s3a://")) else None
    record = UploadRecord.in_folder(work or default_work(), url)
    if credentials is not None:
        _say(_pending_lines(url, credentials, record))
    before = existing(url)
    if before is None:
        _check_bucket(url)
    elif before.document == local and before.size == size:
        return None
    problem = None if before is None or overwrite else replace_problem(url, before, local)
    if problem:
        raise PublishError(problem)
    if before is not None:
        _say([f"replacing {url} ({before.describe()}): {STOPS}"])
    started = time.monotonic()
    if credentials is not None:
        etag = _upload_s3(path, url, before, credentials, concurrency, record)
    else:
        etag = _upload_obstore(path, url, concurrency)
    seconds = time.monotonic() - started
    _state["completed"] = url  # from here an interrupt leaves the whole object (it only stops the check)
    checked = _check_uploaded(url, size)
    return Published(url, size, etag, seconds, max(1, -(-size // part_size(size))), checked)


def publish_any(path: str, url: str, overwrite: bool, work: str | None) -> Published | RevisionsPublished | None:
    """A split file published by ``publish``; a split of revisions (its pointer) by publish/revisions.py."""
    from imagefolder_lmdb.reader.document import read_document
    from imagefolder_lmdb.reader.revision_format import is_pointer_document
    from imagefolder_lmdb.writing.revision_copy import refuse_upload

    if not is_pointer_document(read_document(path)):
        refuse_upload(path)  # a meta copy of a published file holds no record (writing/revision_copy.py)
        return publish(path, url, overwrite, work=work)
    done = publish_revisions(path, url, lambda file, target: publish(file, target, True, work=work), overwrite)
    _say(remove_unnamed(url, work or default_work()))  # what a killed live upload sent and no revision names
    return done


def _pending_lines(url: str, credentials: Credentials, record: UploadRecord) -> list[str]:
    """The upload an interrupted publish of ``url`` recorded, aborted; the key's others, named."""
    bucket, key = url.split("://", 1)[1].split("/", 1)
    upload = S3Multipart(bucket, key, credentials)
    return abort_recorded(record, upload) + others_note(upload, url)


def _say(lines: list[str]) -> None:
    for line in lines:
        print(line, flush=True)


def default_work() -> str:
    """Where a publish run alone (not by ``convert``) records its upload: the user's cache."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "imagefolder-lmdb", "publish")


#: How an upload stopped by each forwarded signal is named, as the child names it (``_interrupted_line``).
SIGNAL_WORD: dict[int, str] = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}


def interrupt(signum: int, frame: Any) -> None:
    """SIGTERM's handler in an upload's process: the upload aborted, exit 143."""
    raise UploadInterrupted(143)


#: What an interrupt leaves: "completed" names the object once its upload completed.
_state: dict[str, str] = {}


def _interrupted_line(url: str, word: str) -> str:
    if _state.get("completed") == url:
        return f"{word} while checking {url}: its upload had completed; check it with `imagefolder-lmdb verify {url}`"
    if _state.get("obstore") == url:
        return f"{word}: the upload to {url} was stopped (no object; obstore may leave a pending upload: see the note)"
    return f"{word}: the upload to {url} was aborted (no object, no pending upload)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m imagefolder_lmdb.publish.upload", description=__doc__)
    parser.add_argument("file")
    parser.add_argument("url")
    parser.add_argument("--overwrite", action="store_true")
    parser.add_argument("--work", help="the folder that records the upload while it runs (default: the user's cache)")
    args = parser.parse_args(argv)
    from imagefolder_lmdb.remote.client import allow_in_process

    allow_in_process()  # a process of its own that forks nothing
    signal.signal(signal.SIGTERM, interrupt)
    try:
        done = publish_any(args.file, args.url, args.overwrite, args.work)
    except KeyboardInterrupt:
        print(_interrupted_line(args.url, "interrupted"), file=sys.stderr)
        return 130
    except UploadInterrupted as exc:
        print(_interrupted_line(args.url, "terminated"), file=sys.stderr)
        return exc.code
    except (PublishError, OSError, ValueError) as exc:
        print(str(exc), file=sys.stderr)
        return 1
    if done is None:
        print(f"{args.url}: up to date (it holds this dataset already)", flush=True)
    else:
        print(done.summary(), flush=True)
    return 0


if __name__ == "__main__":
    from imagefolder_lmdb.remote.leaving import leave

    leave(main())


def local_folder(destination: str, source: Any, work: str | None) -> str:
    """Where ``convert SOURCE URL`` converts before uploading: ``work`` if given, else a folder of
    the user's cache named after the URL (kept: the same command uploads again without converting);
    never inside SOURCE."""
    check_url(destination.rstrip("/") + "/train.lmdb")
    if work is not None:
        folder = os.path.abspath(work)
    else:
        cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        name = destination.split("://", 1)[1].strip("/").replace("/", "_")
        folder = os.path.join(cache, "imagefolder-lmdb", "publish", f"{destination.split(':', 1)[0]}_{name}")
    sources = [source] if isinstance(source, str | os.PathLike) else list(source or [])
    for given in sources:
        root = os.path.realpath(os.fspath(given))
        if os.path.isdir(root) and os.path.commonpath([root, os.path.realpath(folder)]) == root:
            raise PublishError(f"the work folder {folder} is inside SOURCE {given}: give --work FOLDER outside it")
    return folder


def after_forwarded_signal(signum: int, returncode: int, errors: str, url: str) -> str:
    """What the upload child said when a forwarded signal ended it otherwise than by its own handling:
    its error, or where the signal came before that handling was in place (the child still importing:
    killed by it, or Python's traceback), a line of ours."""
    if returncode > 0 and errors and "Traceback (most recent call last)" not in errors:
        return errors
    return f"{SIGNAL_WORD[signum]}: the upload to {url} was stopped as it started (no object)\n"


def check_destination(destination: str, planned: dict[str, dict[str, Any]] | None = None) -> None:
    """PublishError naming why ``destination`` cannot take an upload (no such bucket, credentials
    refused, no answer), asked before the conversion starts: in a process of its own, as the upload.
    ``planned`` (split -> the planned file's meta, once the conversion is planned): also each object
    there that it may not replace without --overwrite (publish/preflight.py ``check_replaceable``)."""
    import subprocess
    import tempfile

    command = [sys.executable, "-m", "imagefolder_lmdb.publish.preflight", destination]
    with tempfile.NamedTemporaryFile("w", suffix=".json") as listed:
        if planned is not None:
            json.dump(planned, listed)
            listed.flush()
            command += ["--replacing", listed.name]
        checked = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
    if checked.returncode in (130, -signal.SIGINT):  # the terminal's Ctrl-C reached it (perhaps still importing)
        raise KeyboardInterrupt
    if checked.returncode != 0:
        raise PublishError(checked.stderr.strip() or f"{destination}: the check before converting failed")


def publish_splits(datasets: dict[str, str], destination: str, overwrite: bool) -> None:
    """Upload each split's file to ``destination/<split>.lmdb``, one process each (obstore never runs
    in this process, which may fork later); PublishError or UploadInterrupted on failure."""
    import subprocess

    for split, path in datasets.items():
        url = f"{destination.rstrip('/')}/{split}.lmdb"
        work = os.path.join(os.path.dirname(os.path.abspath(path)), "work")  # the run's: local_folder's OUTDIR/work
        command = [sys.executable, "-m", "imagefolder_lmdb.publish.upload", path, url, "--work", work]
        # a session of its own: a Ctrl-C reaches this process only, which passes it on once (a second
        # signal could land in the child's abort)
        options = ["--overwrite"] if overwrite else []
        child = subprocess.Popen([*command, *options], stderr=subprocess.PIPE, text=True, start_new_session=True)

        forwarded: list[int] = []

        def forward(
            signum: int, frame: Any, child: subprocess.Popen[str] = child, forwarded: list[int] = forwarded
        ) -> None:
            forwarded.append(signum)
            child.send_signal(signum)  # the child aborts its upload, then exits 143

        previous = signal.signal(signal.SIGTERM, forward)
        try:
            try:
                _, errors = child.communicate()
            except KeyboardInterrupt:
                forwarded.append(signal.SIGINT)
                child.send_signal(signal.SIGINT)  # the child aborts its upload, then exits 130
                _, errors = child.communicate()
        finally:
            signal.signal(signal.SIGTERM, previous)
        if child.returncode in (130, 143):
            sys.stderr.write(errors or "")
            raise UploadInterrupted(child.returncode)
        if forwarded and child.returncode != 0:  # failing after the signal: an interruption all the same
            sys.stderr.write(after_forwarded_signal(forwarded[0], child.returncode, errors or "", url))
            raise UploadInterrupted(128 + forwarded[0])
        if child.returncode != 0:
            raise PublishError((errors or "").strip() or f"the upload of {path} to {url} failed")
