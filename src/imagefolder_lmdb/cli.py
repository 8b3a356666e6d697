# SPDX-License-Identifier: MIT
"""The ``imagefolder-lmdb`` command: the repository's command scripts as subcommands.

    imagefolder-lmdb verify FILE.lmdb [--full] ...        scripts/verify.py
    imagefolder-lmdb convert-legacy IN.lmdb OUT.lmdb ...  scripts/convert_legacy.py
    imagefolder-lmdb add-locations FILE.lmdb ...          scripts/add_locations.py

Each subcommand is that script's ``main``, with the same options and exit codes. The scripts import
each other by top-level names (``from dataset import ...``), as the Snakemake rules run them, and
they stay unchanged: the wheel ships them in ``imagefolder_lmdb/_scripts/`` (pyproject.toml), and
this process, once it runs a subcommand, puts that folder first on ``sys.path``, as
``python scripts/verify.py`` has scripts/ there. So those names exist only inside this command's
process; the package installs no top-level module.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from importlib import metadata
from types import ModuleType

PROG = "imagefolder-lmdb"
#: subcommand: (module of scripts/, one line of help)
COMMANDS = {
    "verify": ("verify", "check a dataset: meta, counts, a decoded sample (--full: every record's CRC-32)"),
    "convert-legacy": ("convert_legacy", "convert a folder2lmdb (pickle) LMDB to imagefolder-lmdb v1"),
    "add-locations": ("add_locations", "record where each record lies in a file, for one-read access"),
}


def scripts_module(name: str) -> ModuleType:
    """The shipped script ``name``, imported as the scripts import each other. ``dataset`` is the
    package's own module under its top-level name too: one module, so one per-process table of
    open files (py-lmdb opens a path once per process)."""
    from imagefolder_lmdb._scripts import dataset

    sys.modules.setdefault("dataset", dataset)
    folder = os.path.dirname(dataset.__file__)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    return importlib.import_module(name)


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
        module = scripts_module(COMMANDS[argv[0]][0])
        return int(module.main(argv[1:], prog=f"{PROG} {argv[0]}"))
    overview().parse_args(argv)  # --help, --version, or an error naming the commands: exits
    return 2


if __name__ == "__main__":
    sys.exit(main())
