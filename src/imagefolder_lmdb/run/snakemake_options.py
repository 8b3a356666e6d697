# SPDX-License-Identifier: MIT
"""The caller's own Snakemake options (``convert ... -- OPTION``, ``convert(snakemake_args=[...])``)
as the run passes them on. Snakemake runs in the work folder (``--directory``), which ``--clean``
deletes: a path an option names is taken from the caller's folder instead, as every other path of
the command line is; an option that convert sets itself is refused with the reason, in one line.

The tables are Snakemake 9.27's options (``snakemake --help``) that name a file or folder.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from imagefolder_lmdb.run.launch import ConvertError

#: Each option naming paths of the caller's, by how many follow it: "?" one or none (none: Snakemake's
#: default name, CALLER_DEFAULTS), "1" one, "+" one or more, "*" any number.
CALLER_PATHS = {
    "--report": "?",
    "--report-stylesheet": "1",
    "--report-metadata": "1",
    "--report-html-path": "1",
    "--report-html-stylesheet-path": "1",
    "--export-cwl": "1",
    "--archive": "1",
    "--generate-unit-tests": "?",
    "--runtime-profile": "1",
    "--cleanup-metadata": "+",
    "--cm": "+",
    "--wait-for-files": "*",
    "--wait-for-files-file": "1",
    "--jobscript": "1",
    "--js": "1",
    "--shadow-prefix": "1",
    "--conda-prefix": "1",
    "--apptainer-prefix": "1",
    "--singularity-prefix": "1",
    "--runtime-source-cache-path": "1",
}
#: What Snakemake names an option's file given without one (its ``const``): made in the caller's folder.
CALLER_DEFAULTS = {"--report": "report.html", "--generate-unit-tests": ".tests/unit"}

#: Options convert sets itself, or that are gone: why each cannot be honoured, and what to give instead
#: ({work}: the work folder's flag or parameter, in the caller's words).
REFUSED = {
    "--snakefile": "convert runs the workflow it ships (`imagefolder-lmdb snakefile` prints its path); "
    "run snakemake yourself for another Snakefile",
    "--directory": "convert runs Snakemake in the work folder, which {work} chooses",
    "--configfile": "convert writes the config from SOURCE, OUTDIR and the settings: give keys with "
    "{set}, or a whole config file as convert's own {configfile}",
    "--workflow-profile": "convert applies the workflow's own default profile: give yours with {profile}",
    "--stats": "Snakemake 9 has no --stats: each job's times are in OUTDIR/SPLIT.benchmarks.tsv, "
    "and --report FILE writes Snakemake's report",
}
SYNONYMS = {"-s": "--snakefile", "-d": "--directory", "--configfiles": "--configfile"}
#: Snakemake's options whose names begin one above (--config KEY=VALUE): whole names, not abbreviations.
WHOLE_NAMES = ("--config", "--jobs")
#: A short option cluster ending in -s or -d (``-s FILE``, ``-dDIR``, ``-nd DIR``): Snakemake's flags first.
SHORT_PATH = re.compile(r"-[ntkfFlSDvpah]*([sd])")
#: Where a path is no local file: left as given.
URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def caller_options(tokens: Sequence[str], cli: bool) -> list[str]:
    """``tokens`` as Snakemake is to get them: each path of CALLER_PATHS made absolute from the
    current folder; ConvertError (exit status 2) for a REFUSED option or an abbreviated path option."""
    passed: list[str] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        index += 1
        name, equals, value = token.partition("=") if token.startswith("--") else (token, "", "")
        refuse_if_set_by_convert(name, option_name(name), cli)
        if name not in CALLER_PATHS:
            passed.append(token)
            continue
        if equals:
            passed.append(f"{name}={resolved(value)}")
            continue
        values, index = following_values(tokens, index, CALLER_PATHS[name])
        if not values and name in CALLER_DEFAULTS:
            values = [CALLER_DEFAULTS[name]]
        passed += [name, *(resolved(path) for path in values)]  # none for "1"/"+": Snakemake says what is missing
    return passed


def option_name(name: str) -> str:
    """The option ``name`` means: a synonym's or a short cluster's long name, or ``name``; ConvertError
    for an abbreviation of a path option (Snakemake's parser would take it; its path would not be resolved)."""
    short = SHORT_PATH.match(name) if not name.startswith("--") else None
    if short is not None:
        return SYNONYMS[f"-{short.group(1)}"]
    name = SYNONYMS.get(name, name)
    if name.startswith("--") and name not in (*CALLER_PATHS, *REFUSED, *WHOLE_NAMES):
        meant = [option for option in [*CALLER_PATHS, *REFUSED] if option.startswith(name)]
        if meant and len(name) > 2:
            raise ConvertError(f"Snakemake option {name}: write it in full ({' or '.join(meant)})", 2)
    return name


def refuse_if_set_by_convert(given: str, name: str, cli: bool) -> None:
    """ConvertError naming why option ``name`` (``given`` as typed) cannot be passed on and what to
    give instead."""
    if name not in REFUSED:
        return
    words = {"work": "--work DIR", "set": "--set KEY=VALUE", "configfile": "--configfile FILE", "profile": "--profile"}
    if not cli:
        words = {"work": "work=DIR", "set": "config={...}", "configfile": "configfile=FILE", "profile": "profile=DIR"}
    typed = name if given == name else f"{given} ({name})"
    where = "after --" if cli else "in snakemake_args"
    raise ConvertError(f"Snakemake's {typed} {where}: {REFUSED[name].format(**words)}", 2)


def following_values(tokens: Sequence[str], index: int, count: str) -> tuple[list[str], int]:
    """The paths after an option (those not starting with ``-``, as Snakemake's parser takes them):
    at most one for "?" and "1"; and the index after them."""
    values: list[str] = []
    while index < len(tokens) and not tokens[index].startswith("-") and (count in "+*" or not values):
        values.append(tokens[index])
        index += 1
    return values, index


def resolved(path: str) -> str:
    """``path`` from the caller's folder (a URL as given)."""
    return path if URL.match(path) else os.path.abspath(os.path.expanduser(path))
