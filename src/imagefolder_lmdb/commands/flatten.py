# SPDX-License-Identifier: MIT
"""``imagefolder-lmdb flatten PATH [OUT]``: a split of revisions (a split changed since its conversion,
docs/FORMAT.md version 5) written as one file of today's format: its current revision (or
``--revision N``), records copied as stored (no decode, no encode), the meta a fresh conversion of
the changed source writes. Without OUT the file replaces the pointer at PATH; ``imagefolder-lmdb gc``
then removes the data files beside it (readers still open on them keep reading until then)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None, prog: str = "imagefolder-lmdb flatten") -> int:
    """Flatten one split; exit 1 with one line for a path that is not a split of revisions."""
    from imagefolder_lmdb.reader import FormatError
    from imagefolder_lmdb.writing.revision_files import NotRevisionsError, flatten

    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    parser.add_argument("path", metavar="PATH", help="OUT/<split>.lmdb, a split of revisions")
    parser.add_argument("output", metavar="OUT", nargs="?", help="the file to write (default: over PATH)")
    parser.add_argument("--revision", type=int, help="the revision to write (default: the current one)")
    args = parser.parse_args(argv)
    try:
        done = flatten(args.path, args.output, args.revision)
    except (NotRevisionsError, FormatError, OSError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 1
    print(f"{done.output}: revision {done.revision}, {done.records:,} images, one file")
    return 0


if __name__ == "__main__":
    sys.exit(main())
