# SPDX-License-Identifier: MIT
"""Ranged GETs with obstore, run in this process: many in flight at once (obstore's own
``get_ranges`` keeps at most 10, which at 20 ms a request caps a process at 500 reads/s), each
pinned with ``If-Match`` to the ETag the object had when the dataset was opened.

What can go wrong, and what is done:
- the object was replaced (412): ObjectChangedError naming it, never retried (mixed data otherwise);
- it is gone (404): FileNotFoundError naming it;
- 5xx (S3's 503 SlowDown), a dropped connection, a timeout: obstore retries them with backoff;
- a body shorter than asked, a 200 with the whole object for a range, an error while the body
  streams: tried again here with backoff (the answer is never used), then RemoteReadError;
- every request has a deadline (``RemoteSettings.timeout_s``), so nothing waits forever.
"""

from __future__ import annotations

import asyncio
import os
import random
import threading
from dataclasses import dataclass
from typing import Any

from .problems import ObjectChangedError, RemoteReadError, changed_message, explain, ignored_range
from .urls import RemoteSettings, RemoteURLError, make_store, store_and_key

__all__ = ["Fetched", "ObjectChangedError", "RemoteReadError", "download_in_process", "fetch_in_process"]


@dataclass
class Fetched:
    """The bytes of each asked range, and the object's ETag and size as the first answer gave them."""

    parts: list[bytes]
    etag: str | None
    size: int


_stores: dict[tuple[int, str, RemoteSettings, tuple[tuple[str, str], ...]], Any] = {}
_lock = threading.Lock()
#: The environment variables a store reads its credentials and endpoint from.
STORE_VARIABLES = ("AWS_", "GOOGLE_", "AZURE_", "AZURITE_")  # AZURITE_BLOB_STORAGE_URL: the emulator's address


def store_environment() -> dict[str, str]:
    """This process's variables that configure stores (a helper process applies its parent's)."""
    return {name: value for name, value in os.environ.items() if name.startswith(STORE_VARIABLES)}


def store_for(store_url: str, settings: RemoteSettings, url: str) -> Any:
    """This process's store for ``store_url`` (made lazily: obstore clients are not shared across
    processes), made again when the variables it reads change."""
    key = (os.getpid(), store_url, settings, tuple(sorted(store_environment().items())))
    with _lock:
        if key not in _stores:
            try:
                _stores[key] = make_store(store_url, settings)
            except RemoteURLError as exc:
                raise RemoteURLError(f"{url}: {exc}") from None
        return _stores[key]


def _classify(exc: BaseException, url: str, etag: str | None, store: Any, key: str) -> BaseException | None:
    """The error to raise at once for ``exc`` (not worth another try), or None to try again."""
    from obstore.exceptions import PreconditionError

    if isinstance(exc, PreconditionError):
        return ObjectChangedError(changed_message(url, etag, f"its ETag is no longer {etag}"))
    return explain(exc, url, store, key)


async def _get_once(store: Any, key: str, start: int, end: int, etag: str | None) -> tuple[bytes, Any]:
    import obstore

    options: dict[str, Any] = {"range": (start, end)}
    if etag is not None:
        options["if_match"] = etag
    result = await obstore.get_async(store, key, options=options)  # type: ignore[arg-type]  # a plain dict
    data = bytes(await result.bytes_async())
    return data, result.meta


async def get_range(
    store: Any, url: str, key: str, span: tuple[int, int], etag: str | None, settings: RemoteSettings
) -> Fetched:
    """Bytes ``[start, end)`` of the object, retried with backoff where a retry may help."""
    start, end = span
    problem = ""
    for attempt in range(settings.retries + 1):
        if attempt:
            await asyncio.sleep(min(5.0, 0.1 * 2**attempt) * (0.5 + random.random()))
        try:
            async with asyncio.timeout(settings.timeout_s):  # in this task: wait_for would start another
                data, meta = await _get_once(store, key, start, end, etag)
        except TimeoutError:
            problem = f"no answer within {settings.timeout_s:.0f} s"
            continue
        except Exception as exc:  # noqa: BLE001 - obstore's errors: classified, else tried again
            fatal = _classify(exc, url, etag, store, key)
            if fatal is not None:
                raise fatal from None
            problem = (ignored_range(str(exc), url).splitlines() or [type(exc).__name__])[0]
            continue
        sent = meta.get("e_tag")
        if etag is not None and sent is not None and sent != etag:  # a server that ignores If-Match
            raise ObjectChangedError(changed_message(url, etag, f"the server sent ETag {sent} for a read of {etag}"))
        if len(data) == end - start:
            return Fetched([data], sent, int(meta.get("size") or 0))
        problem = f"the server answered {len(data):,} bytes for a range of {end - start:,}"
    raise RemoteReadError(
        f"{url}: bytes {start:,}-{end - 1:,} could not be read in {settings.retries + 1} tries: {problem}"
    )


async def _fetch(url: str, spans: list[tuple[int, int]], etag: str | None, settings: RemoteSettings) -> Fetched:
    store_url, key = store_and_key(url)
    store = store_for(store_url, settings, url)
    gate = asyncio.Semaphore(settings.max_in_flight)

    async def one(span: tuple[int, int]) -> Fetched:
        async with gate:
            return await get_range(store, url, key, span, etag, settings)

    tasks = [asyncio.ensure_future(one(span)) for span in spans]
    try:
        answers = await asyncio.gather(*tasks)
    except BaseException:  # the first failure ends the rest: no request is left running (see leaving.py)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    first = answers[0] if answers else Fetched([], etag, 0)
    return Fetched([answer.parts[0] for answer in answers], first.etag, first.size)


_local = threading.local()


def fetch_in_process(url: str, spans: list[tuple[int, int]], etag: str | None, settings: RemoteSettings) -> Fetched:
    """Each ``[start, end)`` of ``spans`` of the object at ``url``, concurrently (at most
    ``settings.max_in_flight`` at once), in order. ``etag``: the version every read is pinned to
    (None: the first read learns it). Runs on an event loop of this thread."""
    loop = getattr(_local, "loop", None)
    if loop is None or loop.is_closed():
        loop = _local.loop = asyncio.new_event_loop()
    return loop.run_until_complete(_fetch(url, spans, etag, settings))


def download_in_process(url: str, destination: str, settings: RemoteSettings) -> Fetched:
    """The whole object streamed once into the file ``destination`` (checked to fit on its disk first)."""
    import shutil

    import obstore

    store_url, key = store_and_key(url)
    store = store_for(store_url, settings, url)
    try:
        head = obstore.head(store, key)
        free = shutil.disk_usage(os.path.dirname(os.path.abspath(destination))).free
        if free < head["size"]:
            raise OSError(
                f"{url} holds {head['size']:,} bytes, but only {free:,} are free where its copy to check goes "
                f"({os.path.dirname(destination)}): point TMPDIR at a larger disk"
            )
        result = obstore.get(store, key, options={"if_match": head["e_tag"]} if head.get("e_tag") else None)
        with open(destination, "wb") as copy:
            for chunk in result.stream(min_chunk_size=8 << 20):
                copy.write(chunk)
    except OSError:
        raise
    except Exception as exc:  # noqa: BLE001 - obstore's errors, named by the object
        raise _classify(exc, url, None, store, key) or RemoteReadError(f"{url}: {str(exc).splitlines()[0]}") from None
    return Fetched([], head.get("e_tag"), int(head["size"]))
