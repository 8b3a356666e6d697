"""The options of ``imagefolder-lmdb convert`` are declared once, in src/imagefolder_lmdb/config/flags.py:
the parser holds exactly the table's flags, and each setting flag's config key is a key of the schema."""

from __future__ import annotations

import argparse
import dataclasses
import inspect

from imagefolder_lmdb.cli import convert_parser
from imagefolder_lmdb.config.flags import CONVERT_FLAGS, FLAG_KEYS
from imagefolder_lmdb.config.schema import load_schema
from imagefolder_lmdb.convert import convert
from imagefolder_lmdb.run.request import ARGUMENTS, ConvertRequest
from support import REPO


def parser_options(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Each option of ``parser`` (--help aside) by name: the title of the group --help lists it in."""
    return {
        name: group.title or ""
        for group in parser._action_groups
        for action in group._group_actions
        for name in action.option_strings
        if name not in ("-h", "--help")
    }


def test_every_flag_of_the_parser_is_in_the_table_and_the_reverse() -> None:
    options = parser_options(convert_parser("imagefolder-lmdb convert"))
    assert list(options) == [flag.name for flag in CONVERT_FLAGS if not flag.setting] + [
        flag.name for flag in CONVERT_FLAGS if flag.setting
    ]
    settings = {name for name, title in options.items() if title.startswith("settings")}
    assert settings == {flag.name for flag in CONVERT_FLAGS if flag.setting}


def test_each_setting_flag_sets_a_key_of_the_schema() -> None:
    schema = load_schema(str(REPO / "config" / "schema.yaml"))
    assert {"--quality", "--shards", "--extensions", "--allow-empty", "--is-valid-file"} <= set(FLAG_KEYS)
    for flag, path in FLAG_KEYS.items():
        properties = schema["properties"]
        if path[:2] == ("splits", "*"):
            properties, path = schema["$defs"]["split"]["properties"], path[2:]
        for part in path[:-1]:
            properties = properties[part]["properties"]
        assert path[-1] in properties, f"{flag}: {path} is not a key of config/schema.yaml"


def test_a_requests_arguments_are_named_as_convert_and_the_command_line_name_them() -> None:
    """``command_request`` finds each argument of the one request type by name: in ``convert()``'s
    parameters and in the command line's namespace."""
    names = set(ARGUMENTS)
    assert names <= {field.name for field in dataclasses.fields(ConvertRequest)}
    assert names <= set(inspect.signature(convert).parameters)
    assert names <= set(vars(convert_parser("imagefolder-lmdb convert").parse_args(["data", "out"])))
