# SPDX-License-Identifier: MIT
"""``convert DATA s3://…``'s two moments around the run: before it, the local folder to convert into
and the bucket checked (``url_outdir``); after it, each split uploaded (``published``). Here, above
``run/``, not in it: the run's steps know nothing of publishing, and each failure is the run's
ConvertError (run/launch.py), which the command line and ``convert()`` already report."""

from __future__ import annotations

import os
from typing import Any

from imagefolder_lmdb.run.launch import ConvertError, check_snakemake
from imagefolder_lmdb.run.outputs import SplitOutputs

PathLike = str | os.PathLike[str]


def url_outdir(
    source: Any, outdir: PathLike | None, work: PathLike | None
) -> tuple[str | None, PathLike | None, PathLike | None]:
    """Snakemake checked, and (the URL to publish to, the local outdir, work) for an ``outdir`` that is
    a URL: converted in a local folder first (publish/upload.py local_folder), once the bucket is
    known to take an upload (publish/preflight.py); else (None, outdir, work)."""
    from imagefolder_lmdb.remote import is_url

    check_snakemake()
    if not isinstance(outdir, str) or source is None or not is_url(outdir):
        return None, outdir, work
    import importlib.util

    if importlib.util.find_spec("obstore") is None:
        raise ConvertError(f"publishing to {outdir} needs obstore: pip install 'imagefolder-lmdb[convert,remote]'", 1)
    from imagefolder_lmdb.publish.upload import PublishError, check_destination, local_folder

    try:
        folder = local_folder(outdir, source, None if work is None else os.fspath(work))
        check_destination(outdir)  # a missing bucket or refused keys: said before converting
    except (PublishError, ValueError) as exc:
        raise ConvertError(str(exc), 1) from None
    return outdir, folder, None


def published(outputs: dict[str, SplitOutputs], destination: str | None, overwrite: bool) -> dict[str, SplitOutputs]:
    """``outputs``, each split uploaded to ``destination`` and checked first (a URL OUTDIR)."""
    if destination is not None:
        after_conversion(outputs, destination, overwrite)
    return outputs


def after_conversion(outputs: dict[str, SplitOutputs], destination: str, overwrite: bool) -> None:
    """The last step for a URL OUTDIR: each split uploaded, as ConvertError on failure (130 / 143
    for an interrupt, the way back's exit codes)."""
    from imagefolder_lmdb.publish.upload import PublishError, UploadInterrupted, publish_splits

    try:
        publish_splits({name: str(split.dataset) for name, split in outputs.items()}, destination, overwrite)
    except UploadInterrupted as exc:
        raise ConvertError(
            f"stopped while publishing to {destination} (above); the same command uploads again without converting",
            exc.code,
        ) from None
    except PublishError as exc:
        raise ConvertError(str(exc), 1) from None
