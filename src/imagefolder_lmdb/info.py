"""Moved to imagefolder_lmdb.commands.info (issue 42: the commands live in commands/, reached through
cli.py); this old name re-exports it for one release."""

import sys

from imagefolder_lmdb.commands.info import *  # noqa: F403
from imagefolder_lmdb.commands.info import (
    LISTED_CLASSES,
    InfoError,
    class_lines,
    datasets_in,
    main,
    read_dataset,
    read_remote,
    size_summary,
    text_lines,
)

__all__ = [
    "LISTED_CLASSES",
    "InfoError",
    "class_lines",
    "datasets_in",
    "main",
    "read_dataset",
    "read_remote",
    "size_summary",
    "text_lines",
]

if __name__ == "__main__":
    sys.exit(main())
