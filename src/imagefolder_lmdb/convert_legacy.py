"""Moved to imagefolder_lmdb.commands.convert_legacy (issue 42: the commands live in commands/, reached
through cli.py); this old name re-exports it for one release (scripts/convert_legacy.py imports it here)."""

import sys

from imagefolder_lmdb.commands.convert_legacy import *  # noqa: F403
from imagefolder_lmdb.commands.convert_legacy import (
    LAYOUT,
    TOOL,
    LegacyConvertError,
    RecordColumns,
    build_meta,
    convert,
    convert_records,
    input_bytes,
    legacy_input_keys,
    main,
    read_classes,
    summary_line,
)
from imagefolder_lmdb.writing.meta_document import TOOL_VERSION

__all__ = [
    "LAYOUT",
    "TOOL",
    "TOOL_VERSION",
    "LegacyConvertError",
    "RecordColumns",
    "build_meta",
    "convert",
    "convert_records",
    "input_bytes",
    "legacy_input_keys",
    "main",
    "read_classes",
    "summary_line",
]

if __name__ == "__main__":
    sys.exit(main())
