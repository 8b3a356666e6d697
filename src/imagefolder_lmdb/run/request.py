# SPDX-License-Identifier: MIT
"""What the user asked ``convert`` for, made into a ``ConvertRequest`` (run/plan.py plans it) the
same way from the command line's arguments (cli.py) and ``convert()``'s keywords (convert.py): the
arguments, the settings, the Snakemake options, and the choices of ``--layout``."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from imagefolder_lmdb.run.launch import PROFILES, WORKFLOW, ConvertError

if TYPE_CHECKING:
    from imagefolder_lmdb.config.settings import Setting
    from imagefolder_lmdb.run.plan import ConvertRequest

PathLike = str | os.PathLike[str]


@dataclass(frozen=True, kw_only=True)
class ConvertArguments:
    """The arguments of a SOURCE OUTDIR conversion as the user gave them: named as both the command
    line's options and ``convert()``'s parameters are (``--classes-from``, ``classes_from=``)."""

    source: PathLike | Sequence[PathLike] | None
    outdir: PathLike | None
    split: str | None = None
    layout: str = "imagefolder"
    splits: Sequence[str] = ()
    work: PathLike | None = None
    cores: int | str | None = None
    profile: str | None = None
    overwrite: bool = False
    classes_from: PathLike | None = None

    @classmethod
    def from_keywords(cls, keywords: Mapping[str, Any]) -> ConvertArguments:
        """The arguments found by name in ``keywords`` (``convert()``'s parameters; the command
        line's namespace, its ``--splits`` made a list); the others there are not a request's."""
        return cls(**{field.name: keywords[field.name] for field in dataclasses.fields(cls)})


def command_request(arguments: ConvertArguments, settings: Sequence[Setting], cli: bool) -> ConvertRequest | None:
    """What ``convert SOURCE OUTDIR`` asks for, a ConvertRequest, made once per call: the paths as
    strings, the cores a profile's cluster's where --cores is not given (``cli``: its messages name
    flags, else ``convert()``'s parameters). None without SOURCE and OUTDIR (a config file's run)."""
    from imagefolder_lmdb.run.plan import PROFILE_CORES, ConvertRequest

    source, outdir, cores = arguments.source, arguments.outdir, arguments.cores
    if source is None or outdir is None:
        return None
    given = os.fspath(source) if isinstance(source, str | os.PathLike) else [os.fspath(p) for p in source]
    return ConvertRequest(
        source=given,
        outdir=os.fspath(outdir),
        split=arguments.split,
        layout=arguments.layout,
        splits=tuple(arguments.splits),
        work=None if arguments.work is None else os.fspath(arguments.work),
        settings=tuple(settings),
        overwrite=arguments.overwrite,
        classes_from=None if arguments.classes_from is None else os.fspath(arguments.classes_from),
        cli=cli,
        cores=PROFILE_CORES if cores is None and arguments.profile is not None else cores,
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
