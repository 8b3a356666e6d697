# SPDX-License-Identifier: MIT
"""``imagefolder-lmdb info FILE.lmdb`` (or ``info OUTDIR``, each of its datasets): what a dataset
holds, read from its meta without decoding an image (a URL, ``s3://bucket/train.lmdb``: the meta by
the ranged reads ``verify`` makes; a prefix, ``s3://bucket/imagenet``: each ``.lmdb`` object under
it): classes with their image counts, how images are labelled (one class each, or several) and
their fields with their types, image sizes, why records were stored as they were, the settings and
source it was made with, its format version, file size and creation time. ``--json``: the meta
document's own fields, and the counts.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from imagefolder_lmdb.board.label_origin import origin_lines
from imagefolder_lmdb.commands.info_views import view_infos
from imagefolder_lmdb.reader.urls import is_url

# Beside verify, which takes the same paths (issue 42: the steps import nothing of this command).
from imagefolder_lmdb.verify.datasets import InfoError, datasets_in
from imagefolder_lmdb.verify.revisions import is_pointer_document, revision_lines, revisions_info
from imagefolder_lmdb.writing.hold_points import hold_point

if TYPE_CHECKING:
    from imagefolder_lmdb.reader.format import Meta

#: Classes listed one per line up to this many; beyond, the first and last few (``--json``: all).
LISTED_CLASSES = 30


def read_dataset(path: str) -> dict[str, Any]:
    """The meta document of ``path`` with the counts info adds: images per class, image sizes, the
    file's size and path. The meta is checked as the reader checks it (its arrays against their
    checksums, every label a class): a damaged one is refused in a line naming the damage, never
    counted (issue 57); the records are ``verify``'s."""
    from imagefolder_lmdb.reader import FormatError, decode_meta
    from imagefolder_lmdb.reader.handles import guarded, open_env_readonly
    from imagefolder_lmdb.remote import is_url

    if is_url(path):
        return read_remote(path)
    if os.path.isdir(path) or not os.path.isfile(path):
        raise InfoError(f"{path}: no such file")
    try:  # as the reader opens a file: a short copy or a damaged page is named, never a crash (SIGBUS)
        env = open_env_readonly(path)
        try:
            with guarded(env.begin(), path, lock=False) as txn:
                meta = None if names_a_pointer(txn.get(b"meta/json")) else decode_meta(txn, path)
        finally:
            env.close()
    except (FormatError, ValueError) as exc:
        raise InfoError(str(exc)) from None
    if meta is None:  # a split changed since its conversion (issue 58): its revisions
        return revisions_info(path)
    return {"file": os.path.abspath(path), "file_bytes": os.path.getsize(path), **counted(meta)}


def names_a_pointer(raw: bytes | memoryview | None) -> bool:
    """Whether a meta/json is a pointer's (a split of revisions); anything unreadable is left to the
    reader's checks, which name the damage."""
    try:
        return raw is not None and is_pointer_document(json.loads(bytes(raw)))
    except (ValueError, RecursionError):
        return False


def read_remote(url: str) -> dict[str, Any]:
    """``read_dataset`` of an object: its meta by the ranged reads ``verify URL`` makes (no record read)."""
    from imagefolder_lmdb.reader import FormatError
    from imagefolder_lmdb.reader.revision_format import POINTER_VERSION
    from imagefolder_lmdb.remote.client import allow_in_process
    from imagefolder_lmdb.remote.revisions import remote_split
    from imagefolder_lmdb.remote.urls import RemoteSettings, RemoteURLError, check_url

    allow_in_process()  # this command forks no workers: obstore may run in it
    try:
        check_url(url)
        remote = remote_split(url, RemoteSettings())  # a split file, or a pointer's current revision (issue 58)
    except (FormatError, OSError, RemoteURLError) as exc:
        raise InfoError(str(exc)) from None
    # a pointer read and checked by remote_split is of the pointer's one version
    revision = {} if remote.revision is None else {"revision": remote.revision, "pointer_version": POINTER_VERSION}
    return {"file": url, "file_bytes": remote.size, "etag": remote.etag, **revision, **counted(remote.meta)}


def counted(meta: Meta) -> dict[str, Any]:
    """What info shows of a checked meta: images per class (multi-label: the images that carry it),
    image sizes, and the document's own fields (its checksums left out)."""
    document = dict(meta.document)
    document.pop("checksums", None)
    labels = meta.labels if meta.label_lists is None else meta.label_lists.values
    labels = labels[labels >= 0]  # a split without labels (version 6): -1 each, no class carried
    counts = np.bincount(labels, minlength=len(meta.classes))  # every label a class: decode_meta checked
    return {
        "images_per_class": {name: int(n) for name, n in zip(meta.classes, counts.tolist(), strict=True)},
        "image_sizes": size_summary(meta.sizes),
        **document,
    }


def size_summary(sizes: np.ndarray) -> dict[str, Any]:
    """Smallest, median and largest width and height of the stored images."""
    if not sizes.size:
        return {}
    return {
        axis: {"min": int(column.min()), "median": int(np.median(column)), "max": int(column.max())}
        for axis, column in (("width", sizes[:, 0]), ("height", sizes[:, 1]))
    }


def format_words(info: dict[str, Any]) -> str:
    """``imagefolder-lmdb format version 1``; for a split of revisions, the pointer's version, the path's own."""
    if "pointer_version" in info:
        return f"{info.get('format')} format version {info['pointer_version']}, a split of revisions"
    return f"{info.get('format')} format version {info.get('version')}"


