"""Reading a converted dataset in place from object storage and HTTP servers (issue 33):
``LMDBDataset("s3://bucket/train.lmdb")`` against SeaweedFS's S3 (tests/support/seaweed.py) and an
in-repo HTTP range server (tests/support/http_range.py), with faults injected by a proxy
(tests/support/fault_proxy.py). Every record must equal the local file's, whatever path it takes;
a replaced object or a faulty server must give the right bytes or a clear error, never a wrong image."""

from __future__ import annotations

import json
import multiprocessing.forkserver
import random
import re
import uuid
from pathlib import Path

import lmdb
import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, DistributedSampler

from imagefolder_lmdb.reader import DamagedRecordError, LMDBDataset, LMDBReader, encode_document
from imagefolder_lmdb.remote import client
from imagefolder_lmdb.remote.engine import ObjectChangedError, RemoteReadError
from imagefolder_lmdb.remote.records import ChecksumError
from imagefolder_lmdb.remote.urls import RemoteSettings
from support.commands import run_script
from support.fault_proxy import FaultProxy
from support.http_range import RangeServer
from support.seaweed import Seaweed
from support.workflow import Converted


@pytest.fixture(scope="module")
def local_records(converted: Converted) -> list[bytes]:
    """Every record's bytes as the local reader reads them."""
    ds = LMDBReader(converted.lmdb, decode="bytes")
    return [ds.get_bytes(i) for i in range(len(ds))]


@pytest.fixture
def s3_url(converted: Converted, s3_env: Seaweed) -> str:
    return s3_env.put("datasets", f"{uuid.uuid4().hex}/train.lmdb", converted.lmdb.read_bytes())


@pytest.fixture
def http_url(converted: Converted, range_server: RangeServer) -> str:
    return range_server.put(f"{uuid.uuid4().hex}.lmdb", converted.lmdb.read_bytes())


def _url(request: pytest.FixtureRequest, source: str) -> str:
    return str(request.getfixturevalue(f"{source}_url"))


@pytest.mark.parametrize("source", ["s3", "http"])
def test_every_record_equals_the_local_files(
    request: pytest.FixtureRequest, source: str, converted: Converted, local_records: list[bytes]
) -> None:
    url = _url(request, source)
    ds, local = LMDBReader(url, decode="bytes"), LMDBReader(converted.lmdb, decode="bytes")
    assert (len(ds), ds.classes, ds.targets, ds.samples) == (len(local), local.classes, local.targets, local.samples)
    assert ds.reads_by_offset and ds.path == url
    assert ds._identity is not None and ds._identity.content == local._identity.content  # the same file's content
    assert ds._identity.storage.url == url and ds._identity.storage.size == converted.lmdb.stat().st_size
    assert [ds[i][0] for i in range(len(ds))] == local_records
    order = [*random.Random(1).sample(range(len(ds)), len(ds)), 0, 0]
    assert ds.__getitems__(order) == [(local_records[i], local.targets[i]) for i in order]
    assert all(ds.check_crc(i) for i in (0, len(ds) - 1))
    image, target = LMDBDataset(url)[5]
    expected, _ = LMDBDataset(converted.lmdb)[5]
    assert target == local.targets[5] and np.array_equal(np.asarray(image), np.asarray(expected))


def _bytes_of_batches(loader: DataLoader) -> dict[int, bytes]:
    seen: dict[int, bytes] = {}
    for images, indices in loader:
        seen.update(zip(indices.tolist(), images, strict=True))
    return seen


class _Indexed(torch.utils.data.Dataset):
    """The remote dataset's bytes with each sample's index, so a batch says what it holds."""

    def __init__(self, ds: LMDBReader) -> None:
        self.ds = ds

    def __len__(self) -> int:
        return len(self.ds)

    def __getitems__(self, indices: list[int]) -> list[tuple[bytes, int]]:
        return [(image, index) for (image, _), index in zip(self.ds.__getitems__(indices), indices, strict=True)]


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
@pytest.mark.parametrize("source", ["s3", "http"])
def test_dataloader_workers_read_every_record(
    request: pytest.FixtureRequest, source: str, method: str, local_records: list[bytes]
) -> None:
    if method == "forkserver":
        # A forkserver's children get the environment the server started with, not this process's
        # now: one started by an earlier test lacks the credentials the S3 fixture set since.
        multiprocessing.forkserver._forkserver._stop()  # type: ignore[attr-defined]
    ds = LMDBDataset(_url(request, source), decode="bytes")
    assert ds[0][0] == local_records[0]  # the parent reads first: its workers must not inherit its client
    loader = DataLoader(_Indexed(ds), batch_size=7, shuffle=True, num_workers=2, multiprocessing_context=method)
    assert _bytes_of_batches(loader) == dict(enumerate(local_records))


