# SPDX-License-Identifier: MIT
"""Settings given without a config file: ``--set KEY=VALUE`` for any config key, flags for the
common ones, ``convert(config={...})``; all become keys of the config the run writes, so a
setting given here and the same setting in a config file give the same files.

A problem with such a setting is said in the form the user gave it (``--set encode.qualty=90``,
``--quality 101``), not as a config key they never wrote.
"""

from __future__ import annotations

import ast
import copy
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from imagefolder_lmdb.config.flags import CONVERT_FLAGS, FLAG_KEYS

#: A split's key that a flag of convert sets, as a message in a config's words names it, and the flag.
SPLIT_KEY_FLAGS = {
    flag.key[2]: flag.name
    for flag in CONVERT_FLAGS
    if flag.key and flag.key[:2] == ("splits", "*") and "_" in flag.key[2]
}
SPLIT_KEY = re.compile(rf"\b({'|'.join(SPLIT_KEY_FLAGS)})\b")

if TYPE_CHECKING:
    from imagefolder_lmdb.config.problems import Problem

#: A key path in the config: ("splits", "train", "shards").
KeyPath = tuple[str, ...]

#: Keys whose value is a path: made absolute when it exists here (Snakemake runs in the work folder);
#: a labelling's own are its answer (sources/labellings.py LABEL_PATH_KEYS).
PATH_KEYS = frozenset({"classes"})


class SettingError(ValueError):
    """A ``--set`` that is not KEY=VALUE."""


@dataclass(frozen=True)
class Setting:
    """One setting of the command line: its config key, its value, and how the user wrote it."""

    path: KeyPath  # ("encode", "quality"); ("splits", "*", "root") for every split
    value: Any
    given_as: str  # "--set encode.quality=90", "--quality 90"


def parse_set(text: str, split_keys: Iterable[str], top_keys: Iterable[str]) -> Setting:
    """``--set KEY=VALUE``: VALUE read as YAML (``90``, ``null``, ``[a, b]``); a key of a split
    (``shards``, ``root``) applies to every split of the command, ``splits.NAME.KEY`` to one."""
    import yaml

    key, equals, raw = text.partition("=")
    if not equals or not key.strip():
        raise SettingError(f"--set {text}: write it as KEY=VALUE, e.g. --set encode.quality=90")
    try:
        value = yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError:
        value = raw
    parts = tuple(key.strip().split("."))
    if parts[0] in set(split_keys) and parts[0] not in set(top_keys):
        parts = ("splits", "*", *parts)
    return Setting(parts, value, f"--set {text}")


def flag_setting(flag: str, value: Any) -> Setting:
    """A setting flag (``--quality 90``) as its config key; ``--classes a,b`` is a list of names."""
    # a comma makes a list, a lone one too: --classes b, is the list of the one class b
    # --extensions is always a list, as the config key: --extensions .jpg is [".jpg"]
    if isinstance(value, str) and (flag == "--extensions" or (flag == "--classes" and "," in value)):
        value = [name.strip() for name in value.split(",") if name.strip()]
    return Setting(FLAG_KEYS[flag], value, f"{flag} {value if not isinstance(value, list) else ','.join(value)}")


def mapping_settings(config: Mapping[str, Any], prefix: KeyPath = ()) -> list[Setting]:
    """``convert(config={...})``: every leaf of the mapping (a split's keys under ``splits``)."""
    settings = []
    for key, value in config.items():
        path = (*prefix, str(key))
        if isinstance(value, Mapping) and value and path != ("classes",):
            settings += mapping_settings(value, path)
        else:
            settings.append(Setting(path, value, f"config key {'.'.join(path)}"))
    return settings


def apply(config: dict[str, Any], settings: Iterable[Setting]) -> dict[str, Any]:
    """``config`` with every setting in place (a later one wins); ``*`` stands for each split."""
    result = copy.deepcopy(config)
    for setting in settings:
        for path in expanded(setting.path, list(result.get("splits", {}))):
            place = result
            for part in path[:-1]:
                place = place.setdefault(part, {})
                if not isinstance(place, dict):
                    break
            else:
                place[path[-1]] = absolute_path(path[-1], setting.value)
    return result


def expanded(path: KeyPath, splits: list[str]) -> list[KeyPath]:
    if len(path) > 1 and path[:2] == ("splits", "*"):
        return [("splits", name, *path[2:]) for name in splits]
    return [path]


def absolute_path(key: str, value: Any) -> Any:
    """A path-valued key's relative path that exists here, made absolute."""
    # here, not at the top: the sources import numpy, and the command line's --help needs none of it
    from imagefolder_lmdb.sources.labellings import LABEL_PATH_KEYS

    if (key in PATH_KEYS or key in LABEL_PATH_KEYS) and isinstance(value, str) and os.path.exists(value):
        return os.path.abspath(value)
    return value


def given_as(path: KeyPath, settings: Iterable[Setting]) -> Setting | None:
    """The setting that wrote the config key ``path`` (a split's key matches ``*``)."""
    for setting in reversed(list(settings)):
        wanted = setting.path
        if len(wanted) == len(path) and all(a in ("*", b) for a, b in zip(wanted, path, strict=True)):
            return setting
    return None


