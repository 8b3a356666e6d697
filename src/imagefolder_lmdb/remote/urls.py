# SPDX-License-Identifier: MIT
"""The obstore store that reads one URL, and the object's key inside it.

Credentials and endpoints come the way each store's ecosystem gives them (obstore reads the same
variables as the cloud's own tools): ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` /
``AWS_SESSION_TOKEN`` / ``AWS_REGION`` / ``AWS_ENDPOINT_URL`` (``AWS_ALLOW_HTTP=true`` for a plain
http endpoint), ``AWS_SKIP_SIGNATURE=true`` for a public bucket; ``GOOGLE_SERVICE_ACCOUNT`` /
``GOOGLE_APPLICATION_CREDENTIALS``; ``AZURE_STORAGE_ACCOUNT_NAME`` / ``AZURE_STORAGE_ACCOUNT_KEY``.
Emulators (docs/training.md): ``AZURE_STORAGE_USE_EMULATOR=true`` (Azurite; ``AZURITE_BLOB_STORAGE_URL``
for another port); a ``GOOGLE_SERVICE_ACCOUNT`` file with ``gcs_base_url`` and ``disable_oauth``
(fake-gcs-server), with ``GOOGLE_ALLOW_HTTP=true`` for a plain-http one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from imagefolder_lmdb.remote.obstore_words import NO_AZURE_ACCOUNT


@dataclass(frozen=True)
class RemoteSettings:
    """How the remote reads behave; picklable, the same in every process."""

    max_in_flight: int = 64  # ranged GETs in flight at once per process
    merge_gap: int = 8192  # neighbouring ranges closer than this are fetched as one
    max_request: int = 8 << 20  # a merged range grows no longer than this
    timeout_s: float = 30.0  # one request, start to last byte
    retries: int = 4  # tries after the first, for errors worth another try


#: The schemes obstore reads, as users write them.
KNOWN_SCHEMES = ("s3", "s3a", "gs", "az", "azure", "abfs", "abfss", "adl", "http", "https")
#: Schemes people write for a known one.
_MEANT = {"gcs": "gs", "gcp": "gs", "google": "gs", "s3n": "s3", "aws": "s3", "blob": "az", "wasb": "az", "wasbs": "az"}


class RemoteURLError(ValueError):
    """A URL the reader cannot read as written: an unknown scheme, a slash missing, no key."""


def check_url(url: str) -> None:
    """RemoteURLError naming what is wrong with ``url`` and how to write it, or nothing."""
    scheme, _, rest = url.partition(":")
    known = "s3://bucket/key, gs://bucket/key, az://container/key, http(s)://host/path"
    if scheme.lower() not in KNOWN_SCHEMES:
        meant = _MEANT.get(scheme.lower())
        hint = f"did you mean {meant}://? " if meant else ""
        if scheme.lower() == "file":
            raise RemoteURLError(f"{url}: a local file is given by its path ({urlsplit(url).path}), not a URL")
        raise RemoteURLError(f"{url}: unknown scheme {scheme}://; {hint}the schemes read are {known}")
    if not rest.startswith("//"):
        raise RemoteURLError(f"{url}: one slash after {scheme}: (write {scheme}://{rest.lstrip('/')})")
    parts = urlsplit(url)
    if not parts.netloc or not parts.path.lstrip("/") or parts.path.endswith("/"):
        raise RemoteURLError(f"{url}: not the URL of an object ({known}): name the .lmdb file")


def store_and_key(url: str) -> tuple[str, str]:
    """(the URL of the store's root, the object's key in it): ``s3://b/k/x.lmdb`` -> ``s3://b``, ``k/x.lmdb``.

    The host part is the bucket, or for Azure the container (``az://container/key``, the account from
    AZURE_STORAGE_ACCOUNT_NAME; ``abfss://container@account.dfs.core.windows.net/key``), as obstore
    and fsspec read them: a store URL with a path would make obstore take that path for a prefix."""
    check_url(url)
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}", parts.path.lstrip("/")


def make_store(store_url: str, settings: RemoteSettings) -> Any:
    """An obstore store for ``store_url``, with the request timeout and obstore's own retries (5xx,
    dropped connections, timeouts) bounded by ``settings``."""
    from obstore.store import from_url

    retry = {
        "max_retries": settings.retries,
        "retry_timeout": timedelta(seconds=settings.timeout_s * (settings.retries + 1)),
        "backoff": {"init_backoff": timedelta(milliseconds=100), "max_backoff": timedelta(seconds=5), "base": 2},
    }
    timeout = f"{max(1, int(settings.timeout_s * 1000))}ms"
    client = {"timeout": timeout, "connect_timeout": "5s", "pool_max_idle_per_host": str(settings.max_in_flight)}
    # Client options given here replace those obstore reads from the environment: keep AWS_ALLOW_HTTP
    # (a plain-http S3 endpoint) and its GOOGLE_ / AZURE_ twins; a plain-http URL says so itself.
    if store_url.lower().startswith("http://") or _allows_http(store_url):
        client["allow_http"] = "true"
    elif store_url.lower().startswith("gs://"):
        _refuse_plain_http_gcs()
    elif store_url.lower().startswith(("s3://", "s3a://")):
        endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or ""
        if endpoint.lower().startswith("http://"):  # obstore says only "builder error"
            raise RemoteURLError(
                f"the endpoint {endpoint} (AWS_ENDPOINT_URL) is plain http, which S3 clients refuse "
                "unless told: set AWS_ALLOW_HTTP=true (or give an https:// endpoint)"
            )
    try:
        return from_url(store_url, client_options=client, retry_config=retry)  # type: ignore[call-overload]  # plain dicts
    except Exception as exc:
        if NO_AZURE_ACCOUNT in str(exc):  # obstore's words, with a debug dump, and no fix
            raise RemoteURLError(
                "no Azure storage account configured: set AZURE_STORAGE_ACCOUNT_NAME (with AZURE_STORAGE_ACCOUNT_KEY "
                "or a SAS token), or AZURE_STORAGE_USE_EMULATOR=true for Azurite"
            ) from None
        raise


def _allows_http(store_url: str) -> bool:
    """Whether the variable of ``store_url``'s cloud (or AWS_ALLOW_HTTP, as before) allows plain http."""
    own = "GOOGLE_ALLOW_HTTP" if store_url.lower().startswith("gs://") else "AZURE_ALLOW_HTTP"
    return any(os.environ.get(name, "").lower() == "true" for name in ("AWS_ALLOW_HTTP", own))


def _gcs_base_url() -> str:
    """The GCS endpoint configured: GOOGLE_BASE_URL, else the service-account file's ``gcs_base_url``
    (how an emulator is named), else ''."""
    import json

    if os.environ.get("GOOGLE_BASE_URL"):
        return os.environ["GOOGLE_BASE_URL"]
    path = os.environ.get("GOOGLE_SERVICE_ACCOUNT") or os.environ.get("GOOGLE_SERVICE_ACCOUNT_PATH") or ""
    try:
        with open(path, encoding="utf-8") as file:
            found = json.load(file).get("gcs_base_url")
    except (OSError, ValueError, AttributeError):
        return ""  # obstore names a missing or unreadable file itself
    return found if isinstance(found, str) else ""


def _refuse_plain_http_gcs() -> None:
    """RemoteURLError for a plain-http GCS endpoint not allowed (obstore would say only "builder error")."""
    endpoint = _gcs_base_url()
    if endpoint.lower().startswith("http://"):
        raise RemoteURLError(
            f"the GCS endpoint {endpoint} (GOOGLE_BASE_URL or the service account's gcs_base_url) is plain "
            "http, which the client refuses unless told: set GOOGLE_ALLOW_HTTP=true (or give an https:// endpoint)"
        )
