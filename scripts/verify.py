"""Rule verify, also a command of its own: check a finished dataset with the reader.

    python scripts/verify.py results/train.lmdb [--full] [--sample 64] [--report r.json] [--contact c.png]
    imagefolder-lmdb verify results/train.lmdb [...]      (the same, installed with pip)

Checks that the meta is complete and consistent with the records, decodes a random sample (every
record with ``--full``), compares each decoded record's checksum and size with the meta, writes a
JSON report and a contact sheet of the sample labelled with class names. Exits 0 when everything
holds, 1 otherwise, after a one-line summary that names the first problem (a damaged record by index
and relative path). Run it after copying a dataset to another machine or folder: it needs the file
and this folder's scripts, nothing of the run that made it, and opens the file read-only without a
lock, so it creates nothing beside it and works on read-only filesystems.
"""

import argparse
import io
import json
import logging
import os
import random
import sys
from collections import Counter
from typing import Any, TextIO

import lmdb
from PIL import Image, ImageDraw, ImageFont
from tqdm import tqdm

from dataset import META_KEYS, FormatError, LMDBReader, checksum, record_key, shared_env
from meta_document import document_problems
from workflow_io import hold_point, run_rule

log = logging.getLogger("imagefolder_lmdb.verify")

CELL = 160  # contact sheet thumbnail box, pixels
LABEL_HEIGHT = 18
WORDS_HEIGHT = 14  # a second caption line, the class's words, for files that have them
MAX_SHEET_IMAGES = 64
LISTED_FAILURES = 20


def structure_problems(ds: LMDBReader) -> list[str]:
    """Disagreements between the meta and the records, found without decoding any image."""
    problems = []
    n = len(ds)
    document = ds.meta_document
    with shared_env(ds.path).begin() as txn:
        meta_keys = sum(txn.get(key) is not None for key in META_KEYS.values())  # older files: fewer
        entries = txn.stat()["entries"]
        if entries != n + meta_keys:
            problems.append(f"{entries - meta_keys} records stored, the meta describes {n}")
        if n and (txn.get(record_key(0)) is None or txn.get(record_key(n - 1)) is None):
            problems.append(f"records 0 or {n - 1} missing: keys are not 0..{n - 1}")
    if any(not 0 <= t < len(ds.classes) for t in ds.targets):
        problems.append("labels outside the class range")
    return problems + document_problems(document)


def check_record(ds: LMDBReader, index: int) -> str | None:
    """Problem with record ``index`` (checksum, decoding, size), or None."""
    assert ds.checksums is not None and ds.image_sizes is not None
    try:
        data = ds.get_bytes(index)
    except (lmdb.Error, FormatError) as exc:
        return f"record {index} ({ds.samples[index][0]}): cannot be read: {exc}"
    if checksum(data) != int(ds.checksums[index]):
        return f"record {index} ({ds.samples[index][0]}): checksum mismatch, the stored bytes changed"
    try:
        image = Image.open(io.BytesIO(data))
        image = image.convert("RGB")
    except Exception as exc:  # noqa: BLE001 - any decoder failure is a finding, not a crash
        return f"record {index} ({ds.samples[index][0]}): does not decode: {exc}"
    width, height = (int(v) for v in ds.image_sizes[index])
    if image.size != (width, height):
        return f"record {index} ({ds.samples[index][0]}): decoded {image.size}, meta says {(width, height)}"
    return None


def sample_indices(n: int, sample: int, full: bool, seed: int) -> list[int]:
    if full:
        return list(range(n))
    return sorted(random.Random(seed).sample(range(n), min(sample, n)))


def verify(
    path: str, sample: int = 64, full: bool = False, seed: int = 0
) -> tuple[dict[str, Any], LMDBReader | None, list[int]]:
    """The report, the opened dataset (None if it could not be opened) and the checked indices."""
    report: dict[str, Any] = {"path": os.path.abspath(path), "ok": False, "problems": []}
    try:
        ds = LMDBReader(path)  # LMDBDataset's code without torch's Dataset base: no 2 s torch import
    except (FormatError, FileNotFoundError) as exc:
        report["problems"].append(str(exc))
        return report, None, []
    document = ds.meta_document
    problems = structure_problems(ds)
    indices = sample_indices(len(ds), sample, full, seed)
    # progress on stderr (the rule's log); a sample of 64 is over before the bar would show
    checked = tqdm(indices, desc="verify", unit="img", mininterval=5.0, disable=len(indices) < 1000, file=sys.stderr)
    failures = [p for p in (check_record(ds, i) for i in checked) if p is not None]
    problems.extend(failures[:LISTED_FAILURES])
    if len(failures) > LISTED_FAILURES:
        problems.append(f"... and {len(failures) - LISTED_FAILURES} more records with problems")
    stats = document["stats"]
    report.update(
        {
            "ok": not problems,
            "problems": problems,
            "format": f"{document['format']} v{document['version']}",
            "images": len(ds),
            "classes": len(ds.classes),
            "class_counts": class_counts(ds),
            "warnings": empty_class_warnings(ds),
            "file_bytes": os.path.getsize(path) if os.path.isfile(path) else None,
            "source": document["source"],
            "class_list": document.get("class_list"),  # files before class lists shared: none
            "source_bytes": stats["source_bytes"],
            "stored_bytes": stats["stored_bytes"],
            "stored_to_source_ratio": round(stats["stored_bytes"] / stats["source_bytes"], 4)
            if stats["source_bytes"]
            else None,
            "storage": stats["storage"],
            "skipped": stats["skipped"],
            "settings": document["settings"],
            "created": document["created"],
            "checked": {
                "mode": "all" if full else "sample",
                "records": len(indices),
                "failed": len(failures),
                "seed": seed,
            },
        }
    )
    return report, ds, indices


