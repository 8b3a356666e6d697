# SPDX-License-Identifier: MIT
"""``convert DATA s3://…``'s two moments around the run: before it, the local folder to convert into
and the bucket checked (``url_outdir``); after it, each split uploaded (``published``). Here, above
``run/``, not in it: the run's steps know nothing of publishing, and each failure is the run's
ConvertError (run/launch.py), which the command line and ``convert()`` already report."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from imagefolder_lmdb.run.launch import ConvertError, check_snakemake
from imagefolder_lmdb.run.outputs import SplitOutputs
from imagefolder_lmdb.work.paths import RunPaths

if TYPE_CHECKING:
    from imagefolder_lmdb.run.invocation import Run

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
    if outdir.lower().startswith(("http://", "https://")):  # a web server serves files; nothing writes to it here
        raise ConvertError(
            f"{outdir}: an http(s) URL is read, never written: publish to s3://, gs:// or az:// (then read the "
            "split over https if the bucket serves it), or convert to a folder and copy it to the web server",
            1,
        )
    from imagefolder_lmdb.extras import installed, missing_extra

    if not installed("obstore"):
        raise ConvertError(missing_extra(f"publishing to {outdir}", "obstore", "convert,remote"), 1)
    from imagefolder_lmdb.publish.upload import PublishError, check_destination, local_folder

    try:
        folder = local_folder(outdir, source, None if work is None else os.fspath(work))
        check_destination(outdir)  # a missing bucket or refused keys: said before converting
        take_published(outdir, folder)  # a change is applied on what is published (issue 58, point 7)
    except (PublishError, ValueError) as exc:
        raise ConvertError(str(exc), 1) from None
    return outdir, folder, None


def take_published(destination: str, folder: str) -> None:
    """The splits published under ``destination`` taken into the local ``folder`` where it differs
    (publish/sync.py), in a process of its own: obstore never runs in this one."""
    import subprocess
    import sys

    from imagefolder_lmdb.publish.upload import PublishError

    command = [sys.executable, "-m", "imagefolder_lmdb.publish.sync", destination, folder]
    done = subprocess.run(command, stderr=subprocess.PIPE, text=True, check=False)
    if done.returncode in (130, -2):  # the terminal's Ctrl-C reached it
        raise KeyboardInterrupt
    if done.returncode != 0:
        raise PublishError(done.stderr.strip() or f"{destination}: taking the published splits down failed")


def replaceable(run: Run, destination: str | None, overwrite: bool) -> tuple[Run, str | None]:
    """``run``, once the objects it will upload to ``destination`` may take what it makes: one made
    from another source or with other settings is refused without --overwrite here, before the
    conversion (hours, on ImageNet), by the rule the upload applies again at the end; and where it
    uploads (nowhere for a dry run, which makes nothing)."""
    from imagefolder_lmdb.publish.live import arm

    arm(run, destination, overwrite)  # without a merge: data files uploaded as they finish, if this returns
    if run.dry_run:
        return run, None
    if destination is None or overwrite or run.config is None:
        return run, destination
    from imagefolder_lmdb.publish.upload import PublishError, check_destination

    try:
        check_destination(destination, planned_documents(run.config))
    except PublishError as exc:
        raise ConvertError(str(exc), 1) from None
    return run, destination


def planned_documents(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each split's meta as far as the replace rule reads it (publish/replace_rule.py): what the
    plan recorded it is made from (work/<split>/made_from.json), its encode settings and source."""
    # here, not at the top: made_from imports the sources, and importing the package imports this module
    from imagefolder_lmdb.config.schema import load_schema, section_defaults
    from imagefolder_lmdb.run.made_from import CHANGED_GROUPS, read_json_or_none
    from imagefolder_lmdb.run.workflow_folder import workflow_folder

    schema = load_schema(str(workflow_folder() / "config" / "schema.yaml"))
    encode = {**section_defaults(schema, "encode"), **config.get("encode", {})}  # the config names what differs
    paths = RunPaths(config["results"], config["work"])
    planned = {}
    for name, split in config["splits"].items():
        made_from = read_json_or_none(paths.made_from(name))
        if isinstance(made_from, dict):
            made_from.pop(CHANGED_GROUPS, None)
            source = {"path": split["source"], "inside": split.get("root")}
            planned[name] = {"made_from": made_from, "settings": {"encode": encode}, "source": source}
    return planned


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
