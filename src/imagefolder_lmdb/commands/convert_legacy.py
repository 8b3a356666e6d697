"""Rewrite a LEGACY folder2lmdb LMDB (pickled ``(image bytes, label)`` values) as imagefolder-lmdb v1.

    python scripts/convert_legacy.py IN.lmdb OUT.lmdb [--classes classes.txt] [--quality 95]
                                     [--reencode auto|always] [--on-error fail|skip]
    imagefolder-lmdb convert-legacy IN.lmdb OUT.lmdb [...]   (the same, installed with pip)

The input is the layout of the widely copied folder2lmdb recipe (Efficient-PyTorch): keys ``b"0"``,
``b"1"``, ... (not zero-padded) holding pickled ``(image bytes, label)`` tuples, plus pickled
``__keys__`` and/or ``__len__``; a single file or a directory holding ``data.mdb``. Its values are
read with the reader's restricted legacy unpickler (reader/legacy.py: bytes, integers and lists only; any other global
named in the file is refused), so converting an untrusted file runs no code from it.

The input is checked as the reader checks a file (reader/file_checks.py): its size against its LMDB
header before it is mapped, and the pages on the way to each key before LMDB follows them, so a
copy cut short or damaged is refused with a message, never a crash.

Images are stored as the workflow stores them (src/imagefolder_lmdb/writing/reencode.py): valid RGB JPEGs byte for
byte, anything else re-encoded as ImageFolder's loader would see it. The file has no class names:
``--classes`` gives one name per line (line k names label k), otherwise classes are named by label
number, ``"0"``, ``"1"``, ... Each record's relative path is ``<class>/<legacy key>``.

OUT appears only when complete (written under ``OUT.incomplete``, then renamed). Exits 0 after a
one-line summary, or 1 with the reason.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import lmdb
import numpy as np

from imagefolder_lmdb.reader import (
    FORMAT_ID,
    META_KEYS,
    FormatError,
    Meta,
    guarded,
    is_legacy_pickle_lmdb,
    legacy_keys,
    legacy_record,
    open_env_readonly,
    record_key,
)
from imagefolder_lmdb.run.early_interrupt import say_interrupted
from imagefolder_lmdb.writing import meta_document
from imagefolder_lmdb.writing.encoded_columns import EncodedColumns
from imagefolder_lmdb.writing.hold_points import hold_point
from imagefolder_lmdb.writing.lmdb_writer import atomic_lmdb
from imagefolder_lmdb.writing.record_locations import store_meta_and_locations
from imagefolder_lmdb.writing.reencode import UNUSABLE_IMAGE, Encoded, EncodeSettings, encode_image

#: The writer meta/json's ``tool`` names (its version: writing/meta_document.py's TOOL_VERSION).
TOOL = "imagefolder-lmdb-convert-legacy"
LAYOUT = "folder2lmdb-pickle"


class LegacyConvertError(Exception):
    """The input cannot be converted; the message says why and what to do."""


@dataclass
class RecordColumns(EncodedColumns):
    """Per-record meta gathered while converting, in output order: each record's legacy key too."""

    keys: list[str] = field(default_factory=list)

    def add(self, key: str, label: int, encoded: Encoded, source_size: int) -> None:
        self.keys.append(key)
        self.add_encoded(label, encoded, source_size)


def read_classes(path: str | None, labels: list[int]) -> list[str]:
    """Class names: the lines of ``path`` (label k = line k), or the label numbers as text."""
    needed = max(labels, default=-1) + 1
    if path is None:
        return [str(label) for label in range(needed)]
    with open(path, encoding="utf-8") as stream:
        names = [line.strip() for line in stream if line.strip()]
    if len(names) < needed:
        raise LegacyConvertError(f"{path} names {len(names)} classes, but the labels go up to {needed - 1}")
    if len(set(names)) != len(names):
        raise LegacyConvertError(f"{path} names a class twice")
    if any("/" in name or "\0" in name for name in names):
        raise LegacyConvertError(f"{path}: class names must not contain '/' or NUL")
    return names


def legacy_input_keys(env: lmdb.Environment, path: str) -> list[bytes]:
    """The legacy record keys, after checking that ``path`` really is a legacy file."""
    with guarded(env.begin(), path, lock=False) as txn:  # LMDB follows no damaged page
        if txn.get(META_KEYS["json"]) is not None:
            raise LegacyConvertError(f"{path} is already an {FORMAT_ID} dataset; nothing to convert")
        if not is_legacy_pickle_lmdb(txn):
            raise LegacyConvertError(f"{path} has no __len__ or __keys__ key: not a folder2lmdb LMDB")
        return legacy_keys(txn, path)


def input_bytes(path: str) -> int:
    """Size of the legacy data, to size the output (a directory holds data.mdb)."""
    return os.path.getsize(os.path.join(path, "data.mdb") if os.path.isdir(path) else path)


