# SPDX-License-Identifier: MIT
"""Before a conversion to a URL starts: can this bucket be written with these credentials?

    python -m imagefolder_lmdb.publish.preflight s3://bucket/prefix

A missing bucket, refused credentials or an endpoint that does not answer are named here, in a
second, not after hours of converting. The prefix is listed (a missing bucket: S3 servers answer
an upload into one with 403 or 404, which says neither, so the listing tells); with AWS keys in the
environment a multipart upload is also started on a key of the prefix and aborted at once, which
only credentials allowed to write can do. Through obstore (profiles, instance roles, ``gs://``,
``az://``) nothing can be written without leaving it: the listing alone is checked.

A process of its own, as the upload is: obstore never runs in ``convert``'s process (remote/client.py).
Exit 0: ready; 1: the problem on stderr, one line.
"""

from __future__ import annotations

import sys

from imagefolder_lmdb.publish.s3_multipart import Credentials, S3Multipart, S3RequestError
from imagefolder_lmdb.remote.listing import listed, store_and_prefix

#: The key the write check starts (and aborts) an upload on, under the prefix.
PROBE_NAME = ".imagefolder-lmdb-write-check"


def check_writable(destination: str) -> None:
    """OSError or ValueError naming why ``destination`` (``s3://bucket/prefix``) cannot take an upload."""
    listed(destination.rstrip("/"))
    credentials = Credentials.from_environment()
    if credentials is None or not destination.lower().startswith(("s3://", "s3a://")):
        return
    store_url, prefix = store_and_prefix(destination)
    probe = S3Multipart(store_url.split("://", 1)[1], f"{prefix}/{PROBE_NAME}".lstrip("/"), credentials)
    try:
        probe.create()
    except S3RequestError as exc:
        raise PermissionError(
            f"{destination}: these credentials may not write there ({exc.code or f'HTTP {exc.status}'} to a "
            "multipart upload): give keys allowed to write to this bucket (s3:PutObject), or another bucket"
        ) from None
    finally:
        probe.abort()  # nothing of the check stays (a refused create left nothing to abort)


def main(argv: list[str] | None = None) -> int:
    from imagefolder_lmdb.remote.client import allow_in_process

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m imagefolder_lmdb.publish.preflight s3://bucket/prefix", file=sys.stderr)
        return 2
    allow_in_process()  # a process of its own that forks nothing
    try:
        check_writable(args[0])
    except KeyboardInterrupt:
        return 130
    except (OSError, ValueError) as exc:
        print(str(exc), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    from imagefolder_lmdb.remote.leaving import leave

    leave(main())
