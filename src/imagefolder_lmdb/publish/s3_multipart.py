# SPDX-License-Identifier: MIT
"""S3's multipart upload, signed with AWS Signature V4 from the standard variables: create, upload
parts, complete, abort, list. obstore 0.12 uploads in parts too, but cannot abort an upload it
left (an interrupt leaves a pending upload that costs storage until a lifecycle rule removes it),
nor list them; these few requests can. Credentials come from AWS_ACCESS_KEY_ID /
AWS_SECRET_ACCESS_KEY (/ AWS_SESSION_TOKEN); without them the upload goes through obstore (which
also knows profiles and instance roles) and an interrupt may leave a pending upload (docs/training.md).
"""

from __future__ import annotations

import hashlib
import hmac
import html
import os
import re
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from urllib.parse import quote, unquote, urlsplit
from xml.sax.saxutils import escape

_SAFE = "-_.~"


@dataclass(frozen=True)
class Credentials:
    key_id: str
    secret: str
    token: str | None
    region: str
    endpoint: str | None  # AWS_ENDPOINT_URL: path-style requests to it; None: AWS itself

    @classmethod
    def from_environment(cls) -> Credentials | None:
        key_id, secret = os.environ.get("AWS_ACCESS_KEY_ID"), os.environ.get("AWS_SECRET_ACCESS_KEY")
        if not key_id or not secret:
            return None
        region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
        endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None
        return cls(key_id, secret, os.environ.get("AWS_SESSION_TOKEN"), region, endpoint)


class S3RequestError(OSError):
    """An S3 request answered with an error status; ``status`` and S3's ``code``."""

    def __init__(self, message: str, status: int, code: str) -> None:
        super().__init__(message)
        self.status, self.code = status, code


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def signed_headers(
    method: str, url: str, payload_sha256: str, credentials: Credentials, now: float | None = None
) -> dict[str, str]:
    """The headers that sign a request to ``url`` (Signature Version 4, service s3)."""
    parts = urlsplit(url)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    headers = {"host": parts.netloc, "x-amz-date": stamp, "x-amz-content-sha256": payload_sha256}
    if credentials.token:
        headers["x-amz-security-token"] = credentials.token
    pairs = [pair.partition("=") for pair in parts.query.split("&") if pair]
    # the canonical query encodes each name and value once: a value the URL carries encoded
    # (prefix=d%2Ftrain.lmdb) is decoded first, or its signature is not the one S3 computes
    encoded = sorted((quote(unquote(k), safe=_SAFE), quote(unquote(v), safe=_SAFE)) for k, _, v in pairs)
    query = "&".join(f"{k}={v}" for k, v in encoded)
    names = sorted(headers)
    canonical = "\n".join(
        [
            method,
            parts.path or "/",  # already encoded by the caller (object_url)
            query,
            "".join(f"{name}:{headers[name]}\n" for name in names),
            ";".join(names),
            payload_sha256,
        ]
    )
    scope = f"{stamp[:8]}/{credentials.region}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = _hmac(("AWS4" + credentials.secret).encode(), stamp[:8])
    for word in (credentials.region, "s3", "aws4_request"):
        key = _hmac(key, word)
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    headers["Authorization"] = (
        f"AWS4-HMAC-SHA256 Credential={credentials.key_id}/{scope}, "
        f"SignedHeaders={';'.join(names)}, Signature={signature}"
    )
    return headers


