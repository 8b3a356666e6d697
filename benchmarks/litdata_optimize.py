"""LitData's ``optimize()`` on an ImageFolder tree: each file's bytes and its label, 2 workers, as
the peer of ``imagefolder-lmdb convert`` in benchmarks/bench_front_door.py (run with LitData's own
venv's python; it imports nothing of this repository).

    /work/litdata-venv/bin/python benchmarks/litdata_optimize.py SOURCE OUTPUT
    /work/litdata-venv/bin/python benchmarks/litdata_optimize.py SOURCE s3://bucket/prefix

An ``s3://`` OUTPUT is LitData's own upload: each chunk is written to its local cache
(``$TMPDIR/chunks``), then sent by obstore's ``put_async`` (a multipart upload per file) with the
endpoint and keys boto3 finds (``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ...). LitData builds
that obstore store with client options of its own, which do not read ``AWS_ALLOW_HTTP``: for an
``http://`` endpoint (a local S3 server) ``allow_http`` is added to them here, nothing else.
"""

from __future__ import annotations

import os
import sys

from litdata import optimize
from litdata.streaming import downloader

if os.environ.get("AWS_ALLOW_HTTP", "").lower() == "true":
    downloader._OBSTORE_CLIENT_OPTIONS["allow_http"] = True  # an http:// endpoint (a local S3 server)


def sample(item: tuple[str, int]) -> dict[str, object]:
    """One file's bytes as they are, and its label (ImageFolder's: class folders in name order)."""
    path, label = item
    with open(path, "rb") as stream:
        return {"image": stream.read(), "label": label}


def listing(root: str) -> list[tuple[str, int]]:
    classes = sorted(entry.name for entry in os.scandir(root) if entry.is_dir())
    return [
        (os.path.join(root, name, file), label)
        for label, name in enumerate(classes)
        for file in sorted(os.listdir(os.path.join(root, name)))
    ]


if __name__ == "__main__":
    source, output = sys.argv[1], sys.argv[2]
    optimize(fn=sample, inputs=listing(source), output_dir=output, num_workers=2, chunk_bytes="64MB")
