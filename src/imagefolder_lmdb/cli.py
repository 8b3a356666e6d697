# SPDX-License-Identifier: MIT
"""The ``imagefolder-lmdb`` command: the packaged workflow and the repository's command scripts.

    imagefolder-lmdb convert SOURCE OUTDIR [...]          the workflow (imagefolder_lmdb.convert)
    imagefolder-lmdb verify FILE.lmdb [--full] ...        scripts/verify.py
    imagefolder-lmdb convert-legacy IN.lmdb OUT.lmdb ...  scripts/convert_legacy.py
    imagefolder-lmdb add-locations FILE.lmdb ...          scripts/add_locations.py

Each of the last three is the ``main`` of the module those scripts call, with the same options and
exit codes; ``convert`` runs Snakemake as a child whose output it relays (src/imagefolder_lmdb/run/launch.py),
its flags declared in src/imagefolder_lmdb/config/flags.py.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
from importlib import metadata
from typing import Any

from imagefolder_lmdb.config.flags import CONVERT_FLAGS
from imagefolder_lmdb.writing.hold_points import hold_point

# The crash tests' moment while the command still imports (a Ctrl-C here: run/early_interrupt.py).
hold_point("starting")

PROG = "imagefolder-lmdb"
#: subcommand: (module of the package[:its main function], one line of help)
COMMANDS = {
    "convert": (
        "imagefolder_lmdb.cli:convert_main",
        "convert an ImageFolder, archive or shards into OUTDIR/<split>.lmdb (the packaged workflow)",
    ),
    "verify": (
        "imagefolder_lmdb.verify.command",
        "check a dataset: meta, counts, a decoded sample (--full: every record's CRC-32)",
    ),
    "convert-legacy": (
        "imagefolder_lmdb.commands.convert_legacy",
        "convert a folder2lmdb (pickle) LMDB to imagefolder-lmdb v1",
    ),
    "add-locations": (
        "imagefolder_lmdb.commands.add_locations",
        "record where each record lies in a file, for one-read access",
    ),
    "info": (
        "imagefolder_lmdb.commands.info",
        "what a dataset (or each in OUTDIR) holds: classes, sizes, settings, source",
    ),
    "flatten": (
        "imagefolder_lmdb.commands.flatten",
        "write a split of revisions (a split changed since conversion) as one file again",
    ),
    "gc": (
        "imagefolder_lmdb.commands.gc",
        "remove the data files of a split of revisions that no kept revision names",
    ),
    "init-config": (
        "imagefolder_lmdb.commands.init_config",
        "print a commented config: folder, imagenet, kaggle, wds, parquet",
    ),
    "snakefile": ("imagefolder_lmdb.cli:snakefile_main", "print the packaged workflow's Snakefile path (for a module)"),
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


def snakefile_main(argv: list[str], prog: str = f"{PROG} snakefile") -> int:
    """Print the packaged Snakefile's path: ``module imagefolder_lmdb: snakefile: "<it>"``."""
    argparse.ArgumentParser(prog=prog, description=snakefile_main.__doc__).parse_args(argv)
    from imagefolder_lmdb.run.launch import SNAKEFILE

    print(SNAKEFILE)
    return 0


def output_closed() -> int:
    """The command's output was closed by its reader (``| head``): no traceback, the shell's code for
    SIGPIPE; stdout pointed at /dev/null, so that Python's own flush at exit finds nothing to fail."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 128 + signal.SIGPIPE


def main(argv: list[str] | None = None) -> int:
    """The console script: run a subcommand, or show the overview (and exit 2 on a bad command)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in COMMANDS:
        return run_command(argv[0], argv[1:])
    overview().parse_args(argv)  # --help, --version, or an error naming the commands: exits
    return 2


