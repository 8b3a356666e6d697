# SPDX-License-Identifier: MIT
"""``imagefolder-lmdb gc OUT [--keep N]``: for each split of revisions in OUT (or the one named), keep
its newest N revisions (default: every one its pointer keeps) and remove the data files in
``<split>.lmdb.d/`` that no kept revision names. A reader pinned to a dropped revision stops at its
next open, with one line naming the missing file; run it when no job reads those revisions."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence


def splits_in(path: str) -> list[str]:
    """The splits ``path`` names: the file itself, or each ``*.lmdb`` of a folder that has a data folder."""
    from imagefolder_lmdb.reader.revision_format import data_folder

    if not os.path.isdir(path):
        return [path]
    names = sorted(name for name in os.listdir(path) if name.endswith(".lmdb"))
    return [os.path.join(path, name) for name in names if os.path.isdir(data_folder(os.path.join(path, name)))]


def main(argv: Sequence[str] | None = None, prog: str = "imagefolder-lmdb gc") -> int:
    """Collect each split's unnamed data files; exit 1 with one line for a path that holds no split of revisions."""
    from imagefolder_lmdb.reader import FormatError
    from imagefolder_lmdb.writing.revision_files import NotRevisionsError, collect_garbage

    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    parser.add_argument("path", metavar="OUT", help="a conversion's OUTDIR, or one OUT/<split>.lmdb")
    parser.add_argument("--keep", type=int, help="revisions to keep, newest first (default: all the pointer keeps)")
    args = parser.parse_args(argv)
    splits = splits_in(args.path)
    if not splits:
        print(f"{prog}: {args.path}: no split of revisions (no <split>.lmdb.d folder)", file=sys.stderr)
        return 1
    for split in splits:
        try:
            done = collect_garbage(split, args.keep)
        except (NotRevisionsError, FormatError, OSError, ValueError) as exc:
            print(f"{prog}: {exc}", file=sys.stderr)
            return 1
        dropped = f"revisions {', '.join(map(str, done.dropped))} dropped; " if done.dropped else ""
        print(f"{split}: {dropped}{len(done.removed)} files removed; revisions kept: {done.kept or 'none (one file)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
