"""Rule verify, also a command of its own: check a finished dataset with the reader.

    python scripts/verify.py results/train.lmdb [--full] [--sample 64] [--report r.json] [--contact c.png]
    imagefolder-lmdb verify results/train.lmdb [...]      (the same, installed with pip)

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

The checks are imagefolder_lmdb.verify.checks (also remote/verify.py's, a URL's); this module holds
the rule, the command, the hand-over of a URL to imagefolder_lmdb.remote and the contact sheet.
"""

import argparse
import io
import json
import logging
import os
import random
import sys
from functools import partial
from typing import Any, TextIO

from PIL import Image, ImageDraw, ImageFont

from imagefolder_lmdb.reader import LMDBReader
from imagefolder_lmdb.reader.urls import is_url
from imagefolder_lmdb.remote.client import allow_in_process
from imagefolder_lmdb.run.rule_runner import run_rule

# The checks moved to imagefolder_lmdb.verify.checks (issue 42); their names stay importable here.
from imagefolder_lmdb.verify.checks import *  # noqa: F403
from imagefolder_lmdb.verify.checks import verify_file
from imagefolder_lmdb.writing.atomic import atomic_file, json_text
from imagefolder_lmdb.writing.hold_points import hold_point

log = logging.getLogger("imagefolder_lmdb.verify")

CELL = 160  # contact sheet thumbnail box, pixels
LABEL_HEIGHT = 18
WORDS_HEIGHT = 14  # a second caption line, the class's words, for files that have them
MAX_SHEET_IMAGES = 64


def verify(
    path: str, sample: int = 64, full: bool = False, seed: int = 0
) -> tuple[dict[str, Any], LMDBReader | None, list[int]]:
    """The report, the opened dataset (None if it could not be opened) and the checked indices.
    A URL (s3://, gs://, az://, http(s)://) is checked by imagefolder_lmdb.remote.verify."""
    if is_url(path):
        from imagefolder_lmdb.remote.verify import verify_remote

        return verify_remote(path, sample, full, seed)
    return verify_file(path, sample, full, seed)


def thumbnail(data: bytes) -> Image.Image:
    """A record's image fitted into a cell. Decoded for the cell's size (a JPEG's DCT scaling, as
    PIL's ``thumbnail`` does with an image not yet loaded): the full decode is the check's, already done."""
    encoded = Image.open(io.BytesIO(data))
    encoded.draft("RGB", (CELL, CELL))
    image = encoded.convert("RGB")
    image.thumbnail((CELL, CELL))
    return image


def sheet_indices(indices: list[int], seed: int = 0) -> list[int]:
    """The checked records to show: all of a sample, a random few when every record was checked."""
    if len(indices) <= MAX_SHEET_IMAGES:
        return indices
    return sorted(random.Random(seed).sample(indices, MAX_SHEET_IMAGES))


def fitted(text: str, draw: ImageDraw.ImageDraw, font: ImageFont.ImageFont | ImageFont.FreeTypeFont) -> str:
    """``text``, cut short with "..." where it is wider than a cell's caption."""
    width = CELL - 6
    if draw.textlength(text, font=font) <= width:
        return text
    while text and draw.textlength(text + "...", font=font) > width:
        text = text[:-1]
    return text.rstrip(" ,") + "..."