def class_counts(ds: LMDBReader) -> dict[str, int]:
    counts = Counter(ds.targets)
    return {name: counts.get(label, 0) for label, name in enumerate(ds.classes)}


def empty_class_warnings(ds: LMDBReader) -> list[str]:
    """Classes without a record: every image skipped as bad, or none in this split's source (a
    class of the shared class list that this split lacks). Their label never occurs."""
    skipped = {entry["path"].split("/", 1)[0] for entry in ds.meta_document["stats"]["skipped"]}
    origin = ds.meta_document.get("class_list", {}).get("origin", "")
    return [
        f"class {name!r} has no images: all of its files were skipped as bad (see skipped)"
        if name in skipped
        else f"class {name!r} has no images in this split (it is in the class list, {origin})"
        for name, count in class_counts(ds).items()
        if count == 0
    ]


def fit_into_cell(image: Image.Image) -> Image.Image:
    image = image.copy()
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
            image, target = ds[index]
            thumb = fit_into_cell(image)
            sheet.paste(thumb, (x + (CELL - thumb.width) // 2, y + (CELL - thumb.height) // 2))
            lines = [f"{index}: {ds.classes[target]}", *([words[target]] if words else [])]
        except Exception:  # noqa: BLE001 - a broken record is reported; show the gap
            lines = [f"{index}: UNREADABLE"]
        for number, line in enumerate(lines):
            draw.text((x + 3, y + CELL + 2 + number * WORDS_HEIGHT), fitted(line, draw, font), fill="black", font=font)
    if not shown:
        draw.text((4, 4), "no images", fill="black", font=font)
    temporary = output + ".incomplete.png"
    sheet.save(temporary)
    os.replace(temporary, output)


def summary_line(report: dict[str, Any]) -> str:
    if "images" not in report:
        return f"FAIL {report['path']}: {report['problems'][0]}"
    status = "OK" if report["ok"] else "FAIL"
    checked = report["checked"]
    line = (
        f"{status} {report['path']}: {report['images']} images, {report['classes']} classes, "
        f"{report['stored_bytes'] / 1e6:.1f} MB stored ({report['stored_to_source_ratio']}x source), "
        f"{checked['records']} records checked ({checked['mode']}), {len(report['skipped'])} skipped"
    )
    if report["problems"]:
        line += f"; first problem: {report['problems'][0]}"
    return line


def write_report(report: dict[str, Any], output: str) -> None:
    temporary = output + ".incomplete"
    with open(temporary, "w", encoding="utf-8") as stream:
        json.dump(report, stream, indent=1, ensure_ascii=False)
        stream.write("\n")
    os.replace(temporary, output)


def verify_or_report_crash(
    path: str, sample: int, full: bool, seed: int
) -> tuple[dict[str, Any], LMDBReader | None, list[int]]:
    """``verify``, with anything that breaks while checking (a damaged B-tree, a meta document that
    lacks a field) reported as a problem instead of a traceback."""
    try:
        return verify(path, sample=sample, full=full, seed=seed)
    except Exception as exc:  # noqa: BLE001 - for a checker, every failure is a finding
        report = {"path": os.path.abspath(path), "ok": False, "problems": [f"{type(exc).__name__}: {exc}"]}
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
    parser.add_argument("path", help="the .lmdb file")
    parser.add_argument("--full", action="store_true", help="decode and checksum every record")
    parser.add_argument("--sample", type=int, default=64, help="records checked without --full (default 64)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random sample")
    parser.add_argument("--report", help="write the JSON report here")
    parser.add_argument("--contact", help="write a contact sheet PNG here")
    args = parser.parse_args(argv)
    return 0 if run(args.path, args.sample, args.full, args.seed, args.report, args.contact) else 1


def rule_main(smk: Any, stream: TextIO) -> None:
    report, ds, indices = verify(smk.input[0], smk.params.sample, smk.params.all, smk.params.seed)
    log.info("%s", json.dumps(report, indent=1))
    print(summary_line(report), file=sys.__stderr__, flush=True)
    if not report["ok"]:
        raise RuntimeError("verification failed:\n  " + "\n  ".join(report["problems"]))
    write_report(report, smk.output.report)
    hold_point("verify")  # one output written, the other not yet
    contact_sheet(ds, indices, smk.output.contact)


if __name__ == "__main__":
    if "snakemake" in globals():
        run_rule(rule_main, snakemake)  # type: ignore[name-defined]  # noqa: F821
    else:
        sys.exit(main())