def convert_records(
    env: lmdb.Environment,
    path: str,
    keys: list[bytes],
    settings: EncodeSettings,
    append: Callable[[bytes, bytes], None],
) -> RecordColumns:
    """Encode every legacy record in key order, passing ``(key, value)`` of the output to ``append``."""
    columns = RecordColumns()
    with guarded(env.begin(), path, lock=False) as txn:
        for position, key in enumerate(keys):
            if position == len(keys) // 2:
                hold_point("convert-legacy-record")  # the Ctrl-C tests' moment: OUT half written
            name = key.decode("utf-8", "backslashreplace")
            what = f"{path}: legacy record {position} (key {name!r})"
            image, label = legacy_record(txn.get(key), what)
            try:
                encoded = encode_image(image, settings)
            except UNUSABLE_IMAGE as exc:
                if settings.on_error == "fail":
                    raise LegacyConvertError(
                        f"{what}: the image is unusable ({type(exc).__name__}: {exc}); "
                        "pass --on-error skip to leave such records out"
                    ) from exc
                columns.skipped.append({"index": position, "path": name, "reason": f"{type(exc).__name__}: {exc}"})
                continue
            append(record_key(len(columns.labels)), encoded.value)
            columns.add(name, label, encoded, len(image))
    return columns


def build_meta(columns: RecordColumns, classes: list[str], source: str, images: int, settings: EncodeSettings) -> Meta:
    """The meta of the converted records, written by :data:`TOOL` (writing/meta_document.py's builder)."""
    return meta_document.build_meta(
        tool=TOOL,
        classes=classes,
        storage=columns.storage,
        settings={"encode": settings.recorded()},
        source={
            "path": os.path.abspath(source),
            "root": None,  # records were legacy keys, not files under a folder
            "layout": LAYOUT,
            "images": images,
            "classes": len(classes),
            "ignored_files": 0,
        },
        source_bytes=columns.source_bytes,
        stored_bytes=columns.stored_bytes,
        skipped=columns.skipped,
        labels=columns.labels,
        sizes=np.array(columns.sizes, dtype=np.uint32),
        crc32=columns.crc32,
        paths=[f"{classes[label]}/{key}" for label, key in zip(columns.labels, columns.keys, strict=True)],
    )


def convert(source: str, output: str, settings: EncodeSettings, classes_path: str | None = None) -> Meta:
    """Convert ``source`` into ``output``, which appears only once it is complete."""
    if os.path.exists(output):
        raise LegacyConvertError(f"{output} exists; remove it or choose another output path")
    env = open_env_readonly(source)
    try:
        keys = legacy_input_keys(env, source)
        with atomic_lmdb(output, expected_bytes=input_bytes(source)) as writer:
            columns = convert_records(env, source, keys, settings, writer.append)
            classes = read_classes(classes_path, columns.labels)
            meta = build_meta(columns, classes, source, len(keys), settings)
            store_meta_and_locations(writer, meta)
    finally:
        env.close()
    return meta


def summary_line(output: str, meta: Meta) -> str:
    stats = meta.document["stats"]
    storage = ", ".join(f"{n} {reason}" for reason, n in stats["storage"].items()) or "no images"
    return (
        f"OK {output}: {meta.length} images, {len(meta.classes)} classes ({storage}), "
        f"{len(stats['skipped'])} skipped, {stats['stored_bytes'] / 1e6:.1f} MB stored"
    )


def encode_defaults() -> dict[str, Any]:
    """The schema's encode defaults (config/schema.yaml, the one home of defaults)."""
    from imagefolder_lmdb.config.schema import load_schema, section_defaults
    from imagefolder_lmdb.run.workflow_folder import workflow_folder

    return section_defaults(load_schema(str(workflow_folder() / "config" / "schema.yaml")), "encode")


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    defaults = encode_defaults()  # the rest of the settings, as a config without an encode section has them
    parser = argparse.ArgumentParser(
        prog=prog, description="Convert a legacy folder2lmdb (pickle) LMDB to imagefolder-lmdb v1."
    )
    parser.add_argument("input", help="the legacy LMDB (file, or directory holding data.mdb)")
    parser.add_argument("output", help="the .lmdb file to write; must not exist")
    parser.add_argument("--classes", help="text file, one class name per line; line k names label k")
    parser.add_argument(
        "--quality",
        type=int,
        default=defaults["quality"],
        help=f"JPEG quality of re-encoded images (default {defaults['quality']})",
    )
    reencode, on_error = defaults["reencode"], defaults["on_error"]
    parser.add_argument("--reencode", choices=("auto", "always"), default=reencode, help="as encode.reencode")
    parser.add_argument("--on-error", choices=("fail", "skip"), default=on_error, help="as encode.on_error")
    args = parser.parse_args(argv)
    given = {"reencode": args.reencode, "quality": args.quality, "on_error": args.on_error}
    settings = EncodeSettings.from_config({**defaults, **given})
    existed = os.path.exists(args.output)  # then convert refuses it: an OUT there later is not this run's
    try:
        meta = convert(args.input, args.output, settings, args.classes)
    except (LegacyConvertError, FormatError, FileNotFoundError, lmdb.Error) as exc:
        print(f"FAIL {args.input}: {exc}", file=sys.stderr, flush=True)
        return 1
    except KeyboardInterrupt:
        return say_interrupted([interrupted_line(args.output, existed)])
    print(summary_line(args.output, meta), flush=True)
    return 0


def interrupted_line(output: str, existed: bool) -> str:
    """Ctrl-C while converting: OUT appears only when complete (atomic_lmdb removes the partial file),
    so this run wrote none, unless the interruption came after it was complete."""
    if not existed and os.path.exists(output):
        return f"interrupted after {output} was complete: it is whole (imagefolder-lmdb verify {output} checks it)."
    return f"interrupted: {output} not written (it appears only when complete). Run the same command again."


if __name__ == "__main__":
    sys.exit(main())
