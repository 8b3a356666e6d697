"""Moved to imagefolder_lmdb.commands.init_config (issue 42: the commands live in commands/, reached
through cli.py); this old name re-exports it for one release."""

import sys

from imagefolder_lmdb.commands.init_config import *  # noqa: F403
from imagefolder_lmdb.commands.init_config import CONFIGS, WHAT, config_text, main

__all__ = ["CONFIGS", "WHAT", "config_text", "main"]

if __name__ == "__main__":
    sys.exit(main())