def run_command(name: str, argv: list[str]) -> int:
    """Import and run the command ``name``. A Ctrl-C it does not answer itself (while its modules
    import, before its work, or at any moment of a command that changes nothing, as info) ends with
    its own words (run/early_interrupt.py's ``BEFORE_WORK``) and 130, never a traceback."""
    from imagefolder_lmdb.remote.leaving import exit_code, leave_if_started, obstore_started
    from imagefolder_lmdb.run.early_interrupt import BEFORE_WORK, say_interrupted, started

    module, _, function = COMMANDS[name][0].partition(":")
    try:
        command = getattr(importlib.import_module(module), function or "main")
        started()  # from here a Ctrl-C is the command's to handle
        code = int(command(argv, prog=f"{PROG} {name}"))
    except KeyboardInterrupt:
        code = say_interrupted(BEFORE_WORK[name])
    except BrokenPipeError:  # `info ... | head` closed the pipe: what it wanted is printed
        return output_closed()
    except BaseException as exc:
        if not obstore_started():
            raise
        code = exit_code(exc)
    return leave_if_started(code)  # a command that used obstore: never through its runtime's teardown


CONVERT_DESCRIPTION = """\
Convert an image dataset into one LMDB file per split, verified, for imagefolder_lmdb.LMDBDataset
(a drop-in for torchvision's ImageFolder: same samples, classes and labels).

  %(prog)s data out             data/train, data/val -> out/train.lmdb, out/val.lmdb, one class list
  %(prog)s /data/imagenet out   the ILSVRC2012 tars and devkit there, or Kaggle's zip
  %(prog)s data/train out --quality 90 --set encode.check=header
  %(prog)s data/test out --split test   one split, numbered as out/'s others are
  %(prog)s --configfile imagenet.yaml   every split and setting from one file

SOURCE is an ImageFolder (a folder of class folders of images), a folder of split folders (train/,
val/, test/), a .tar/.tar.gz/.tgz/.zip of either, or for --layout webdataset/parquet the shards
('shards/*.tar', 'train-{0000..0099}.parquet'). Images are stored as they are where they are
valid RGB JPEGs, re-encoded otherwise; every image is decoded once to check it. Any config key
can be given with --set KEY=VALUE (`imagefolder-lmdb init-config folder` prints a config with the
common keys, commented). A dataset already in OUTDIR made from another source or with other
settings is not replaced without --overwrite.

It runs the workflow packaged with imagefolder-lmdb, with Snakemake: one progress line per split
(images done/total, img/s, ETA, bad images), a summary at the end, and on failure what to do as
the last lines (--verbose: Snakemake's own output, every job). After a kill or a failure run the
same command again: it resumes, redoing only what is missing. The work folder (OUTDIR/work) can
be deleted after success (--clean); the same command then prints the summary.
"""


def convert_parser(prog: str) -> argparse.ArgumentParser:
    """``imagefolder-lmdb convert``'s options (the parameters of imagefolder_lmdb.convert)."""
    from imagefolder_lmdb.run.request import layouts

    parser = argparse.ArgumentParser(
        prog=prog,
        usage=f"{prog} [options] SOURCE OUTDIR [-- SNAKEMAKE_OPTION ...]\n       {prog} [options] --configfile FILE",
        description=CONVERT_DESCRIPTION % {"prog": prog},
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Options after -- go to Snakemake, their paths taken from this folder, e.g. -- --keep-going, "
        "-- --report r.html, or -- --dry-run (which writes nothing).",
    )
    parser.add_argument("source", nargs="?", metavar="SOURCE", help="the images: a folder, an archive or shards")
    parser.add_argument("outdir", nargs="?", metavar="OUTDIR", help="where SPLIT.lmdb goes; s3://b/prefix: uploaded")
    settings = parser.add_argument_group("settings (the config's keys, without a config file)")
    for flag in CONVERT_FLAGS:  # config/flags.py: each flag's one declaration
        (settings if flag.setting else parser).add_argument(flag.name, **flag.argparse_options(layouts()))
    return parser


def command_arguments(args: argparse.Namespace) -> dict[str, Any]:
    """The command line's arguments by name (``run/request.py`` ``ARGUMENTS`` among them), ``--splits a,b``
    as a list."""
    splits = [name for name in (args.splits or "").split(",") if name]
    return {**vars(args), "splits": splits}


def command_settings(args: argparse.Namespace) -> list:
    """The settings the flags and ``--set`` give, in that order (a later one wins)."""
    from imagefolder_lmdb.config.schema import load_schema
    from imagefolder_lmdb.config.settings import flag_setting, parse_set
    from imagefolder_lmdb.run.launch import WORKFLOW

    settings = []
    for flag in CONVERT_FLAGS:
        value = getattr(args, flag.dest)
        if flag.key is not None and value is not None:  # an "append" flag (--labels): one setting each time
            settings += [flag_setting(flag.name, each) for each in (value if flag.action == "append" else [value])]
    if args.set:
        schema = load_schema(str(WORKFLOW / "config" / "schema.yaml"))
        split_keys, top_keys = schema["$defs"]["split"]["properties"], schema["properties"]
        settings += [parse_set(text, split_keys, top_keys) for text in args.set]
    return settings