class S3Multipart:
    """One multipart upload to ``bucket``/``key``."""

    def __init__(self, bucket: str, key: str, credentials: Credentials, timeout_s: float = 120.0) -> None:
        self.bucket, self.key, self.credentials, self.timeout_s = bucket, key, credentials, timeout_s
        self.upload_id: str | None = None

    def url(self, query: str = "", key: str | None = None) -> str:
        path_key = quote(self.key if key is None else key, safe="/" + _SAFE)
        if self.credentials.endpoint:
            base = f"{self.credentials.endpoint.rstrip('/')}/{self.bucket}/{path_key}"
        else:
            base = f"https://{self.bucket}.s3.{self.credentials.region}.amazonaws.com/{path_key}"
        return base + (f"?{query}" if query else "")

    def request(self, method: str, url: str, body: bytes = b"") -> tuple[int, bytes, dict[str, str]]:
        headers = signed_headers(method, url, hashlib.sha256(body).hexdigest(), self.credentials)
        headers.pop("host")
        request = urllib.request.Request(url, data=body if method in ("PUT", "POST") else None, method=method)
        for name, value in headers.items():
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as answer:
                return answer.status, answer.read(), dict(answer.headers)
        except urllib.error.HTTPError as exc:
            text = exc.read().decode(errors="replace")
            code = re.search(r"<Code>(\w+)</Code>", text)
            raise S3RequestError(
                f"{method} {url.split('?')[0]}: HTTP {exc.code} {code.group(1) if code else text[:200]}",
                exc.code,
                code.group(1) if code else "",
            ) from None

    def create(self) -> str:
        _, body, _ = self.request("POST", self.url("uploads="))
        found = re.search(rb"<UploadId>([^<]+)</UploadId>", body)
        if not found:
            raise S3RequestError(f"{self.url()}: no UploadId in the answer to CreateMultipartUpload", 200, "")
        self.upload_id = found.group(1).decode()
        return self.upload_id

    def put_part(self, number: int, data: bytes) -> str:
        """Part ``number`` (from 1); its ETag, for complete()."""
        query = f"partNumber={number}&uploadId={quote(self.upload_id or '', safe=_SAFE)}"
        _, _, headers = self.request("PUT", self.url(query), data)
        etag = {k.lower(): v for k, v in headers.items()}.get("etag")
        if not etag:
            raise S3RequestError(f"{self.url()}: part {number} was answered without an ETag", 200, "")
        return etag

    def complete(self, etags: list[str]) -> str:
        """The object made of the parts; its ETag (S3 shows the object only now)."""
        body = "".join(
            f"<Part><PartNumber>{n}</PartNumber><ETag>{escape(etag)}</ETag></Part>"
            for n, etag in enumerate(etags, start=1)
        )
        xml = f"<CompleteMultipartUpload>{body}</CompleteMultipartUpload>".encode()
        query = f"uploadId={quote(self.upload_id or '', safe=_SAFE)}"
        _, answer, _ = self.request("POST", self.url(query), xml)
        if b"<Error>" in answer:  # S3 may answer 200 and an error in the body
            code = re.search(rb"<Code>(\w+)</Code>", answer)
            raise S3RequestError(f"{self.url()}: the upload was not completed: {answer[:300]!r}", 200, str(code))
        found = re.search(rb"<ETag>([^<]+)</ETag>", answer)
        self.upload_id = None
        return html.unescape(found.group(1).decode()) if found else ""

    def abort(self) -> bool:
        """Remove the upload and its parts (nothing of it stays in the bucket); False if S3 knows no
        such upload (completed, or removed already)."""
        if self.upload_id is None:
            return False
        query = f"uploadId={quote(self.upload_id, safe=_SAFE)}"
        try:
            self.request("DELETE", self.url(query))
        except S3RequestError as exc:
            if exc.status != 404:  # already gone
                raise
            return False
        finally:
            self.upload_id = None
        return True

    def pending(self) -> list[Pending]:
        """The uploads started and not completed whose key begins with this one's (S3 lists by prefix)."""
        base = self.url(key="").rstrip("/")
        _, body, _ = self.request("GET", f"{base}/?prefix={quote(self.key, safe=_SAFE)}&uploads=")
        found = []
        for upload in re.findall(rb"<Upload>(.*?)</Upload>", body, re.DOTALL):
            fields = {name: re.search(rb"<" + name + rb">([^<]*)</" + name + rb">", upload) for name in _LISTED}
            key, upload_id, initiated = (html.unescape(m.group(1).decode()) if m else "" for m in fields.values())
            found.append(Pending(key, upload_id, initiated.replace("T", " ")[:16] + " UTC" if initiated else None))
        return found


_LISTED = (b"Key", b"UploadId", b"Initiated")


@dataclass(frozen=True)
class Pending:
    """An upload started and not completed: its key, id and start time (``2026-12-05 09:30 UTC``)."""

    key: str
    upload_id: str
    initiated: str | None
