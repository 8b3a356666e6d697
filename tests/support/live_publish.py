"""What a ``--no-merge`` publish left under its prefix (issue 60, point 4), read from the session's SeaweedFS
(tests/support/seaweed.py: it takes unsigned requests): the objects and their ETags, the pending uploads,
and the check that the published split is the local one, sample for sample, with nothing left unnamed."""

from __future__ import annotations

import html
import os
import re
import urllib.request
from pathlib import Path

from imagefolder_lmdb.publish.s3_multipart import Credentials, S3Multipart
from imagefolder_lmdb.reader.revision_format import data_folder
from support.datasets import assert_same_samples


def bucket_and_key(url: str) -> tuple[str, str]:
    bucket, key = url.removeprefix("s3://").split("/", 1)
    return bucket, key


def objects(prefix: str) -> dict[str, str]:
    """Each object under ``prefix`` (``s3://bucket/key-prefix``) by key, its ETag as value."""
    bucket, key = bucket_and_key(prefix)
    endpoint = os.environ["AWS_ENDPOINT_URL"]
    with urllib.request.urlopen(f"{endpoint}/{bucket}?list-type=2&prefix={key}&max-keys=1000", timeout=30) as answer:
        body = answer.read().decode()
    found = {}
    for entry in re.findall(r"<Contents>(.*?)</Contents>", body, re.DOTALL):
        name = re.search(r"<Key>([^<]*)</Key>", entry)
        etag = re.search(r"<ETag>([^<]*)</ETag>", entry)
        assert name is not None
        found[html.unescape(name.group(1))] = html.unescape(etag.group(1)) if etag else ""
    return found


def data_objects(split_url: str) -> dict[str, str]:
    """The objects in the data folder beside the pointer at ``split_url`` (by key, their ETags)."""
    return objects(f"{split_url}.d/")


def pending_under(prefix: str) -> list[str]:
    """The keys under ``prefix`` with a multipart upload started and not completed."""
    credentials = Credentials.from_environment()
    assert credentials is not None
    bucket, key = bucket_and_key(prefix)
    return [found.key for found in S3Multipart(bucket, key, credentials).pending()]


def assert_live_published(prefix: str, outdir: Path, before: dict[str, str] | None = None) -> None:
    """The split under ``prefix`` is OUTDIR's, sample for sample; its pointer is the local pointer; every data
    object is one the pointer names; no pending upload, no record of a live upload left; the data objects
    there ``before`` (key: ETag) kept as they were (the rerun sent only what was missing)."""
    url, local = f"{prefix}/train.lmdb", outdir / "train.lmdb"
    assert_same_samples(url, local)  # type: ignore[arg-type]  # the reader takes a URL as a path
    endpoint = os.environ["AWS_ENDPOINT_URL"]
    with urllib.request.urlopen(f"{endpoint}/{url.removeprefix('s3://')}", timeout=30) as answer:
        assert answer.read() == local.read_bytes(), "the published pointer is not the local one"
    named = {f"{bucket_and_key(url)[1]}.d/{name}" for name in os.listdir(data_folder(str(local)))}
    published = data_objects(url)
    assert set(published) == named, "a data object no revision names was left, or one is missing"
    assert pending_under(prefix) == [], "a pending upload was left"
    assert not list((outdir / "work").glob("uploads/live-*.json")), "the record of a live upload stayed"
    for key, etag in (before or {}).items():
        assert published.get(key, etag) == etag, f"{key} was sent again"