def refuse_settings_with_configfile(args: argparse.Namespace) -> None:
    """A setting flag beside --configfile would be ignored: said instead, with where it goes."""
    from imagefolder_lmdb.run.launch import ConvertError

    # the flags that shape a SOURCE OUTDIR conversion, which a --configfile run takes from its file
    shaping = [flag for flag in CONVERT_FLAGS if flag.source_outdir]
    given = [flag.name for flag in shaping if getattr(args, flag.dest) not in (None, False, [])]
    if given:
        raise ConvertError(
            f"{', '.join(given)} with --configfile: set it in the config file (the flags are for SOURCE OUTDIR)", 2
        )


def convert_main(argv: list[str], prog: str = f"{PROG} convert") -> int:
    """``imagefolder-lmdb convert``: check the arguments, plan the config, then run Snakemake on the
    packaged workflow, showing its progress board and, on failure, what to do as the last lines.
    SIGINT, SIGTERM or SIGHUP at any moment: how far each split got, exit status 128 + the signal."""
    from imagefolder_lmdb.run.launch import Interrupted, show_interruption, stopping_on_signals

    ours, passed = (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    parser = convert_parser(prog)
    args = parser.parse_args(ours)
    try:
        with stopping_on_signals():  # SOURCE is listed before Snakemake starts: a signal stops that too
            return convert_parsed(args, passed, parser, prog)
    except KeyboardInterrupt as exc:  # Interrupted, or Python's own before the handlers were set
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C does not cut the lines short
        stopped = exc if isinstance(exc, Interrupted) else Interrupted(signal.SIGINT)
        try:
            show_interruption(stopped)
        finally:
            signal.signal(signal.SIGINT, previous)
        return 128 + stopped.signum


def convert_parsed(args: argparse.Namespace, passed: list[str], parser: argparse.ArgumentParser, prog: str) -> int:
    """``convert_main`` once its arguments are parsed, OUTDIR's lock held from its first write to the end,
    and the folder it runs from importable where a predicate (is_valid_file) is named."""
    from imagefolder_lmdb.run.ownership import owning_outdirs
    from imagefolder_lmdb.sources.listing_options import caller_folder_importable, names_a_predicate

    predicate_named = args.is_valid_file is not None or names_a_predicate(args.set, args.configfile)
    with owning_outdirs(), caller_folder_importable(predicate_named):
        return planned_and_run(args, passed, parser, prog)


def planned_and_run(args: argparse.Namespace, passed: list[str], parser: argparse.ArgumentParser, prog: str) -> int:
    """Plan, run, and say how it ended."""
    from imagefolder_lmdb.config.settings import SettingError
    from imagefolder_lmdb.publish.destination import published, replaceable, url_outdir
    from imagefolder_lmdb.run.invocation import plan_run, run_planned
    from imagefolder_lmdb.run.launch import ConvertError, check_snakemake
    from imagefolder_lmdb.run.request import command_request, run_options

    try:
        # OUTDIR a URL: converted in a local folder, then uploaded (publish/upload.py)
        destination, args.outdir, args.work = url_outdir(args.source, args.outdir, args.work)
        check_snakemake()
        options = run_options(args.cores, args.profile, passed)
        request = None
        if args.source is not None and args.outdir is not None:
            request = command_request(command_arguments(args), command_settings(args), cli=True)
        if args.configfile is not None and request is None:
            refuse_settings_with_configfile(args)
        run = plan_run(request, None if request else args.outdir, args.work, args.configfile, options)
        run, destination = replaceable(run, destination, args.overwrite)  # before converting, not after
        published(run_planned(run, args.clean, bool(passed), args.verbose), destination, args.overwrite)
    except SettingError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    except ConvertError as exc:
        if exc.returncode == 2:
            parser.error(str(exc))
        print(f"{prog}: {exc}", file=sys.stderr)
        return exc.returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