def test_distributed_sampler_shares_every_record_once(s3_url: str, local_records: list[bytes]) -> None:
    ds = LMDBDataset(s3_url, decode="bytes")
    shares = []
    for rank in range(2):
        sampler = DistributedSampler(ds, num_replicas=2, rank=rank, shuffle=True, seed=3)
        shares.append(_bytes_of_batches(DataLoader(_Indexed(ds), batch_size=5, sampler=sampler)))
    assert not set(shares[0]) & set(shares[1]) or len(ds) % 2  # padding repeats at most one record
    assert {**shares[0], **shares[1]} == dict(enumerate(local_records))


@pytest.mark.parametrize("source", ["s3", "http"])
def test_a_replaced_object_is_an_error_naming_it(
    request: pytest.FixtureRequest, source: str, converted: Converted, seaweed: Seaweed, range_server: RangeServer
) -> None:
    url = _url(request, source)
    ds = LMDBReader(url, decode="bytes")
    changed = converted.lmdb.read_bytes() + b"\0"
    if source == "s3":
        bucket, _, key = url.removeprefix("s3://").partition("/")
        seaweed.put(bucket, key, changed)
    else:
        range_server.put(url.rsplit("/", 1)[1], changed)
    with pytest.raises(ObjectChangedError, match=re.escape(url) + ".*replaced"):
        ds.__getitems__([0, 1])


@pytest.fixture
def via_proxy(http_url: str, fault_proxy: FaultProxy) -> str:
    """``http_url``'s object, through the fault proxy."""
    return f"{fault_proxy.url}/{http_url.rsplit('/', 1)[1]}"


@pytest.mark.parametrize("fault", ["whole", "truncate", "503", "drop"])
def test_a_fault_once_still_reads_the_right_bytes(
    via_proxy: str, fault_proxy: FaultProxy, fault: str, local_records: list[bytes]
) -> None:
    ds = LMDBReader(via_proxy, decode="bytes")
    fault_proxy.fail_next(fault)
    assert ds[3][0] == local_records[3]
    fault_proxy.fail_next(fault, fault)
    assert [image for image, _ in ds.__getitems__([7, 2, 9])] == [local_records[i] for i in (7, 2, 9)]


@pytest.mark.parametrize("fault", ["whole", "truncate", "drop"])
def test_a_fault_that_persists_is_a_clear_error(via_proxy: str, fault_proxy: FaultProxy, fault: str) -> None:
    ds = LMDBReader(via_proxy, decode="bytes")
    fault_proxy.fail_next(*[fault] * 100)
    with pytest.raises(
        RemoteReadError, match=re.escape(via_proxy) + r": bytes [\d,]+-[\d,]+ could not be read"
    ) as error:
        ds[1]
    if fault == "whole":
        assert "answers ranged GETs with the whole object (HTTP 200, not 206)" in str(error.value)


def test_a_server_slower_than_the_timeout_is_an_error_not_a_hang(http_url: str, range_server: RangeServer) -> None:
    proxy = FaultProxy(range_server.port, delay=3.0).start()
    try:
        url = f"{proxy.url}/{http_url.rsplit('/', 1)[1]}"
        with pytest.raises(RemoteReadError, match="could not be read in 2 tries"):
            client.fetch(url, [(0, 100)], None, RemoteSettings(timeout_s=0.5, retries=1))
    finally:
        proxy.stop()


def test_a_file_without_record_locations_names_add_locations(
    converted: Converted, tmp_path: Path, range_server: RangeServer
) -> None:
    copy = tmp_path / "old.lmdb"
    copy.write_bytes(converted.lmdb.read_bytes())
    env = lmdb.open(str(copy), subdir=False, lock=False)
    with env.begin(write=True) as txn:
        document = json.loads(txn.get(b"meta/json"))
        del document["locations"]
        txn.delete(b"meta/locations")
        txn.put(b"meta/json", encode_document(document))
    env.close()
    url = range_server.put(f"{uuid.uuid4().hex}.lmdb", copy.read_bytes())
    with pytest.raises(Exception, match=re.escape(url) + r" has no record locations.*add-locations"):
        LMDBReader(url)


