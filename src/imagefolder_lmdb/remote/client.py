# SPDX-License-Identifier: MIT
"""Where a process's remote reads run.

obstore runs its requests on one tokio runtime per process, whose threads a fork does not copy: a
forked child of a process that has used obstore hangs on its first request, even with a store of
its own (measured with obstore 0.12.1; its maintainers say it is not fork-safe). DataLoader forks
its workers from the process that made the dataset, so that process must never start obstore.
Hence:

- DataLoader workers (and any process that calls ``allow_in_process()`` or sets
  IMAGEFOLDER_LMDB_REMOTE_IN_PROCESS=1, e.g. the ``verify`` command) read in the process, on
  obstore made lazily there (engine.fetch_in_process): the training path;
- every other process (the main process that opens the dataset, reads ``ds[i]``, then forks workers)
  reads through a helper process of its own (``python -m imagefolder_lmdb.remote.helper``), started
  on its first read and ended with it; the bytes come back over a pipe.

A forked child never uses its parent's helper or stores (both are keyed by process id).
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

from . import problems
from .engine import Fetched, download_in_process, fetch_in_process, store_environment
from .problems import RemoteReadError
from .urls import RemoteSettings, RemoteURLError

IN_PROCESS_ENV = "IMAGEFOLDER_LMDB_REMOTE_IN_PROCESS"
_in_process_allowed = False


def allow_in_process() -> None:
    """Let this process run obstore itself: call it only in a process that will not fork afterwards."""
    global _in_process_allowed
    _in_process_allowed = True


def _in_process() -> bool:
    if _in_process_allowed or os.environ.get(IN_PROCESS_ENV) == "1":
        return True
    torch_data = sys.modules.get("torch.utils.data")
    return torch_data is not None and torch_data.get_worker_info() is not None


def fetch(url: str, spans: list[tuple[int, int]], etag: str | None, settings: RemoteSettings) -> Fetched:
    """The bytes of each ``[start, end)`` of the object at ``url`` pinned to ``etag``, in order."""
    if _in_process():
        return fetch_in_process(url, spans, etag, settings)
    return _helper().fetch(url, spans, etag, settings)


def download(url: str, destination: str, settings: RemoteSettings) -> Fetched:
    """The whole object at ``url`` streamed once into the file ``destination`` (no parts; its ETag and size)."""
    if _in_process():
        return download_in_process(url, destination, settings)
    return _helper().fetch(url, [], None, settings, destination)


#: The errors a helper sends back by name, raised here as the same class.
_ERRORS: dict[str, type[BaseException]] = {
    cls.__name__: cls
    for cls in (
        problems.ObjectChangedError,
        problems.NoSuchObjectError,
        problems.RemoteAccessError,
        problems.UnreachableError,
        problems.RemoteURLProblem,
        RemoteReadError,
        RemoteURLError,
        FileNotFoundError,
        PermissionError,
    )
}


class _Helper:
    """A helper process that runs this process's reads, and the pipes to it."""

    def __init__(self) -> None:
        package_root = str(Path(__file__).resolve().parents[2])  # the folder holding imagefolder_lmdb/
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([package_root, os.environ.get("PYTHONPATH", "")]))
        self.owner = os.getpid()
        self.lock = threading.Lock()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "imagefolder_lmdb.remote.helper"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            start_new_session=True,  # a Ctrl-C reaches the parent, which ends it
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.requests: IO[bytes] = self.process.stdin
        self.answers: IO[bytes] = self.process.stdout

    def fetch(
        self,
        url: str,
        spans: list[tuple[int, int]],
        etag: str | None,
        settings: RemoteSettings,
        download: str | None = None,
    ) -> Fetched:
        request = {
            "download": download,
            "url": url,
            "spans": spans,
            "etag": etag,
            "settings": settings.__dict__,
            "env": store_environment(),
        }
        with self.lock:
            try:
                self.requests.write(json.dumps(request).encode() + b"\n")
                self.requests.flush()
                header = json.loads(self.answers.readline() or b"null")
                if header is None:
                    raise RemoteReadError(f"{url}: the reader's helper process ended (exit {self.process.poll()})")
                data = _read_exactly(self.answers, sum(header.get("lengths", [])))
            except (BrokenPipeError, ValueError) as exc:
                raise RemoteReadError(f"{url}: the reader's helper process failed: {exc}") from exc
        if not header["ok"]:
            raise _ERRORS.get(header["kind"], RemoteReadError)(header["message"])
        parts, at = [], 0
        for length in header["lengths"]:
            parts.append(data[at : at + length])
            at += length
        return Fetched(parts, header["etag"], header["size"])

    def close(self) -> None:
        if self.owner != os.getpid():
            return
        for pipe in (self.requests, self.answers):
            pipe.close()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()


def _read_exactly(stream: IO[bytes], size: int) -> bytes:
    data = stream.read(size) if size else b""
    if len(data) != size:
        raise RemoteReadError(f"the reader's helper process ended after {len(data):,} of {size:,} bytes")
    return data


_helpers: dict[int, _Helper] = {}
_helpers_lock = threading.Lock()


def _helper() -> _Helper:
    pid = os.getpid()
    with _helpers_lock:
        helper = _helpers.get(pid)
        if helper is None or helper.process.poll() is not None:
            helper = _helpers[pid] = _Helper()
        return helper


def _close_helpers() -> None:
    helper = _helpers.pop(os.getpid(), None)
    if helper is not None:
        helper.close()


def _forget_in_child() -> None:
    """A forked child never uses its parent's helper: it starts its own if it reads outside a
    DataLoader worker. The inherited pipes are kept unused (closing them could close a descriptor
    number reused since), so the parent's helper ends once both have exited."""
    global _helpers_lock
    _helpers_lock = threading.Lock()
    _inherited.extend(_helpers.values())
    _helpers.clear()


_inherited: list[_Helper] = []


atexit.register(_close_helpers)
os.register_at_fork(after_in_child=_forget_in_child)


def serve(requests: IO[bytes], answers: IO[bytes]) -> None:
    """The helper's loop: one JSON request a line, answered with a JSON line and the bytes."""
    allow_in_process()
    for line in iter(requests.readline, b""):
        request = json.loads(line)
        for name in set(store_environment()) - set(request["env"]):
            del os.environ[name]
        os.environ.update(request["env"])  # the reading process's credentials and endpoint
        try:
            if request.get("download"):
                got = download_in_process(request["url"], request["download"], RemoteSettings(**request["settings"]))
            else:
                got = fetch_in_process(
                    request["url"],
                    [tuple(s) for s in request["spans"]],
                    request["etag"],
                    RemoteSettings(**request["settings"]),
                )
        except Exception as exc:  # noqa: BLE001 - every failure goes back to the reading process
            kind = type(exc).__name__ if type(exc).__name__ in _ERRORS else "RemoteReadError"
            message = str(exc) if str(exc).startswith(request["url"]) else f"{request['url']}: {exc}"
            answers.write(json.dumps({"ok": False, "kind": kind, "message": message}).encode() + b"\n")
        else:
            header: dict[str, Any] = {
                "ok": True,
                "etag": got.etag,
                "size": got.size,
                "lengths": [len(p) for p in got.parts],
            }
            answers.write(json.dumps(header).encode() + b"\n")
            for part in got.parts:
                answers.write(part)
        answers.flush()
