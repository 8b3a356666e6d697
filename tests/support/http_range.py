"""A small HTTP object server for the remote reader's tests: honours ``Range`` (one range per
request, 206 with ``Content-Range``), sends an ``ETag`` that changes when an object is replaced,
and answers ``If-Match`` with 412 when it no longer holds (Python's ``http.server`` does neither).
Only 127.0.0.1; objects live in memory, put and replaced by the test."""

from __future__ import annotations

import hashlib
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_RANGE = re.compile(r"bytes=(\d*)-(\d*)$")


class _Server(ThreadingHTTPServer):
    request_queue_size = 512  # the listen backlog: many reads in flight connect at once (default 5)


class RangeServer:
    """Objects by path (``/name``), served at ``self.url``; start with ``start()``, stop with ``stop()``."""

    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}
        self.etags: dict[str, str] = {}
        self.requests = 0
        self.ignore_if_match = False  # as some servers do: a replaced object is served all the same
        self.send_etag = True  # False: a server that sends no ETag
        self.lock = threading.Lock()
        self.server = _Server(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> RangeServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def put(self, name: str, data: bytes) -> str:
        """Store (or replace) object ``name``; returns its URL. A replaced object gets a new ETag."""
        with self.lock:
            self.objects[name] = data
            self.etags[name] = '"' + hashlib.sha256(data).hexdigest()[:32] + '"'
        return f"{self.url}/{name}"


def _handler(store: RangeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet: the tests' output stays readable
            pass

        def do_HEAD(self) -> None:
            self._answer(body=False)

        def do_GET(self) -> None:
            self._answer(body=True)

        def _answer(self, body: bool) -> None:
            with store.lock:
                store.requests += 1
                name = self.path.lstrip("/").split("?")[0]
                data, etag = store.objects.get(name), store.etags.get(name)
            if data is None:
                return self._status(404)
            wanted = self.headers.get("If-Match")
            if wanted is not None and wanted.strip() not in (etag, "*") and not store.ignore_if_match:
                return self._status(412)
            start, end, status = 0, len(data), 200
            asked = self.headers.get("Range")
            if asked:
                found = _RANGE.match(asked.strip())
                if found is None or (not found.group(1) and not found.group(2)):
                    return self._status(416)
                start, end = _bounds(found.group(1), found.group(2), len(data))
                if start >= len(data) or start >= end:
                    return self._status(416)
                status = 206
            self.send_response(status)
            self.send_header("Content-Length", str(end - start))
            if store.send_etag:
                self.send_header("ETag", etag or "")
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("Last-Modified", "Wed, 02 Dec 2026 00:00:00 GMT")
            if status == 206:
                self.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(data)}")
            self.end_headers()
            if body:
                self.wfile.write(data[start:end])

        def _status(self, code: int) -> None:
            self.send_response(code)
            self.send_header("Content-Length", "0")
            self.end_headers()

    return Handler


def _bounds(first: str, last: str, size: int) -> tuple[int, int]:
    """[start, end) of a ``bytes=first-last`` range (``-N``: the last N bytes) in an object of ``size``."""
    if not first:
        return max(0, size - int(last)), size
    return int(first), min(size, int(last) + 1) if last else size