def in_users_words(problem: Problem, settings: Iterable[Setting]) -> str:
    """A problem line with the key as the user wrote it: ``--set encode.qualty=90: unknown key;
    did you mean encode.quality?`` rather than ``config key encode.qualty: ... quality?``."""
    setting = given_as(problem.path, settings)
    if setting is None or setting.given_as.startswith("config key"):
        return problem.line
    return f"{setting.given_as}: {command_line_text(problem, setting)}"


def command_line_text(problem: Problem, setting: Setting) -> str:
    """The problem's text, for a setting given on the command line: a key guessed in its form there,
    a split's key the text names as the flag that sets it (``label_column`` is ``--label-column``)."""
    text, path = problem.text, problem.path
    marker = "did you mean "
    if marker in text and len(path) > 1 and not text.partition(marker)[2].startswith(("'", '"')):
        head, _, guess = text.partition(marker)  # a key guessed, not a quoted value (a label file's column)
        prefix = ".".join(part for part in setting.path[:-1] if part != "*")
        if setting.path[:2] == ("splits", "*"):
            prefix = ".".join(setting.path[2:-1])
        text = f"{head}{marker}{prefix + '.' if prefix else ''}{guess}"
    text = SPLIT_KEY.sub(lambda match: SPLIT_KEY_FLAGS[match.group(1)], text)
    text = re.sub(
        r"\bset (--[a-z-]+)(?::| to)? ", r"give \1 ", text
    )  # "set label_column to X": "give --label-column X"
    return text + ("" if text.endswith(("?", ".")) else ".")


def problems_in_users_words(problems: Iterable[Problem], settings: Sequence[Setting]) -> list[str]:
    """Each problem once, in the user's words: a flag's problem found in several of the splits it
    sets is one line naming them (``--labels FILE (splits train, val): ...``), not a line a split."""
    lines: dict[str, list[str]] = {}
    for problem in problems:
        setting = given_as(problem.path, settings)
        if setting is None or setting.given_as.startswith("config key") or setting.path[:2] != ("splits", "*"):
            lines.setdefault(in_users_words(problem, settings), [])
            continue
        text = f"{setting.given_as}{SPLITS_HERE}: {command_line_text(problem, setting)}"
        lines.setdefault(text, []).append(problem.path[1])
    return [line.replace(SPLITS_HERE, split_words(names)) if names else line for line, names in lines.items()]


#: Where problems_in_users_words writes the splits a line is about, once it knows them all.
SPLITS_HERE = "\0splits\0"


def split_words(names: Sequence[str]) -> str:
    """`` (split train)``, `` (splits train, val)``: which splits a line is about."""
    return f" (split {names[0]})" if len(names) == 1 else f" (splits {', '.join(names)})"


#: ``set KEY: VALUE`` in a workflow message (the fix, in a config file's words).
CONFIG_FIX = re.compile(r"\bset ((?:encode|verify|splits\.[\w<>-]+)\.\w+): ([^\s,;()]+)")


def in_command_line_words(text: str) -> str:
    """A workflow message's fix as a command-line user gives it: ``set encode.on_error: skip`` ->
    ``give --on-error skip``; other keys as ``--set KEY=VALUE``."""

    def flag_form(match: re.Match[str]) -> str:
        key, value = match.group(1), match.group(2).rstrip(".")
        parts = tuple(key.split("."))
        if parts[0] == "splits" and parts[2:] == ("layout",):  # read by the command itself, not a key
            return f"give --layout {value}"
        if parts[0] == "splits" and parts[2:] == ("labels",) and value == "unlabelled":
            return "give --unlabelled"  # labels: unlabelled has a flag of its own
        for flag in CONVERT_FLAGS:
            path = flag.key
            if path is None:
                continue
            if path == parts or (path[:2] == ("splits", "*") and parts[0] == "splits" and parts[2:] == path[2:]):
                switch = flag.action in ("store_const", "store_true") and value == "true"
                return f"give {flag.name}" if switch else f"give {flag.name} {value}"
        return f"give --set {key}={value}"

    return CONFIG_FIX.sub(flag_form, text).replace("splits.<name>.source and layout", "SOURCE and --layout")


def in_python_words(text: str) -> str:
    """A workflow message's fix as a ``convert()`` caller gives it: ``set encode.on_error: skip`` ->
    ``pass config={'encode': {'on_error': 'skip'}}``; "run the same command again" -> "call convert() again"."""

    def config_form(match: re.Match[str]) -> str:
        *sections, key = match.group(1).split(".")
        nested: Any = {key: python_value(match.group(2).rstrip("."))}
        for section in reversed(sections):
            nested = {section: nested}
        return f"pass config={nested!r}"

    text = CONFIG_FIX.sub(config_form, text).replace("run the same command again", "call convert() again")
    return text.replace("splits.<name>.source and layout", "source and layout")


def python_value(text: str) -> Any:
    """A value as written in a message (``skip``, ``3``, ``0.5``), as Python gives it."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text
