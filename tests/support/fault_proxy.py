"""An HTTP proxy for the remote reader's tests and benchmark (``tc netem`` is not available here):
forwards each request to one upstream server (127.0.0.1 only) after a fixed delay, and can answer
the next requests with a fault: ``drop`` (close the connection without an answer), ``truncate``
(headers, then half the body, then close), ``whole`` (ask upstream without ``Range``: a 200 with the
whole object, as some S3 gateways answer ranges), ``503`` (S3's SlowDown). It counts requests and
the body bytes it passed on. The client's connection is kept alive; each request opens its own to
upstream."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import deque

FAULTS = ("drop", "truncate", "whole", "503")
_SLOW_DOWN = (
    b"HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\nContent-Length: 67\r\n\r\n"
    b"<Error><Code>SlowDown</Code><Message>Reduce your rate</Message></Error>"
)


class FaultProxy:
    """Listens on 127.0.0.1 (``self.url``) and forwards to ``upstream_port`` with ``delay`` seconds added."""

    def __init__(self, upstream_port: int, delay: float = 0.0) -> None:
        self.upstream_port = upstream_port
        self.delay = delay
        self.faults: deque[str] = deque()
        self.requests = 0
        self.body_bytes = 0
        self.log: list[tuple[float, int]] = []  # (time.monotonic() at the answer, body bytes) per request
        self.loop = asyncio.new_event_loop()
        self.server: asyncio.AbstractServer | None = None
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.port = 0
        self.url = ""

    def start(self) -> FaultProxy:
        self.thread.start()
        future = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._serve, "127.0.0.1", 0, backlog=512), self.loop
        )
        self.server = future.result(timeout=10)
        self.port = self.server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        return self

    def stop(self) -> None:
        async def close() -> None:
            assert self.server is not None
            self.server.close()
            connections = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
            for task in connections:
                task.cancel()
            await asyncio.gather(*connections, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(close(), self.loop).result(timeout=10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()

    def fail_next(self, *faults: str) -> None:
        """Answer the next ``len(faults)`` requests with these faults, in order."""
        unknown = set(faults) - set(FAULTS)
        assert not unknown, f"unknown faults {unknown}; known: {FAULTS}"
        self.faults.extend(faults)

    def reset_counts(self) -> None:
        self.requests = self.body_bytes = 0
        self.log.clear()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                body = await reader.readexactly(_content_length(head))
                if not await self._one(head + body, writer):
                    break
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError, asyncio.CancelledError):
            pass
        finally:
            with contextlib.suppress(ConnectionError, OSError):
                writer.close()

    async def _one(self, request: bytes, writer: asyncio.StreamWriter) -> bool:
        """Answer one request; False when the client connection must close."""
        self.requests += 1
        fault = self.faults.popleft() if self.faults else None
        await asyncio.sleep(self.delay)
        if fault == "drop":
            return False
        if fault == "503":
            writer.write(_SLOW_DOWN)
            await writer.drain()
            return True
        if fault == "whole":
            request = _without_header(request, b"range")
        head, body = await self._upstream(request)
        self.body_bytes += len(body)
        self.log.append((time.monotonic(), len(body)))
        if fault == "truncate":
            writer.write(head + body[: len(body) // 2])
            await writer.drain()
            return False
        writer.write(head + body)
        await writer.drain()
        return True

    async def _upstream(self, request: bytes) -> tuple[bytes, bytes]:
        """The upstream server's answer to ``request``: its head (with Connection: keep-alive) and body."""
        reader, writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        try:
            writer.write(_with_header(_without_header(request, b"connection"), b"Connection: close"))
            await writer.drain()
            head = await reader.readuntil(b"\r\n\r\n")
            body = await reader.read(-1)
        finally:
            writer.close()
        length = _content_length(head)
        if b" 204 " not in head.split(b"\r\n", 1)[0] and length:
            body = body[:length]
        head = _with_header(_without_header(head, b"connection"), b"Connection: keep-alive")
        return head, body


def _content_length(head: bytes) -> int:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value.strip())
    return 0


def _without_header(message: bytes, name: bytes) -> bytes:
    """``message`` (head and body) without header ``name`` (lower case)."""
    head, _, body = message.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    kept = [lines[0]] + [line for line in lines[1:] if line.partition(b":")[0].strip().lower() != name]
    return b"\r\n".join(kept) + b"\r\n\r\n" + body


def _with_header(message: bytes, header: bytes) -> bytes:
    head, _, body = message.partition(b"\r\n\r\n")
    return head + b"\r\n" + header + b"\r\n\r\n" + body
