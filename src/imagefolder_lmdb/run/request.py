# SPDX-License-Identifier: MIT
"""What the user asked ``convert`` for, as one ``ConvertRequest`` (run/plan.py plans it) made the same
way from the command line's arguments (cli.py) and ``convert()``'s keywords (convert.py): the
arguments, the settings, the Snakemake options, and the choices of ``--layout``."""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from imagefolder_lmdb.run.launch import PROFILES, WORKFLOW, ConvertError

if TYPE_CHECKING:
    from imagefolder_lmdb.config.settings import Setting

PathLike = str | os.PathLike[str]


#: ``ConvertRequest.cores`` of a run with a profile and no --cores: the cores are the cluster's.
PROFILE_CORES = "profile"


@dataclass(frozen=True, kw_only=True)
class ConvertRequest:
    """What a conversion of SOURCE into OUTDIR asks for (run/plan.py plans it): made once per call, by
    ``command_request`` from the command line's arguments or ``convert()``'s keywords."""

    source: str | list[str]
    outdir: str
    split: str | None = None  # None: every split SOURCE holds, else the one its folder is named after, or train
    layout: str = "imagefolder"  # sources/layouts.py DEFAULT_LAYOUT (sources/ loads numpy: not imported here)
    splits: Sequence[str] = ()  # --splits: the split folders to convert
    work: str | None = None
    cores: int | str | None = None  # --cores, which the shard count follows (None: all; PROFILE_CORES)
    profile: str | None = None  # --profile: a shipped profile's name (slurm) or a folder
    overwrite: bool = False
    classes_from: str | None = None
    settings: Sequence[Setting] = ()  # the flags', --set's or config='s settings, in order (a later one wins)
    cli: bool = True  # messages name flags (--overwrite) rather than convert()'s parameters
    dry_run: bool = False  # -- --dry-run: planned, nothing written (run/dry_run.py)


#: The request's arguments as the user gave them, found by name: both the command line's options and
#: ``convert()``'s parameters are named so (``--classes-from``, ``classes_from=``).
ARGUMENTS = ("source", "outdir", "split", "layout", "splits", "work", "cores", "profile", "overwrite", "classes_from")


def command_request(keywords: Mapping[str, Any], settings: Sequence[Setting], cli: bool) -> ConvertRequest | None:
    """What ``convert SOURCE OUTDIR`` asks for, made once per call from ``keywords`` (``convert()``'s
    parameters; the command line's namespace, its ``--splits`` made a list), its ARGUMENTS found there by
    name: the paths as strings, the cores a profile's cluster's where --cores is not given (``cli``: its
    messages name flags, else ``convert()``'s parameters). None without SOURCE and OUTDIR (a config
    file's run)."""
    source, outdir, cores, profile = (keywords[name] for name in ("source", "outdir", "cores", "profile"))
    if source is None or outdir is None:
        return None
    work, classes_from = keywords["work"], keywords["classes_from"]
    return ConvertRequest(
        source=os.fspath(source) if isinstance(source, str | os.PathLike) else [os.fspath(p) for p in source],
        outdir=os.fspath(outdir),
        split=keywords["split"],
        layout=keywords["layout"],
        splits=tuple(keywords["splits"]),
        work=None if work is None else os.fspath(work),
        cores=PROFILE_CORES if cores is None and profile is not None else cores,
        profile=profile,
        overwrite=keywords["overwrite"],
        classes_from=None if classes_from is None else os.fspath(classes_from),
        settings=tuple(settings),
        cli=cli,
    )


def python_settings(
    config: dict[str, Any] | None, shards: int | None, is_valid_file: Callable[[str], bool] | None = None
) -> list[Setting]:
    """``convert()``'s ``config``, ``shards`` and ``is_valid_file`` as the command line's settings, each
    named as the caller wrote it (``shards=3``); ConvertError for a ``config`` that is not a mapping of
    keys, or a predicate that other processes cannot import by name."""
    from imagefolder_lmdb.config.flags import FLAG_KEYS
    from imagefolder_lmdb.config.settings import Setting, mapping_settings
    from imagefolder_lmdb.sources.listing_options import PredicateError, importable_name

    if config is not None and not isinstance(config, Mapping):
        raise ConvertError(
            f"config={config!r}: give a dict of config keys, as a config file sets them, e.g. "
            "config={'encode': {'quality': 90}, 'splits': {'*': {'shards': 8}}}",
            2,
        )
    settings = mapping_settings(config or {})
    if shards:
        settings.append(Setting(FLAG_KEYS["--shards"], shards, f"shards={shards!r}"))
    if is_valid_file is not None:
        try:
            name = importable_name(is_valid_file)
        except PredicateError as exc:
            raise ConvertError(str(exc), 2) from None
        settings.append(Setting(FLAG_KEYS["--is-valid-file"], name, f"is_valid_file={name}"))
    return settings


def predicate_importable(
    config: Any, is_valid_file: Callable[[str], bool] | None, configfile: PathLike | None
) -> contextlib.AbstractContextManager[None]:
    """The caller's folder importable while a conversion naming ``is_valid_file`` plans and runs (a
    predicate given that other processes cannot import is refused first, by python_settings)."""
    from imagefolder_lmdb.sources.listing_options import caller_folder_importable, names_a_predicate

    return caller_folder_importable(is_valid_file is not None or names_a_predicate(config, configfile))


#: The executor plugin the shipped slurm profile names (profiles/slurm/config.yaml).
SLURM_PLUGIN = "snakemake_executor_plugin_slurm"


def run_options(
    cores: int | str | None, profile: str | None, snakemake_args: Sequence[str], cli: bool = True
) -> tuple[str, ...]:
    """--cores (all by default, left to the profile when one is given), --profile, the rest (their
    paths taken from the caller's folder, run/snakemake_options.py; ``cli``: messages name flags)."""
    from imagefolder_lmdb.run.snakemake_options import caller_options

    options: list[str] = []
    if profile is not None:
        options += ["--profile", profile_folder(profile)]
    if cores is not None or profile is None:
        options += ["--cores", str(cores if cores is not None else "all")]
    return (*options, *caller_options(snakemake_args, cli))


def profile_folder(profile: str) -> str:
    """A profile shipped with the workflow by its name (``slurm``), anything else as given. The
    shipped slurm profile's executor is a plugin of the ``slurm`` extra: named here when missing,
    rather than Snakemake's usage and "invalid choice: 'slurm'"."""
    from imagefolder_lmdb.extras import installed, missing_extra

    if profile == "slurm" and not installed(SLURM_PLUGIN):
        raise ConvertError(missing_extra("--profile slurm", SLURM_PLUGIN), 1)
    shipped = PROFILES / profile
    return str(shipped) if profile != "default" and "/" not in profile and shipped.is_dir() else profile


@functools.cache
def layouts() -> list[str] | None:
    """The config schema's layouts (the packaged config/schema.yaml is their one list); None
    without PyYAML (an install without the ``convert`` extra, which cannot convert anyway)."""
    try:
        import yaml
    except ImportError:
        return None
    schema = yaml.safe_load((WORKFLOW / "config" / "schema.yaml").read_text())
    return list(schema["$defs"]["split"]["properties"]["layout"]["enum"])
