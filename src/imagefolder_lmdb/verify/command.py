"""``imagefolder-lmdb verify``: check finished datasets (files, OUTDIRs, URLs, as ``info`` takes them).

    python scripts/verify.py results/train.lmdb [--full] [--sample 64] [--report r.json] [--contact c.png]
    imagefolder-lmdb verify results/train.lmdb [...]      (the same, installed with pip)
    imagefolder-lmdb verify results/train.lmdb --since 3  (a split of revisions: what came after revision 3)

Checks that the meta is complete and consistent with the records, decodes a random sample (every
record with ``--full``), compares each decoded record's checksum and size with the meta, writes a
JSON report and a contact sheet of the sample labelled with class names. Exits 0 when everything
holds, 1 otherwise, after a one-line summary that names the first problem (a damaged record by index
and relative path). Run it after copying a dataset to another machine or folder: it needs the file
and the package (or scripts/ of a checkout), nothing of the run that made it, and opens the file read-only without a
lock, so it creates nothing beside it and works on read-only filesystems.

Before LMDB touches the file, its size is compared with its LMDB header and its pages are walked
and checked with plain reads (reader/lmdb_check.py; with ``--full`` every value's overflow header
too): a file cut short or with damaged LMDB pages is reported, never followed into a crash. The
record locations (meta/locations) are compared with that walk, and each checked record's bytes at
its recorded location with LMDB's own bytes, so a wrong location is told from a changed record.

The checks are verify/checks.py (a URL's: verify/remote.py); the contact sheet verify/contact_sheet.py;
rule verify (steps/verify.py) runs the same ``verify`` on the file it made.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from typing import Any

from imagefolder_lmdb.reader import LMDBReader
from imagefolder_lmdb.reader.urls import is_url
from imagefolder_lmdb.verify.checks import verify_file
from imagefolder_lmdb.verify.contact_sheet import contact_sheet
from imagefolder_lmdb.writing.atomic import atomic_file, json_text
from imagefolder_lmdb.writing.hold_points import hold_point


def verify(
    path: str, sample: int = 64, full: bool = False, seed: int = 0, since: int | None = None
) -> tuple[dict[str, Any], LMDBReader | None, list[int]]:
    """The report, the opened dataset (None if it could not be opened) and the checked indices.
    A URL (s3://, gs://, az://, http(s)://) is checked by verify/remote.py (the [remote] extra).
    ``since``: of a split of revisions, only what came after that revision (verify/revisions.py)."""
    if since is not None and (is_url(path) or not _is_split_of_revisions(path)):
        return since_refused(path, since), None, []
    if is_url(path):
        from imagefolder_lmdb.verify.remote import verify_remote

        return verify_remote(path, sample, full, seed)
    from imagefolder_lmdb.verify.revisions import verify_revisions

    if _is_split_of_revisions(path):  # a split changed since its conversion (issue 58): its current revision
        return verify_revisions(path, sample, full, seed, since=since)
    return verify_file(path, sample, full, seed)


def _is_split_of_revisions(path: str) -> bool:
    from imagefolder_lmdb.verify.revisions import is_split_of_revisions

    return is_split_of_revisions(path)


def since_refused(path: str, since: int) -> dict[str, Any]:
    """The report of ``--since`` given for what has no revisions to check after another (one line)."""
    where = path if is_url(path) else os.path.abspath(path)
    what = "a URL" if is_url(path) else "not a split of revisions (a single file, never changed)"
    problem = f"{where}: --since {since} checks a split of revisions read in place, and this is {what}; "
    problem += "verify it without --since"
    return {"path": where, "ok": False, "problems": [problem]}


def ratio_to_source(report: dict[str, Any]) -> str:
    """`` (0.98x source)``, or nothing where the source's size is unknown (0 bytes)."""
    ratio = report.get("stored_to_source_ratio")
    return "" if ratio is None else f" ({ratio}x source)"


def summary_line(report: dict[str, Any]) -> str:
    if "images" not in report:
        return f"FAIL {report['path']}: {report['problems'][0]}"
    status = "OK" if report["ok"] else "FAIL"
    checked = report["checked"]
    line = (
        f"{status} {report['path']}: {report['images']} images, {report['classes']} classes, "
        f"{report['stored_bytes'] / 1e6:.1f} MB stored{ratio_to_source(report)}, "
        f"{checked['records']} records checked ({checked['mode']}), {len(report['skipped'])} skipped"
    )
    if report["problems"]:
        line += f"; first problem: {report['problems'][0]}"
    return line


def write_report(report: dict[str, Any], output: str) -> None:
    with atomic_file(output, encoding="utf-8") as stream:
        stream.write(json_text(report, indent=1))
        stream.write("\n")


def verify_or_report_crash(
    path: str, sample: int, full: bool, seed: int, since: int | None = None
) -> tuple[dict[str, Any], LMDBReader | None, list[int]]:
    """``verify``, with anything that breaks while checking (a damaged B-tree, a meta document that
    lacks a field) reported as a problem instead of a traceback."""
    try:
        return verify(path, sample=sample, full=full, seed=seed, since=since)
    except Exception as exc:  # noqa: BLE001 - for a checker, every failure is a finding
        where = path if is_url(path) else os.path.abspath(path)
        report = {"path": where, "ok": False, "problems": [f"{type(exc).__name__}: {exc}"]}
        return report, None, []


def run(
    path: str, sample: int, full: bool, seed: int, outputs: tuple[str | None, str | None], since: int | None = None
) -> bool:
    report_path, contact_path = outputs
    report, ds, indices = verify_or_report_crash(path, sample=sample, full=full, seed=seed, since=since)
    if report_path:
        write_report(report, report_path)
    if contact_path and ds is not None:
        contact_sheet(ds, indices, contact_path)
    print(summary_line(report), flush=True)
    return bool(report["ok"])


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Check each dataset named, as ``info`` takes paths; exit 0 when every one holds, else 1."""
    parser = argparse.ArgumentParser(prog=prog, description="Check an imagefolder-lmdb dataset.")
    parser.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="a .lmdb file, a folder of them (OUTDIR), a URL (s3://, gs://, az://, http(s)://; pip extra [remote]) "
        "or a prefix of them (s3://b/imagenet); several: each checked in turn",
    )
    parser.add_argument("--full", action="store_true", help="decode and checksum every record")
    parser.add_argument("--sample", type=int, default=64, help="records checked without --full (default 64)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random sample")
    parser.add_argument("--report", help="write the JSON report here (one dataset only)")
    parser.add_argument("--contact", help="write a contact sheet PNG here (one dataset only)")
    parser.add_argument(
        "--since",
        type=int,
        metavar="N",
        help="of a split of revisions: check only what came after revision N (its new data files, a sample "
        "of the samples read from them) besides the pointer's own checks",
    )
    args = parser.parse_args(argv)
    if any(is_url(path) for path in args.paths):
        from imagefolder_lmdb.remote.client import allow_in_process  # (asyncio): only for a URL

        allow_in_process()  # this command forks no workers: obstore may run in it
    from imagefolder_lmdb.verify.datasets import InfoError, datasets_in

    try:  # a folder (OUTDIR) or a prefix (s3://b/imagenet): each dataset in it, as ``info`` reads each
        paths = [found for path in args.paths for found in datasets_in(path)]
    except InfoError as exc:
        print(f"{prog or 'verify'}: {exc}", file=sys.stderr)
        return 1
    if len(paths) > 1 and (args.report or args.contact):
        parser.error(one_file_outputs(args.paths))
    results = []
    for number, path in enumerate(paths):
        try:
            hold_point("verify-file", number)  # the Ctrl-C tests' moment: the files before it checked
            results.append(run(path, args.sample, args.full, args.seed, (args.report, args.contact), args.since))
        except KeyboardInterrupt:
            return interrupted_while_checking(path)
    return 0 if all(results) else 1


def one_file_outputs(named: list[str]) -> str:
    """Why --report and --contact take one dataset: each is one file, which a second dataset's would
    overwrite."""
    if len(named) == 1:  # a folder (OUTDIR) or a prefix holding several
        return f"--report and --contact are one file's: give one .lmdb file of {named[0]}"
    return (
        f"--report and --contact are one file's, and {len(named)} paths are named (each dataset's would "
        "overwrite the last): give one .lmdb file, or verify each with its own --report"
    )


def interrupted_while_checking(path: str) -> int:
    """Ctrl-C while ``path`` is checked: one line (no verdict on it; verify changes no dataset, and its
    report appears whole or not at all), a second Ctrl-C meanwhile ignored; exit status 130. Before
    any file, cli.py's dispatch says run/early_interrupt.py's words for verify."""
    line = f"interrupted while checking {path}: no verdict on it (verify changes no dataset). "
    line += "Run the same command again to check."
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        print(("\n" if sys.stderr.isatty() else "") + line, file=sys.stderr, flush=True)
    finally:
        signal.signal(signal.SIGINT, previous)
    return 128 + signal.SIGINT


if __name__ == "__main__":
    sys.exit(main())