def test_the_cache_serves_a_second_epoch_and_refuses_damage(
    via_proxy: str, fault_proxy: FaultProxy, tmp_path: Path, local_records: list[bytes]
) -> None:
    every = list(range(len(local_records)))
    first = LMDBReader(via_proxy, decode="bytes", cache_dir=tmp_path / "cache")
    assert [image for image, _ in first.__getitems__(every)] == local_records
    second = LMDBReader(via_proxy, decode="bytes", cache_dir=tmp_path / "cache")
    fault_proxy.reset_counts()
    assert [image for image, _ in second.__getitems__(every)] == local_records
    assert fault_proxy.requests == 0  # every record came from the cache
    record = next(p for p in (tmp_path / "cache").rglob("4") if p.is_file())
    damaged = bytearray(record.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    record.write_bytes(bytes(damaged))
    assert second[4][0] == local_records[4] and fault_proxy.requests == 1  # damaged: fetched again
    tiny = LMDBReader(via_proxy, decode="bytes", cache_dir=tmp_path / "tiny", cache_bytes=len(local_records[0]))
    tiny.__getitems__(every)
    assert sum(p.stat().st_size for p in (tmp_path / "tiny").rglob("*") if p.name.isdigit()) <= len(local_records[0])


def _flipped_copy(converted: Converted, index: int) -> bytes:
    """The converted file with one byte flipped in the middle of record ``index``."""
    ds = LMDBReader(converted.lmdb, decode="bytes")
    data = bytearray(converted.lmdb.read_bytes())
    offset = int(ds._offsets[index]) + len(ds.get_bytes(index)) // 2
    data[offset] ^= 0x55
    return bytes(data)


@pytest.mark.parametrize("full", [False, True])
def test_verify_checks_an_object_as_it_checks_a_file(
    converted: Converted, s3_env: Seaweed, s3_url: str, full: bool, tmp_path: Path
) -> None:
    options = ["--full"] if full else []
    result = run_script("verify.py", s3_url, *options, "--report", tmp_path / "ok.json")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith(f"OK {s3_url}: 40 images")
    report = json.loads((tmp_path / "ok.json").read_text())
    assert report["path"] == s3_url and report["checked"]["mode"] == ("all" if full else "sample")
    assert report["file_bytes"] == converted.lmdb.stat().st_size
    damaged = s3_env.put("datasets", f"{uuid.uuid4().hex}/train.lmdb", _flipped_copy(converted, 5))
    result = run_script("verify.py", damaged, *options)
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout.startswith(f"FAIL {damaged}")
    assert "record 5 (" in result.stdout and "checksum mismatch" in result.stdout


def test_a_damaged_record_is_an_error_not_an_image(converted: Converted, s3_env: Seaweed) -> None:
    url = s3_env.put("datasets", f"{uuid.uuid4().hex}/train.lmdb", _flipped_copy(converted, 5))
    ds = LMDBReader(url, decode="bytes")
    assert ds[4][0] == LMDBReader(converted.lmdb, decode="bytes")[4][0]
    with pytest.raises(ChecksumError, match=re.escape(url) + r": record 5 .*verify --full"):
        ds.__getitems__([4, 5])


def test_one_damage_is_one_error_read_locally_and_from_a_url(
    converted: Converted, s3_env: Seaweed, tmp_path: Path
) -> None:
    """The same damaged record, read from a file and from a URL: DamagedRecordError both ways (issue 51),
    naming the source, the record and `verify --full`; from the URL an OSError too, as before."""
    damaged = _flipped_copy(converted, 5)
    local = tmp_path / "train.lmdb"
    local.write_bytes(damaged)
    url = s3_env.put("datasets", f"{uuid.uuid4().hex}/train.lmdb", damaged)
    raised = {}
    for source in (str(local), url):
        with pytest.raises(DamagedRecordError) as caught:
            LMDBReader(source, decode="bytes").get_bytes(5)
        assert re.search(re.escape(source) + r": record 5 .*verify .*--full", str(caught.value)), caught.value
        raised[source] = caught.value
    assert not isinstance(raised[str(local)], OSError)
    assert isinstance(raised[url], ChecksumError) and isinstance(raised[url], OSError)
