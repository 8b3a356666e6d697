"""Record where each record lies in an imagefolder-lmdb file, so readers fetch it with one pread.

    python scripts/add_locations.py FILE.lmdb [FILE.lmdb ...] [--force]
    imagefolder-lmdb add-locations FILE.lmdb [...]   (the same, installed with pip)

The workflow does this itself (write_meta); run it on a file written before record locations
existed, or on a copy that the reader warns about (a compacting ``mdb_copy -c`` renumbers every
page; damaged locations). No record is rewritten: the file's pages are checked and its B-tree
walked (lmdb_pages: branch and leaf pages, the free list), the locations it holds are compared
with the walk (the command says what it finds), and, unless they match and carry their checksum,
one LMDB transaction stores ``meta/locations`` and the ``locations`` entry of ``meta/json``
(``--force``: also when they match). A file that is cut short or whose pages are damaged is
refused with nothing written. Run it while nothing reads the file. docs/FORMAT.md describes what
is stored.

Why some records stay unlocated: a write transaction copies every leaf page it changes to a new
place, and this one changes the leaves holding meta keys. Values stored inside such a leaf
(small ones; large values live on overflow pages that never move) would move under their
recorded offset, so they are marked "read through LMDB" instead. Afterwards the tree is walked
again and every recorded location is checked against it.
"""

from __future__ import annotations

import argparse
import sys

import lmdb

from imagefolder_lmdb.reader import FormatError
from imagefolder_lmdb.run.early_interrupt import say_interrupted
from imagefolder_lmdb.writing.hold_points import hold_point

# The library: writing/record_locations.py (issue 42); this module is the command.
from imagefolder_lmdb.writing.record_locations import Outcome, add_locations_to_file


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=prog,
        description=(
            "Record where each record lies in imagefolder-lmdb files (meta/locations), so that the "
            "reader fetches each with one pread, fast also on a cold cache. Rewrites no record; "
            "run it while nothing reads the file."
        ),
        epilog="See docs/FORMAT.md, section 'Record locations'.",
    )
    parser.add_argument("files", nargs="+", metavar="FILE.lmdb", help="a dataset file (results/<split>.lmdb)")
    parser.add_argument(
        "--force", action="store_true", help="walk the file and write its locations again even if they match it"
    )
    args = parser.parse_args(argv)
    status = 0
    for number, path in enumerate(args.files):
        try:
            hold_point("add-locations-file", number)  # the Ctrl-C tests' moment: the files before it done
            outcome = add_locations_to_file(path, force=args.force)
        except (FormatError, ValueError, OSError, lmdb.Error) as exc:
            print(f"FAIL {path}: {exc}", file=sys.stderr, flush=True)
            status = 1
            continue
        except KeyboardInterrupt:
            return say_interrupted([interrupted_line(path)])
        print(outcome_lines(path, outcome), flush=True)
    return status


def interrupted_line(path: str) -> str:
    """Ctrl-C while ``path`` is walked or written: its locations are one LMDB transaction, in whole or
    not at all, and the files before it are done (a rerun finds them recorded and writes nothing)."""
    return (
        f"interrupted while recording the locations of {path}: they are written whole or not at all "
        "(one LMDB transaction). Run the same command again: files already done are left as they are."
    )


def outcome_lines(path: str, outcome: Outcome) -> str:
    """What the command says about one file: what it found, then what the file holds now."""
    located = outcome.located
    lines = []
    if outcome.finding is not None:
        lines.append(f"{path}: {outcome.finding.text}; writing them again")
    elif outcome.written:
        lines.append(f"{path}: the recorded locations match the file; writing them again (--force)")
    lines.append(
        f"OK {path}: {located.located:,} of {located.records:,} records located "
        f"(the others are read through LMDB), LMDB transaction {located.txnid}"
        + ("" if outcome.written else "; they were recorded already, nothing written (they match the file)")
    )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
