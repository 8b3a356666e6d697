# SPDX-License-Identifier: MIT
"""The ``imagefolder-lmdb`` command: the packaged workflow and the repository's command scripts.

    imagefolder-lmdb convert SOURCE OUTDIR [...]          the workflow (imagefolder_lmdb.convert)
    imagefolder-lmdb verify FILE.lmdb [--full] ...        scripts/verify.py
    imagefolder-lmdb convert-legacy IN.lmdb OUT.lmdb ...  scripts/convert_legacy.py
    imagefolder-lmdb add-locations FILE.lmdb ...          scripts/add_locations.py

Each of the last three is the ``main`` of the module those scripts call, with the same options and
exit codes; ``convert`` runs Snakemake as a child whose output it relays (src/imagefolder_lmdb/run/launch.py).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from importlib import metadata

PROG = "imagefolder-lmdb"
#: subcommand: (module of the package[:its main function], one line of help)
COMMANDS = {
    "convert": (
        "imagefolder_lmdb.cli:convert_main",
        "convert an ImageFolder, archive or shards into OUTDIR/<split>.lmdb (the packaged workflow)",
    ),
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
        module, _, function = COMMANDS[argv[0]][0].partition(":")
        command = getattr(importlib.import_module(module), function or "main")
        return int(command(argv[1:], prog=f"{PROG} {argv[0]}"))
    overview().parse_args(argv)  # --help, --version, or an error naming the commands: exits
    return 2


CONVERT_DESCRIPTION = """\
Convert an image dataset into one LMDB file per split, verified, for imagefolder_lmdb.LMDBDataset
(a drop-in for torchvision's ImageFolder: same samples, classes and labels).

  %(prog)s data/train out        out/train.lmdb, out/train.verify.json, out/train.contact.png
  %(prog)s data/val out --split val
  %(prog)s imagenet.tar out --layout ilsvrc-train --cores 16
  %(prog)s --configfile imagenet.yaml    every split and setting from one file

SOURCE is an ImageFolder (a folder of class folders of images), a .tar/.tar.gz/.tgz/.zip of one,
or for --layout webdataset/parquet the shards ('shards/*.tar', 'train-{0000..0099}.parquet').
Images are stored as they are where they are valid RGB JPEGs, re-encoded otherwise; every image is
decoded once to check it. Settings such as JPEG quality, resizing (short_side) or what to do with
a broken image are keys of a config file: see %(schema)s.

It runs the workflow packaged with imagefolder-lmdb, with Snakemake: one progress line per split
(images done/total, img/s, ETA, bad images), a summary at the end, and on failure what to do as
the last lines (--verbose: Snakemake's own output, every job). After a kill or a failure run the
same command again: it resumes, redoing only what is missing. The work folder (OUTDIR/work) can
be deleted after success.
"""


def convert_parser(prog: str) -> argparse.ArgumentParser:
    """``imagefolder-lmdb convert``'s options (the parameters of imagefolder_lmdb.convert)."""
    from imagefolder_lmdb.convert import WORKFLOW, layouts

    parser = argparse.ArgumentParser(
        prog=prog,
        usage=f"{prog} [options] SOURCE OUTDIR [-- SNAKEMAKE_OPTION ...]\n       {prog} [options] --configfile FILE",
        description=CONVERT_DESCRIPTION % {"prog": prog, "schema": WORKFLOW / "config" / "schema.yaml"},
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Options after -- go to Snakemake as they are, e.g. -- --dry-run, or -- --keep-going.",
    )
    parser.add_argument("source", nargs="?", metavar="SOURCE", help="the images: a folder, an archive or shards")
    parser.add_argument("outdir", nargs="?", metavar="OUTDIR", help="where SPLIT.lmdb and its reports go")
    parser.add_argument("--split", default="train", metavar="NAME", help="the split's name and file name (train)")
    parser.add_argument(
        "--layout",
        default="imagefolder",
        choices=layouts(),
        metavar="LAYOUT",
        help=f"how SOURCE is organised: {', '.join(layouts() or ['see the schema'])} (imagefolder); "
        "ilsvrc-val needs its labels: a --configfile",
    )
    parser.add_argument("--shards", type=int, metavar="N", help="encode jobs the split is cut into (16)")
    parser.add_argument("--work", metavar="FOLDER", help="work folder: manifests, parts, logs (OUTDIR/work)")
    parser.add_argument("--cores", metavar="N", help="CPU cores to use (all; with --profile, the profile's)")
    parser.add_argument(
        "--profile", metavar="PROFILE", help="slurm: submit every job to SLURM (the packaged profile); or your own"
    )
    parser.add_argument("--configfile", metavar="FILE", help="a whole config instead of SOURCE OUTDIR (run from here)")
    parser.add_argument(
        "--verbose", action="store_true", help="Snakemake's own output, every job, instead of the progress board"
    )
    return parser


def convert_main(argv: list[str], prog: str = f"{PROG} convert") -> int:
    """``imagefolder-lmdb convert``: check the arguments, then run Snakemake on the packaged workflow,
    showing its progress board and, on failure, what to do as the last lines."""
    from imagefolder_lmdb.convert import ConvertError, plan_run, run_options, split_entry
    from imagefolder_lmdb.run.launch import check_snakemake, run_snakemake, snakemake_command

    ours, passed = (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    parser = convert_parser(prog)
    args = parser.parse_args(ours)
    try:
        check_snakemake()
        options = run_options(args.cores, args.profile, passed)
        entry = None if args.source is None else split_entry(args.source, args.layout, args.shards)
        run = plan_run(entry, args.outdir, args.split, args.work, args.configfile, options)
        run_snakemake(snakemake_command(run.configfile, run.directory, run.options, args.verbose), args.verbose)
    except ConvertError as exc:
        if exc.returncode == 2:
            parser.error(str(exc))
        print(f"{prog}: {exc}", file=sys.stderr)
        return exc.returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
