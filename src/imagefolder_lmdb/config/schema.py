"""The config checked against config/schema.yaml: the defaults filled in as Snakemake's
``snakemake.utils.validate`` fills them (every ``properties`` entry's ``default``, set before its
keys are checked), and each schema error said in one line: the key, the value, what to set. An
unknown key gets the known key it is most likely a typo of, or the section it belongs to."""

from __future__ import annotations

import copy
import difflib
from collections.abc import Iterator, Mapping
from typing import Any

import yaml

from imagefolder_lmdb.config.problems import KeyPath, Problem, key_problem, shown

#: How to run when no split is configured (the workflow has no default config, on purpose).
NO_SPLITS = "no splits configured; run with a config file, e.g. snakemake --cores 2 --configfile config/demo.yaml"

#: What to set, in words, for keys whose schema says it poorly.
EXPECTED = {
    "source": "a folder or an archive, or for layouts webdataset and parquet the shard files "
    "(a list, a glob or a brace pattern)",
    "classes": "a list of class names, the path of a file with one per line or of a dataset (.lmdb), "
    "imagenet1k, or null",
}


def load_schema(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as stream:
        return yaml.safe_load(stream)


def section_defaults(schema: Mapping[str, Any], section: str) -> dict[str, Any]:
    """The default of every key of the config's top-level ``section`` (``encode``: reencode auto,
    quality 95, ...), as the schema gives them: the one home of defaults, for a command without a
    config (convert-legacy); a key without one (``encode.codec``: absent means JPEG) is left out."""
    properties = schema["properties"][section]["properties"]
    return {key: copy.deepcopy(spec["default"]) for key, spec in properties.items() if "default" in spec}


def schema_problems(config: dict[str, Any], schema: dict[str, Any]) -> list[Problem]:
    """Fill the schema's defaults into ``config`` (in place) and return one problem per wrong key."""
    problems: dict[KeyPath, Problem] = {}
    for error in defaults_validator(schema).iter_errors(config):
        for problem in error_problems(error, schema):
            problems.setdefault(problem.path, problem)  # a key's first error says enough
    return list(problems.values())


def defaults_validator(schema: dict[str, Any]) -> Any:
    """A Draft 2020-12 validator that sets each property's default before checking the properties."""
    from jsonschema import Draft202012Validator, validators

    check_properties = Draft202012Validator.VALIDATORS["properties"]

    def fill_defaults(validator: Any, properties: dict, instance: Any, subschema: dict) -> Iterator[Any]:
        if isinstance(instance, dict):  # a wrong type is reported, not filled
            for key, spec in properties.items():
                if "default" in spec:
                    instance.setdefault(key, copy.deepcopy(spec["default"]))
        yield from check_properties(validator, properties, instance, subschema)

    return validators.extend(Draft202012Validator, {"properties": fill_defaults})(schema)


def error_problems(error: Any, schema: dict[str, Any]) -> list[Problem]:
    """The problem lines of one jsonschema error."""
    path = tuple(str(part) for part in error.absolute_path)
    if "propertyNames" in error.absolute_schema_path:
        return [key_problem((*path, error.instance), split_name_problem())]
    if error.validator == "additionalProperties":
        known = list(error.schema.get("properties", {}))
        unknown = [key for key in error.instance if key not in known]
        return [unknown_key((*path, key), error.instance[key], known, schema) for key in unknown]
    if error.validator == "required":
        missing = [key for key in error.validator_value if key not in error.instance]
        return [missing_key((*path, key), error.schema["properties"][key]) for key in missing]
    if path == ("splits",) and error.validator == "minProperties":
        return [key_problem(path, NO_SPLITS)]
    return [value_problem(path, error)]


def split_name_problem() -> str:
    return "not a split name (letters, digits, _ and -, starting with a letter or digit); rename the split"


def missing_key(path: KeyPath, spec: dict[str, Any]) -> Problem:
    if path == ("splits",):
        return key_problem(path, NO_SPLITS)
    return key_problem(path, f"missing; set {expected(path, spec)}")


def value_problem(path: KeyPath, error: Any) -> Problem:
    """A value of the wrong type, out of range, or not among the choices."""
    value = error.instance
    if len(path) == 2 and path[0] == "splits" and isinstance(value, str):
        return key_problem(path, f"{shown(value)} is a path, not a split; write it as splits.{path[1]}.source")
    what = {
        "type": "is the wrong type",
        "enum": "is not a choice",
        "minimum": f"is below the minimum, {error.validator_value}",
        "maximum": f"is above the maximum, {error.validator_value}",
        "minLength": "is empty",
        "minItems": "is an empty list",
        "minProperties": "is empty",
    }.get(error.validator, "is not valid")
    return key_problem(path, f"{shown(value)} {what}; set {expected(path, error.schema)}")


def expected(path: KeyPath, spec: dict[str, Any]) -> str:
    """What a key may be set to, in words."""
    return EXPECTED[path[-1]] if path and path[-1] in EXPECTED else describe(spec)


def describe(spec: dict[str, Any]) -> str:
    """A schema in words: "an integer from 1 to 100", "one of auto, always, never", ..."""
    if "enum" in spec:
        return "one of " + ", ".join(str(choice) for choice in spec["enum"])
    if "oneOf" in spec or "anyOf" in spec:
        return " or ".join(describe(option) for option in spec.get("oneOf", spec.get("anyOf", [])))
    kinds = spec.get("type", [])
    kinds = [kinds] if isinstance(kinds, str) else list(kinds)
    words = " or ".join(describe_type(kind, spec) for kind in kinds if kind != "null")
    return f"{words}, or null" if "null" in kinds else words


def describe_type(kind: str, spec: dict[str, Any]) -> str:
    if kind == "integer":
        low, high = spec.get("minimum"), spec.get("maximum")
        if low is not None and high is not None:
            return f"an integer from {low} to {high}"
        return f"an integer of at least {low}" if low is not None else "an integer"
    if kind == "string":
        return "a non-empty string" if spec.get("minLength") else "a string"
    if kind == "array":
        return "a list of strings" if spec.get("items", {}).get("type") == "string" else "a list"
    return {"boolean": "true or false", "object": "a mapping of keys"}.get(kind, f"a {kind}")


def unknown_key(path: KeyPath, value: Any, known: list[str], schema: dict[str, Any]) -> Problem:
    """A key the schema does not know at ``path``: misplaced, or a typo of a known one."""
    key, here = path[-1], section(path[:-1])
    homes = key_homes(schema)
    if key in homes and here not in homes[key]:
        return key_problem(path, misplaced(key, here, homes[key][0]))
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    if close:
        return key_problem(path, f"unknown key (value {shown(value)}); did you mean {close[0]}?")
    elsewhere = difflib.get_close_matches(key, list(homes), n=1, cutoff=0.6)
    if elsewhere:
        guess = elsewhere[0]
        return key_problem(
            path, f"unknown key (value {shown(value)}); did you mean {guess}, a key of {homes[guess][0]}?"
        )
    return key_problem(path, f"unknown key (value {shown(value)}); the keys of {here} are {', '.join(known)}")


def misplaced(key: str, here: str, home: str) -> str:
    """A key written in the wrong section, and where it goes."""
    if home == "the top level" and here == "a split":
        return (
            f"{key} is a top-level key (shared by every split), not a key of one split: move it to the top "
            "level of the config, next to splits:"
        )
    not_here = "not a top-level key" if here == "the top level" else f"not a key of {here}"
    if home == "the top level":
        return f"{key} is a top-level key, {not_here}: move it to the top level of the config"
    if home == "a split":
        return f"{key} is a key of each split, {not_here}: move it into a split, e.g. splits.<name>.{key}"
    return f"{key} is a key of {home}, {not_here}: move it under {home}:"


def section(path: KeyPath) -> str:
    """The part of the config ``path`` is, in words."""
    if not path:
        return "the top level"
    if len(path) == 2 and path[0] == "splits":
        return "a split"
    return ".".join(path)


def key_homes(schema: dict[str, Any]) -> dict[str, list[str]]:
    """Each key the schema knows and the sections it belongs to."""
    sections = {
        "the top level": schema["properties"],
        "a split": schema["$defs"]["split"]["properties"],
        **{name: spec["properties"] for name, spec in schema["properties"].items() if "properties" in spec},
    }
    homes: dict[str, list[str]] = {}
    for name, properties in sections.items():
        for key in properties:
            homes.setdefault(key, []).append(name)
    return homes
