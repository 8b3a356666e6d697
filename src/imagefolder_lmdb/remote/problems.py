# SPDX-License-Identifier: MIT
"""obstore's errors as one message naming the URL and what to do (docs/troubleshooting.md has a row
for each). obstore says ``Generic S3 error: ... HTTP error: builder error`` for an http endpoint
without AWS_ALLOW_HTTP and ``error sending request`` for a refused connection; S3 servers answer a
missing bucket with 404 or 403, so a 404 or 403 is followed by one probe of the bucket (a listing)
to tell a missing bucket from a missing key or a refused one; a missing key gets a did-you-mean
among the ``.lmdb`` keys beside it when listing is allowed.
"""

from __future__ import annotations

import difflib
import os
import posixpath
import re
import socket
from typing import Any
from urllib.parse import urlsplit

from imagefolder_lmdb.remote.obstore_words import (
    BUILDER_ERROR,
    DEBUG_SOURCE,
    NOT_SENT,
    requested_url,
    says_denied,
    says_no_container,
)


class RemoteReadError(OSError):
    """A read failed; the message names the object and what to do."""


class ObjectChangedError(RemoteReadError):
    """The object no longer is the one the dataset was opened on (its ETag or its bytes changed)."""


class NoSuchObjectError(FileNotFoundError):
    """No object at the URL (or no bucket): never retried."""


class RemoteAccessError(PermissionError):
    """Refused: no credentials found, or the ones given are not allowed to read the object."""


class UnreachableError(RemoteReadError):
    """Nothing answers at the endpoint (connection refused, no such host)."""


def changed_message(url: str, etag: str | None, how: str) -> str:
    return (
        f"{url} was replaced after the dataset was opened ({how}): the object changed, it is not damaged; reading "
        "on would mix records of two files. Open the dataset again (a new job) to read the new object"
    )


def first_line(exc: BaseException) -> str:
    return str(exc).split(DEBUG_SOURCE)[0].splitlines()[0] if str(exc) else type(exc).__name__


def _requested(text: str) -> str | None:
    """The URL obstore's message says it requested (``Error performing GET http://h:p/b/k``)."""
    return requested_url(text)


def refused(address: str) -> str | None:
    """Why ``address``'s host:port takes no TCP connection (``connection refused``), or None if it does."""
    parts = urlsplit(address)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "", port), timeout=2):
            return None
    except OSError as exc:
        return exc.strerror or str(exc)


def _credentials_hint(url: str) -> str:
    scheme = url.split(":", 1)[0].lower()
    if scheme in ("gs",):
        return "set GOOGLE_APPLICATION_CREDENTIALS (or GOOGLE_SERVICE_ACCOUNT)"
    if scheme in ("az", "azure", "abfs", "abfss", "adl"):
        return "set AZURE_STORAGE_ACCOUNT_NAME and AZURE_STORAGE_ACCOUNT_KEY (or a SAS token)"
    return (
        "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_ENDPOINT_URL for a server other than AWS, "
        "AWS_ALLOW_HTTP=true if it is http), or AWS_SKIP_SIGNATURE=true for a public bucket"
    )


def _bucket_of(url: str) -> str:
    return urlsplit(url).netloc


def listing_beside(store: Any, key: str) -> tuple[str, list[str]]:
    """('ok', the .lmdb keys beside ``key``), or ('nobucket'|'denied'|'failed', [])."""
    import obstore

    folder = posixpath.dirname(key)
    try:
        listed = obstore.list_with_delimiter(store, folder or None)
    except Exception as exc:  # noqa: BLE001 - the probe only tells cases apart
        text = str(exc)
        if says_no_container(text):
            return "nobucket", []
        if says_denied(text):
            return "denied", []
        return "failed", []
    return "ok", [entry["path"] for entry in listed["objects"] if entry["path"].endswith(".lmdb")]


def _create_command(url: str) -> str:
    """The command that creates ``url``'s bucket (or Azure container), in its cloud's own tool."""
    scheme, bucket = url.split(":", 1)[0].lower(), _bucket_of(url)
    if scheme == "gs":
        return f"`gcloud storage buckets create gs://{bucket}`"
    if scheme in ("az", "azure", "abfs", "abfss", "adl"):
        container = bucket.split("@", 1)[0]  # abfss://container@account.dfs.core.windows.net
        return f"`az storage container create --name {container}`, with --connection-string for Azurite"
    return f"`aws s3 mb s3://{bucket}`, with --endpoint-url for a local S3 server"


def no_bucket_error(url: str) -> NoSuchObjectError:
    scheme, bucket = url.split(":", 1)[0].lower(), _bucket_of(url)
    what = "container" if scheme in ("az", "azure", "abfs", "abfss", "adl") else "bucket"
    return NoSuchObjectError(
        f"{url}: no such {what} {bucket.split('@', 1)[0]!r}: create it first ({_create_command(url)}), "
        f"or correct the {what}'s name"
    )


def _has_buckets(url: str) -> bool:
    """Whether the URL's host part is a bucket or container (not an http(s) server)."""
    return not url.lower().startswith(("http://", "https://"))