def text_lines(info: dict[str, Any]) -> list[str]:
    """A dataset described in a few lines, its classes one per line."""
    source, stats = info.get("source", {}), info.get("stats", {})
    storage = ", ".join(f"{reason} {n:,}" for reason, n in stats.get("storage", {}).items())
    encode = info.get("settings", {}).get("encode", {})
    sizes = info["image_sizes"]
    lines = [
        f"{info['file']}: {info['length']:,} images, {len(info['classes']):,} classes, "
        f"{info['file_bytes'] / 1e6:.1f} MB ({format_words(info)})",
        f"  created: {info.get('created')} by {info.get('tool', {}).get('name')} {info.get('tool', {}).get('version')}",
        f"  source: {source.get('path')}"
        + (f" (inside: {source['inside']})" if source.get("inside") else "")
        + f", {source.get('images', 0):,} images, {stats.get('source_bytes', 0) / 1e6:.1f} MB",
        f"  stored: {storage}; skipped: {len(stats.get('skipped', []))}",
        "  settings: " + ", ".join(f"{key} {value}" for key, value in encode.items()),
        *label_lines(info),
    ]
    if sizes:
        lines.append(
            "  image sizes: "
            + ", ".join(f"{axis} {s['min']}..{s['max']} (median {s['median']})" for axis, s in sizes.items())
        )
    lines += revision_lines(info) if "revisions" in info else []  # a split of revisions (issue 58)
    if "revision" in info and "revisions" not in info:  # one at a URL: its current revision, read alone
        lines.append(f"  a split of revisions: revision {info['revision']} (current), read through its pointer")
    return lines + class_lines(info["images_per_class"])


def label_lines(info: dict[str, Any]) -> list[str]:
    """How images are labelled and their fields (absent from files before version 4: one class each, none)."""
    kind = info.get("label_kind")
    fields = info.get("fields", [])
    listed = ", ".join(f"{field['name']} ({field['type']})" for field in fields) if fields else "none"
    labels = LABEL_KIND_WORDS.get(kind, "one class per image") if isinstance(kind, str) else "one class per image"
    return [f"  labels: {labels}; fields: {listed}", *origin_lines(info)]


#: How images are labelled, by meta/json's label_kind (absent: one class each).
LABEL_KIND_WORDS = {
    "multi": "several classes per image (a list each)",
    "none": "none (a split without labels: each target -1; the classes are the other splits')",
}


def class_lines(counts: dict[str, int]) -> list[str]:
    """``index name images`` per class; the first and last few of a long list."""
    rows = [f"    {i:>5} {name} {n:,}" for i, (name, n) in enumerate(counts.items())]
    if len(rows) > LISTED_CLASSES:
        rows = [*rows[:10], f"    ... {len(rows) - 15:,} more (--json lists every class)", *rows[-5:]]
    return ["  classes (index, name, images):", *rows]


def main(argv: Sequence[str] | None = None, prog: str = "imagefolder-lmdb info") -> int:
    """Describe each dataset named; exit 1 (one line) for a path that holds none."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="a .lmdb file, a folder of them (OUTDIR), a URL (s3://b/x.lmdb) or a prefix of them (s3://b/imagenet)",
    )
    parser.add_argument("--json", action="store_true", help="the meta's fields and the counts, as JSON")
    parser.add_argument("--union", action="store_true", help="the datasets named read as one (LMDBDataset([A, B]))")
    parser.add_argument("--classes", metavar="LIST", help="only these classes (a,b,c, FILE, imagenet1k, FILE.lmdb)")
    parser.add_argument("--allow-mixed", action="store_true", help="a union of files that differ (allow_mixed=True)")
    args = parser.parse_args(argv)
    if any(is_url(path) for path in args.paths):
        from imagefolder_lmdb.remote.client import allow_in_process

        allow_in_process()  # this command forks no workers: obstore may run in it (a prefix is listed)
    try:
        named = {path: datasets_in(path) for path in args.paths}
        files = [file for found in named.values() for file in found]
        if args.union or args.classes is not None:  # a view: what LMDBDataset(files, classes=...) gives
            return show_views(view_infos(files, args.union, args.classes, args.allow_mixed), args.json)
        infos = [read_dataset(file) for file in files]
    except InfoError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 1
    hold_point("info-read")  # the Ctrl-C tests' moment (a Ctrl-C here, as anywhere: cli.py's dispatch)
    if args.json:
        several = len(infos) > 1 or any(files != [path] for path, files in named.items())  # a folder, a prefix
        print(json.dumps({"datasets": infos} if several else infos[0], indent=1))
        return 0
    for number, info in enumerate(infos):
        print("\n".join(([""] if number else []) + text_lines(info)))
    return 0


def view_lines(info: dict[str, Any]) -> list[str]:
    """A view described in a few lines, its classes one per line (info's own list of them)."""
    view = info["view"]
    made = "a union" if view["union"] else "a class subset"
    if view["classes"] is not None:
        listed = view["classes"] if isinstance(view["classes"], str) else ",".join(view["classes"])
        made += f", classes {listed}"
    return [
        f"view of {' + '.join(view['files'])} ({made}): {info['length']:,} images, {len(info['classes']):,} classes",
        "  images from each file: " + ", ".join(f"{file} {n:,}" for file, n in info["images_per_file"].items()),
        *label_lines(info),
        *class_lines(info["images_per_class"]),
    ]


def show_views(infos: list[dict[str, Any]], as_json: bool) -> int:
    """Print the views info describes (``--union``, ``--classes``)."""
    if as_json:
        print(json.dumps({"views": infos} if len(infos) > 1 else infos[0], indent=1))
        return 0
    for number, info in enumerate(infos):
        print("\n".join(([""] if number else []) + view_lines(info)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
