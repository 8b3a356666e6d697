"""Settings as a config that leaves them out has them: config/schema.yaml's defaults, their one home."""

from __future__ import annotations

from typing import Any

from imagefolder_lmdb.config.schema import load_schema, section_defaults
from imagefolder_lmdb.writing.reencode import EncodeSettings

from . import REPO

SCHEMA = load_schema(str(REPO / "config" / "schema.yaml"))


def encode_settings(**given: Any) -> EncodeSettings:
    """The encode settings of a config whose encode section holds ``given`` alone."""
    return EncodeSettings.from_config({**section_defaults(SCHEMA, "encode"), **given})
