"""The remote reader's pure parts (issue 33): which paths are URLs, the store and key of a URL, how a
batch's ranges are merged into requests, the record cache's limit. The reads themselves are tested
against real servers in tests/workflow/test_remote.py."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from imagefolder_lmdb.publish.upload import part_size
from imagefolder_lmdb.reader import LMDBReader
from imagefolder_lmdb.remote import is_url
from imagefolder_lmdb.remote.cache import RecordCache
from imagefolder_lmdb.remote.records import merged_spans
from imagefolder_lmdb.remote.urls import RemoteSettings, RemoteURLError, make_store, store_and_key


def test_urls_are_told_from_paths() -> None:
    for url in ("s3://b/k.lmdb", "gs://b/k.lmdb", "az://c/k.lmdb", "https://h/k.lmdb", "HTTP://h/k"):
        assert is_url(url), url
    for path in ("results/train.lmdb", "/data/s3:/x.lmdb", "C:/data/x.lmdb", "x.lmdb"):
        assert not is_url(path), path
    for mistyped in ("s4://b/k.lmdb", "gcs://b/k.lmdb", "s3:/b/k.lmdb", "file:///x.lmdb"):
        assert is_url(mistyped), mistyped  # read as a URL, refused by name (urls.check_url)


@pytest.mark.parametrize(
    ("url", "store", "key"),
    [
        ("s3://bucket/imagenet/train.lmdb", "s3://bucket", "imagenet/train.lmdb"),
        ("gs://bucket/train.lmdb", "gs://bucket", "train.lmdb"),
        ("az://container/dir/train.lmdb", "az://container", "dir/train.lmdb"),
        ("abfss://c@acct.dfs.core.windows.net/d/train.lmdb", "abfss://c@acct.dfs.core.windows.net", "d/train.lmdb"),
        ("http://127.0.0.1:8000/d/train.lmdb", "http://127.0.0.1:8000", "d/train.lmdb"),
    ],
)
def test_a_url_names_its_store_and_key(url: str, store: str, key: str) -> None:
    assert store_and_key(url) == (store, key)


def test_a_url_without_a_key_is_refused() -> None:
    with pytest.raises(ValueError, match="not the URL of an object"):
        store_and_key("s3://bucket/")


def test_neighbouring_ranges_merge_and_map_back() -> None:
    settings = RemoteSettings(merge_gap=100, max_request=1000)
    spans = [(5000, 5100), (0, 300), (350, 600), (600, 900), (950, 1200), (0, 300)]
    requests, pieces = merged_spans(spans, settings)
    assert requests == [(0, 900), (950, 1200), (5000, 5100)]  # 900..1200 would make 1200 > max_request
    data = bytes(range(256)) * 30
    fetched = [data[start:end] for start, end in requests]
    assert [fetched[r][a:b] for r, a, b in pieces] == [data[start:end] for start, end in spans]


def test_far_ranges_stay_apart() -> None:
    requests, _ = merged_spans([(0, 10), (10_000, 10_010)], RemoteSettings(merge_gap=8192))
    assert requests == [(0, 10), (10_000, 10_010)]


def test_the_cache_keeps_records_up_to_its_limit(tmp_path: Path) -> None:
    cache = RecordCache(str(tmp_path), "s3://b/k", '"etag-1"', limit=250)
    cache.put(0, b"a" * 100)
    cache.put(1, b"b" * 100)
    cache.put(2, b"c" * 100)  # over the limit: not kept
    assert (cache.get(0), cache.get(1), cache.get(2)) == (b"a" * 100, b"b" * 100, None)
    other_version = RecordCache(str(tmp_path), "s3://b/k", '"etag-2"', limit=250)
    assert other_version.get(0) is None  # a replaced object never meets the old one's records


def test_the_cache_counts_a_batch_once_and_keeps_what_fits(tmp_path: Path) -> None:
    cache = RecordCache(str(tmp_path), "s3://b/k", '"etag-1"', limit=250)
    kept = cache.put_many({0: b"a" * 100, 1: b"b" * 200, 2: b"c" * 100})
    assert kept == [0, 2]  # record 1 would pass the limit; the smaller one after it still fits
    assert (cache.get(0), cache.get(1), cache.get(2)) == (b"a" * 100, None, b"c" * 100)
    assert (tmp_path / "used-bytes").read_bytes() == b"%020d" % 200


def test_the_cache_count_is_rewritten_in_place_never_truncated(tmp_path: Path) -> None:
    """The count is overwritten at offset 0 with a fixed width (a truncate made ext4 flush the file:
    ~0.9 ms a record); a short count of an earlier version is read and fully covered."""
    (tmp_path / "used-bytes").write_bytes(b"150")
    cache = RecordCache(str(tmp_path), "s3://b/k", '"etag-1"', limit=250)
    cache.put(0, b"a" * 100)
    assert (tmp_path / "used-bytes").read_bytes() == b"%020d" % 250
    cache.put(1, b"b")  # full
    assert (cache.get(0), cache.get(1)) == (b"a" * 100, None)
    (tmp_path / "used-bytes").write_bytes(b"not a count")
    cache.put(2, b"c")  # an unreadable count is taken as full: nothing more is added
    assert cache.get(2) is None


@pytest.mark.parametrize(
    ("path", "options", "words"),
    [
        ("s3://bucket/train.lmdb", {"lock": True}, "lock=True is for a file read in place"),
        ("local/train.lmdb", {"cache_dir": "cache"}, "cache_dir is for datasets read from a URL"),
    ],
)
def test_options_of_the_other_kind_of_path_are_refused_before_opening(
    path: str, options: dict[str, Any], words: str
) -> None:
    with pytest.raises(ValueError, match=words):
        LMDBReader(path, decode="bytes", **options)


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("s4://bucket/train.lmdb", r"unknown scheme s4://; the schemes read are s3://bucket/key, gs://"),
        ("gcs://bucket/train.lmdb", r"unknown scheme gcs://; did you mean gs://\?"),
        ("s3:/bucket/train.lmdb", r"one slash after s3: \(write s3://bucket/train.lmdb\)"),
        ("file:///data/train.lmdb", r"a local file is given by its path \(/data/train.lmdb\)"),
    ],
)
def test_a_mistyped_scheme_is_named_with_the_known_ones(url: str, said: str) -> None:
    with pytest.raises(RemoteURLError, match=f"^{re.escape(url)}: {said}"):
        LMDBReader(url)


def test_an_http_endpoint_without_allow_http_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.delenv("AWS_ALLOW_HTTP", raising=False)
    said = r"http://127.0.0.1:9 \(AWS_ENDPOINT_URL\) is plain http.*AWS_ALLOW_HTTP=true"
    with pytest.raises(RemoteURLError, match=said):
        make_store("s3://bucket", RemoteSettings())


def test_a_plain_http_gcs_endpoint_names_its_variable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """An emulator is named in a service-account file (obstore's way); plain http needs GOOGLE_ALLOW_HTTP."""
    account = tmp_path / "account.json"
    account.write_text('{"gcs_base_url": "http://127.0.0.1:9", "disable_oauth": true}')
    for name in ("AWS_ALLOW_HTTP", "GOOGLE_ALLOW_HTTP", "GOOGLE_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GOOGLE_SERVICE_ACCOUNT", str(account))
    with pytest.raises(RemoteURLError, match=r"GCS endpoint http://127.0.0.1:9 .* GOOGLE_ALLOW_HTTP=true"):
        make_store("gs://bucket", RemoteSettings())
    monkeypatch.setenv("GOOGLE_BASE_URL", "http://127.0.0.1:8")
    with pytest.raises(RemoteURLError, match=r"GCS endpoint http://127.0.0.1:8 "):
        make_store("gs://bucket", RemoteSettings())


def test_parts_fit_s3s_10000_whatever_the_size() -> None:
    """ImageNet train's ~140 GB: obstore's default 5 MiB parts would stop at 48.8 GiB."""
    for size in (10**6, 140 * 10**9, 160 * 10**9, 5 * 10**12):
        part = part_size(size, smallest=16 << 20)
        assert -(-size // part) <= 10_000 and part % (1 << 20) == 0 and 5 << 20 <= part <= 5 << 30, size
    assert part_size(140 * 10**9, smallest=16 << 20) == 16 << 20  # ~8,350 parts
    assert part_size(10**6, smallest=1) == 5 << 20  # never under S3's smallest part


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("s3://b/k.lmdb", "no such bucket 'b': create it first (`aws s3 mb s3://b`, with --endpoint-url"),
        ("gs://b/k.lmdb", "no such bucket 'b': create it first (`gcloud storage buckets create gs://b`)"),
        ("az://c/k.lmdb", "no such container 'c': create it first (`az storage container create --name c`"),
        ("abfss://c@acct.dfs.core.windows.net/k.lmdb", "no such container 'c': create it first (`az storage"),
    ],
)
def test_a_missing_bucket_is_created_with_its_clouds_own_tool(url: str, said: str) -> None:
    """GCS and S3 answer a missing bucket with NoSuchBucket, Azure with ContainerNotFound (the emulators
    test the latter; fake-gcs-server answers 500 where GCS says NoSuchBucket)."""
    from imagefolder_lmdb.remote.problems import no_bucket_error

    assert str(no_bucket_error(url)).startswith(f"{url}: {said}")


def test_a_refused_token_request_is_no_credentials_not_access_denied() -> None:
    """GCS without credentials asks the metadata service for a token; a 403 from it (a sandbox's
    firewall) is not the bucket refusing the keys: there are none. obstore's words, as it says them."""
    from imagefolder_lmdb.remote.problems import RemoteAccessError, explain

    text = (
        "Generic GCS error: Error performing token request: Error performing GET http://169.254.169.254/"
        "computeMetadata/v1/instance/service-accounts/default/token in 1.4ms - Server returned non-2xx "
        "status code: 403 Forbidden: resolve_deny"
    )
    found = explain(RuntimeError(text), "gs://b/k.lmdb", None, "k.lmdb")
    assert isinstance(found, RemoteAccessError)
    assert str(found).startswith("gs://b/k.lmdb: no credentials or endpoint configured (none in the environment")
    assert "set GOOGLE_APPLICATION_CREDENTIALS" in str(found)
