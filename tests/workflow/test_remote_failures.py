"""Object-storage failures as one message naming the URL and the fix, from the command line and from
``LMDBDataset(url)``, and no process ending in a signal (issue 44). Against the session's SeaweedFS
(tests/support/seaweed.py); the cloud's metadata address is pointed at a closed loopback port so no
test waits on it."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from imagefolder_lmdb.publish.s3_multipart import Credentials, S3Multipart
from imagefolder_lmdb.reader import LMDBReader
from imagefolder_lmdb.remote.problems import NoSuchObjectError, ObjectChangedError
from imagefolder_lmdb.remote.reading import RemoteWarning
from support.http_range import RangeServer
from support.seaweed import Seaweed
from support.workflow import Converted

CLI = str(Path(sys.executable).with_name("imagefolder-lmdb"))


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "GOOGLE_", "AZURE_"))}
    return subprocess.run(
        [CLI, *args], capture_output=True, text=True, timeout=120, check=False, env={**base, **env}, cwd="/"
    )


@pytest.fixture
def nowhere() -> dict[str, str]:
    """S3 variables naming an endpoint where nothing listens, the metadata service at a closed port too."""
    port = _closed_port()
    return {
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        "AWS_ALLOW_HTTP": "true",
        "AWS_ACCESS_KEY_ID": "k",
        "AWS_SECRET_ACCESS_KEY": "s",
        "AWS_REGION": "us-east-1",
        "AWS_METADATA_ENDPOINT": f"http://127.0.0.1:{port}",
    }


def test_an_unreachable_endpoint_ends_with_status_1_every_time(nowhere: dict[str, str]) -> None:
    """The case that aborted in 1 run of 3 (obstore's runtime torn down at exit): 20 runs, every one 1."""
    with ThreadPoolExecutor(4) as pool:
        runs = list(pool.map(lambda _: _cli(nowhere, "verify", "s3://bucket/train.lmdb"), range(20)))
    assert [run.returncode for run in runs] == [1] * 20, [run.stderr[-300:] for run in runs if run.returncode != 1]
    endpoint = nowhere["AWS_ENDPOINT_URL"]
    assert f"nothing answers at {endpoint} (AWS_ENDPOINT_URL): connection refused" in runs[0].stdout


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (
            {"AWS_ALLOW_HTTP": None},
            r"the endpoint http://127.0.0.1:\d+ \(AWS_ENDPOINT_URL\) is plain http, .*AWS_ALLOW_HTTP=true",
        ),
        (
            {"AWS_ENDPOINT_URL": None, "AWS_ACCESS_KEY_ID": None, "AWS_SECRET_ACCESS_KEY": None},
            r"no credentials or endpoint configured .*set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
        ),
    ],
)
def test_a_client_set_up_wrongly_is_named_with_its_fix(
    nowhere: dict[str, str], change: dict[str, str | None], said: str
) -> None:
    env = {k: v for k, v in {**nowhere, **change}.items() if v is not None}
    result = _cli(env, "verify", "s3://bucket/train.lmdb")
    assert result.returncode == 1, result.stdout + result.stderr
    assert re.search(r"^FAIL s3://bucket/train.lmdb: " + said, result.stdout), result.stdout


@pytest.mark.parametrize("url", ["s4://bucket/train.lmdb", "gcs://bucket/train.lmdb", "s3:/bucket/train.lmdb"])
def test_a_mistyped_scheme_is_named_not_taken_for_a_path(url: str) -> None:
    for command in ("verify", "info"):
        result = _cli({}, command, url)
        assert result.returncode == 1, result.stdout + result.stderr
        assert url in result.stdout + result.stderr and "/s4:/" not in result.stdout + result.stderr
        assert re.search(r"unknown scheme|one slash", result.stdout + result.stderr)


def test_a_missing_bucket_and_a_mistyped_key_say_which(converted: Converted, s3_env: Seaweed) -> None:
    prefix = uuid.uuid4().hex
    url = s3_env.put("datasets", f"{prefix}/train.lmdb", converted.lmdb.read_bytes())
    with pytest.raises(NoSuchObjectError, match=re.escape(f"no such object; did you mean {url}?")):
        LMDBReader(f"s3://datasets/{prefix}/trian.lmdb")
    with pytest.raises(NoSuchObjectError, match=r"no such bucket 'no-such-bucket': create it first \(`aws s3 mb"):
        LMDBReader(f"s3://no-such-bucket/{prefix}/train.lmdb")
    result = _cli(s3_env.env(), "verify", f"s3://datasets/{prefix}/trian.lmdb")
    assert result.returncode == 1 and "no such object; did you mean" in result.stdout, result.stdout