def _missing(url: str, store: Any, key: str, text: str) -> BaseException:
    if "NoSuchBucket" in text or "ContainerNotFound" in text:  # S3's and Azure's words for it
        return no_bucket_error(url)
    if not _has_buckets(url):
        return NoSuchObjectError(f"{url}: no such object (the server answers 404): check the URL")
    state, keys = listing_beside(store, key)
    if state == "nobucket":
        return no_bucket_error(url)
    message = f"{url}: no such object"
    close = difflib.get_close_matches(key, keys, n=1, cutoff=0.6)
    if close:
        message += f"; did you mean {url[: len(url) - len(key)]}{close[0]}?"
    elif state == "ok":
        shown = ", ".join(posixpath.basename(k) for k in keys[:8]) or "none"
        message += f" (the .lmdb files beside it: {shown})"
    return NoSuchObjectError(message + ". Check the URL, or upload the dataset (`imagefolder-lmdb convert DATA URL`)")


def _denied(url: str, store: Any, key: str, text: str) -> BaseException:
    if "NoSuchBucket" in text:
        return no_bucket_error(url)
    if _has_buckets(url) and listing_beside(store, key)[0] == "nobucket":
        return no_bucket_error(url)
    return RemoteAccessError(
        f"{url}: access denied ({_first_line_of(text)}): the credentials given are not allowed to read it; "
        + _credentials_hint(url)
        + ", with keys that may read this bucket"
    )


def _first_line_of(text: str) -> str:
    code = re.search(r"<Code>(\w+)</Code>", text)
    return code.group(1) if code else text.split("\n")[0][:120]


def _metadata_service(target: str) -> bool:
    """Whether ``target`` is the cloud's metadata service, asked for credentials when none are set."""
    return any(part in target for part in ("/latest/api/token", "169.254.169.254", "/latest/meta-data"))


def _no_credentials(url: str, target: str) -> RemoteAccessError:
    return RemoteAccessError(
        f"{url}: no credentials or endpoint configured (none in the environment, and the cloud's metadata "
        f"service at {urlsplit(target).netloc} gave none): " + _credentials_hint(url)
    )


#: The variables that name each cloud's endpoint, as a refused connection names them.
_ENDPOINT_VARIABLES = {
    "gs": ("GOOGLE_BASE_URL", "GOOGLE_SERVICE_ACCOUNT"),
    "az": ("AZURITE_BLOB_STORAGE_URL", "AZURE_STORAGE_ENDPOINT", "AZURE_ENDPOINT"),
}


def _endpoint_variable(url: str) -> str:
    scheme = url.split(":", 1)[0].lower()
    family = "az" if scheme in ("az", "azure", "abfs", "abfss", "adl") else scheme
    names = _ENDPOINT_VARIABLES.get(family, ("AWS_ENDPOINT_URL",))
    return next((f" ({name})" for name in names if os.environ.get(name)), "")


def _sending(url: str, text: str) -> BaseException | None:
    """A request that never got an answer: the metadata service (no credentials) or the endpoint."""
    target = _requested(text) or ""
    if _metadata_service(target):
        return _no_credentials(url, target)
    if not target:
        return None
    why = refused(target)
    if why is None:
        return None  # it answers now: worth another try
    endpoint = f"{urlsplit(target).scheme}://{urlsplit(target).netloc}"
    variable = _endpoint_variable(url)
    return UnreachableError(
        f"{url}: nothing answers at {endpoint}{variable}: {why.lower()}. Start the server, or correct the endpoint"
    )


def ignored_range(problem: str, url: str) -> str:
    """``problem`` (obstore's words for a 200 to a ranged GET) as what the server does and the fix."""
    if "Range request not supported" not in problem and "non-partial response" not in problem:
        return problem
    server = urlsplit(_requested(problem) or url).netloc or url
    return (
        f"the server at {server} answers ranged GETs with the whole object (HTTP 200, not 206), as some S3 "
        "gateways do (`rclone serve s3`); serve the file from one that honours Range (S3, GCS, Azure, "
        "SeaweedFS, MinIO, nginx)"
    )


def explain(exc: BaseException, url: str, store: Any, key: str) -> BaseException | None:
    """The error to raise at once for obstore's ``exc`` (not worth another try), or None to try again."""
    from obstore.exceptions import NotFoundError, PermissionDeniedError, UnauthenticatedError

    text = str(exc)
    if _metadata_service(_requested(text) or ""):  # a token request refused or unanswered: none configured
        return _no_credentials(url, _requested(text) or "")
    if isinstance(exc, (NotFoundError, FileNotFoundError)) or "404 Not Found" in text:
        return _missing(url, store, key, text)
    if isinstance(exc, (PermissionDeniedError, UnauthenticatedError)) or "403 Forbidden" in text:
        return _denied(url, store, key, text)
    if BUILDER_ERROR in text:
        return RemoteURLProblem(
            f"{url}: the client refused the endpoint's URL (obstore: builder error); for a plain http endpoint "
            "set AWS_ALLOW_HTTP=true"
        )
    if any(words in text for words in NOT_SENT):
        return _sending(url, text)
    if "credential" in text.lower():
        return RemoteAccessError(f"{url}: {first_line(exc)}: " + _credentials_hint(url))
    return None


class RemoteURLProblem(RemoteReadError):
    """The client cannot use the endpoint as configured (an http endpoint without AWS_ALLOW_HTTP)."""
