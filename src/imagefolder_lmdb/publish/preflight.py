# SPDX-License-Identifier: MIT
"""Before a conversion to a URL starts: can this bucket be written with these credentials?

    python -m imagefolder_lmdb.publish.preflight s3://bucket/prefix [--replacing PLANNED.json]

A missing bucket, refused credentials or an endpoint that does not answer are named here, in a
second, not after hours of converting. The prefix is listed (a missing bucket: S3 servers answer
an upload into one with 403 or 404, which says neither, so the listing tells); with AWS keys in the
environment a multipart upload is also started on a key of the prefix and aborted at once, which
only credentials allowed to write can do. Through obstore (profiles, instance roles, ``gs://``,
``az://``) nothing can be written without leaving it: the listing alone is checked.

A process of its own, as the upload is: obstore never runs in ``convert``'s process (remote/client.py).
With ``--replacing``, once the conversion is planned: instead, each split's object under the prefix is held
to the replace rule (publish/replace_rule.py) against the meta the planned file will have (a JSON
object: split -> that meta's ``made_from``, ``settings`` and ``source``), so that a dataset made from
another source or with other settings is refused without --overwrite before converting, not after.

Exit 0: ready; 1: the problem on stderr, one line each.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from imagefolder_lmdb.publish.s3_multipart import Credentials, S3Multipart, S3RequestError
from imagefolder_lmdb.remote.listing import listed, store_and_prefix

USAGE = "python -m imagefolder_lmdb.publish.preflight s3://bucket/prefix [--replacing PLANNED.json]"
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


def check_replaceable(destination: str, planned: dict[str, dict[str, Any]]) -> None:
    """PublishError naming each split whose object at ``destination`` the conversion planned
    (``planned``: split -> the meta the local file will have, as far as the replace rule reads it)
    may not replace without --overwrite: made from another source or with other settings."""
    from imagefolder_lmdb.publish.replace_rule import PublishError, existing, replace_problem

    problems = []
    for split, local in planned.items():
        url = f"{destination.rstrip('/')}/{split}.lmdb"
        found = existing(url)
        problem = None if found is None else replace_problem(url, found, local)
        if problem is not None:
            problems.append(problem)
    if problems:
        raise PublishError("\n".join(problems))


def main(argv: list[str] | None = None) -> int:
    from imagefolder_lmdb.publish.step_process import run_step

    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (1, 3) or (len(args) == 3 and args[1] != "--replacing"):
        print(f"usage: {USAGE}", file=sys.stderr)
        return 2

    def step() -> None:
        if len(args) == 3:  # the second call of a publish: the bucket was checked by the first
            check_replaceable(args[0], json.loads(Path(args[2]).read_text()))
        else:
            check_writable(args[0])

    return run_step(step)


if __name__ == "__main__":
    from imagefolder_lmdb.remote.leaving import leave

    leave(main())