def test_keys_that_may_not_read_are_access_denied_and_uploads_are_signed(
    converted: Converted, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SeaweedFS checks keys only with an identity config: a server of its own with one."""
    identities = tmp_path / "s3.json"
    admin = {"accessKey": "admin-key", "secretKey": "admin-secret"}
    reader = {
        "name": "reader",
        "credentials": [{"accessKey": "reader-key", "secretKey": "r"}],
        "actions": ["Read", "List"],
    }
    admin_identity = {"name": "admin", "credentials": [admin], "actions": ["Admin"]}
    identities.write_text(json.dumps({"identities": [admin_identity, reader]}))
    server = Seaweed(tmp_path / "weed", os.environ.get("PYTEST_XDIST_WORKER", "master") + "9", identities)
    (tmp_path / "weed").mkdir()
    server.start()
    try:
        env = {**server.env(), "AWS_ACCESS_KEY_ID": "admin-key", "AWS_SECRET_ACCESS_KEY": "admin-secret"}
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        credentials = Credentials.from_environment()
        assert credentials is not None
        S3Multipart("signed", "x", credentials).request("PUT", f"{server.endpoint}/signed")  # a signed bucket creation
        url = "s3://signed/d/train.lmdb"
        upload = [sys.executable, "-m", "imagefolder_lmdb.publish.upload", str(converted.lmdb), url]
        done = subprocess.run(upload, capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr  # SigV4 signed parts, accepted by a server that checks them
        assert S3Multipart("signed", "d/train.lmdb", credentials).pending() == []  # a signed listing by prefix
        result = _cli({**env, "AWS_SECRET_ACCESS_KEY": "wrong"}, "info", url)
        assert result.returncode == 1
        assert f"{url}: access denied (SignatureDoesNotMatch)" in result.stderr and "AWS_ACCESS_KEY_ID" in result.stderr
        # refused keys, and keys that may only read, are named before anything is converted (issue 49)
        work = tmp_path / "w"
        convert = ["convert", str(converted.source), "s3://signed/d", "--split", "train", "--work", str(work)]
        refused = _cli({**env, "AWS_SECRET_ACCESS_KEY": "wrong"}, *convert)
        assert refused.returncode == 1 and "s3://signed/d: access denied (SignatureDoesNotMatch)" in refused.stderr
        read_only = _cli({**env, "AWS_ACCESS_KEY_ID": "reader-key", "AWS_SECRET_ACCESS_KEY": "r"}, *convert)
        assert read_only.returncode == 1, read_only.stdout + read_only.stderr
        assert "s3://signed/d: these credentials may not write there (AccessDenied" in read_only.stderr
        assert not work.exists()
    finally:
        server.stop()


@pytest.fixture
def lax_server(range_server: RangeServer) -> Iterator[RangeServer]:
    yield range_server
    range_server.ignore_if_match, range_server.send_etag = False, True


def test_a_replaced_object_on_a_server_ignoring_if_match_is_changed_not_damaged(
    converted: Converted, lax_server: RangeServer
) -> None:
    data = converted.lmdb.read_bytes()
    name = f"{uuid.uuid4().hex}.lmdb"
    url = lax_server.put(name, data)
    ds = LMDBReader(url, decode="bytes")
    lax_server.ignore_if_match = True
    lax_server.put(name, data[:-1] + bytes([data[-1] ^ 1]))  # another version of the object
    with pytest.raises(
        ObjectChangedError, match=re.escape(url) + r" was replaced .*the object changed, it is not damaged"
    ):
        ds.__getitems__([3, 4])


def test_a_server_without_etags_is_read_with_one_warning(converted: Converted, lax_server: RangeServer) -> None:
    lax_server.send_etag = False
    url = lax_server.put(f"{uuid.uuid4().hex}.lmdb", converted.lmdb.read_bytes())
    with pytest.warns(RemoteWarning, match=re.escape(url) + ": the server sends no ETag") as warned:
        first, second = LMDBReader(url, decode="bytes"), LMDBReader(url, decode="bytes")
    assert len(warned) == 1
    assert first.get_bytes(5) == second.get_bytes(5) == LMDBReader(converted.lmdb, decode="bytes").get_bytes(5)
