# SPDX-License-Identifier: MIT
"""The ``imagefolder-lmdb`` command: the repository's command scripts as subcommands.

    imagefolder-lmdb verify FILE.lmdb [--full] ...        scripts/verify.py
    imagefolder-lmdb convert-legacy IN.lmdb OUT.lmdb ...  scripts/convert_legacy.py
    imagefolder-lmdb add-locations FILE.lmdb ...          scripts/add_locations.py

Each subcommand is the ``main`` of the module those scripts call, with the same options and exit codes.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from importlib import metadata

PROG = "imagefolder-lmdb"
#: subcommand: (module of the package, one line of help)
COMMANDS = {
    "verify": (
        "imagefolder_lmdb.steps.verify",
        "check a dataset: meta, counts, a decoded sample (--full: every record's CRC-32)",
    ),
    "convert-legacy": ("imagefolder_lmdb.convert_legacy", "convert a folder2lmdb (pickle) LMDB to imagefolder-lmdb v1"),
    "add-locations": ("imagefolder_lmdb.add_locations", "record where each record lies in a file, for one-read access"),
}


def overview() -> argparse.ArgumentParser:
    """The parser of ``imagefolder-lmdb --help``; each subcommand parses its own arguments."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Check and convert imagefolder-lmdb datasets (one LMDB file per split).",
        epilog=f"`{PROG} COMMAND --help` shows a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {metadata.version(PROG)}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command, (_, summary) in COMMANDS.items():
        commands.add_parser(command, help=summary, add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    """The console script: run a subcommand, or show the overview (and exit 2 on a bad command)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in COMMANDS:
        module = importlib.import_module(COMMANDS[argv[0]][0])
        return int(module.main(argv[1:], prog=f"{PROG} {argv[0]}"))
    overview().parse_args(argv)  # --help, --version, or an error naming the commands: exits
    return 2


if __name__ == "__main__":
    sys.exit(main())