def contact_sheet(ds: LMDBReader | None, indices: list[int], output: str) -> None:
    """A grid of the sampled images, each labelled ``index: class`` and, where the file has them,
    the class's words below (``tench, Tinca tinca``)."""
    shown = sheet_indices(indices)
    words = ds.class_words if ds is not None else None
    label_height = LABEL_HEIGHT + (WORDS_HEIGHT if words else 0)
    columns = max(1, min(8, len(shown)))
    rows = max(1, -(-len(shown) // columns))
    sheet = Image.new("RGB", (columns * CELL, rows * (CELL + label_height)), "white")
    draw = ImageDraw.Draw(sheet)
    font = ImageFont.load_default(size=12)
    for position, index in enumerate(shown):
        assert ds is not None
        x, y = (position % columns) * CELL, (position // columns) * (CELL + label_height)
        try:
            target = ds.targets[index]
            thumb = thumbnail(ds.get_bytes(index))
            sheet.paste(thumb, (x + (CELL - thumb.width) // 2, y + (CELL - thumb.height) // 2))
            lines = [f"{index}: {ds.classes[target]}", *([words[target]] if words else [])]
        except Exception:  # noqa: BLE001 - a broken record is reported; show the gap
            lines = [f"{index}: UNREADABLE"]
        for number, line in enumerate(lines):
            draw.text((x + 3, y + CELL + 2 + number * WORDS_HEIGHT), fitted(line, draw, font), fill="black", font=font)
    if not shown:
        draw.text((4, 4), "no images", fill="black", font=font)
    with atomic_file(output, "wb") as stream:
        sheet.save(stream, format="PNG")


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
    path: str, sample: int, full: bool, seed: int
) -> tuple[dict[str, Any], LMDBReader | None, list[int]]:
    """``verify``, with anything that breaks while checking (a damaged B-tree, a meta document that
    lacks a field) reported as a problem instead of a traceback."""
    try:
        return verify(path, sample=sample, full=full, seed=seed)
    except Exception as exc:  # noqa: BLE001 - for a checker, every failure is a finding
        where = path if is_url(path) else os.path.abspath(path)
        report = {"path": where, "ok": False, "problems": [f"{type(exc).__name__}: {exc}"]}
        return report, None, []


def run(path: str, sample: int, full: bool, seed: int, report_path: str | None, contact_path: str | None) -> bool:
    report, ds, indices = verify_or_report_crash(path, sample=sample, full=full, seed=seed)
    if report_path:
        write_report(report, report_path)
    if contact_path and ds is not None:
        contact_sheet(ds, indices, contact_path)
    print(summary_line(report), flush=True)
    return bool(report["ok"])


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    parser = argparse.ArgumentParser(prog=prog, description="Check an imagefolder-lmdb dataset.")
    parser.add_argument("path", help="the .lmdb file, or its URL (s3://, gs://, az://, http(s)://; pip extra [remote])")
    parser.add_argument("--full", action="store_true", help="decode and checksum every record")
    parser.add_argument("--sample", type=int, default=64, help="records checked without --full (default 64)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random sample")
    parser.add_argument("--report", help="write the JSON report here")
    parser.add_argument("--contact", help="write a contact sheet PNG here")
    args = parser.parse_args(argv)
    if is_url(args.path):
        allow_in_process()  # this command forks no workers: obstore may run in it
    from imagefolder_lmdb.verify.datasets import InfoError, datasets_in

    try:  # a folder (OUTDIR): each dataset in it, as ``info OUTDIR`` reads each
        paths = [args.path] if is_url(args.path) else datasets_in(args.path)
    except InfoError as exc:
        print(f"{prog or 'verify'}: {exc}", file=sys.stderr)
        return 1
    if len(paths) > 1 and (args.report or args.contact):
        parser.error(f"--report and --contact are one file's: give one .lmdb file of {args.path}")
    results = [run(path, args.sample, args.full, args.seed, args.report, args.contact) for path in paths]
    return 0 if all(results) else 1


def rule_main(smk: Any, stream: TextIO) -> None:
    from imagefolder_lmdb.config.step_settings import VerifySettings  # the workflow's (PyYAML): not the command's

    settings = VerifySettings.from_params(smk.params)
    report, ds, indices = verify(smk.input[0], settings.sample, settings.all, settings.seed)
    log.info("%s", json.dumps(report, indent=1))
    if not os.environ.get("IMAGEFOLDER_LMDB_MESSAGES"):  # under the progress board, the summary says it
        print(summary_line(report), file=sys.__stderr__, flush=True)
    if not report["ok"]:
        raise RuntimeError("verification failed:\n  " + "\n  ".join(report["problems"]))
    write_report(report, smk.output.report)
    hold_point("verify")  # one output written, the other not yet
    contact_sheet(ds, indices, smk.output.contact)


#: What the rule's script (scripts/verify.py) calls with ``snakemake``: ``rule_main`` with the rule's log set up.
run_in_rule = partial(run_rule, rule_main)


if __name__ == "__main__":
    sys.exit(main())
