"""Moved to imagefolder_lmdb.commands.add_locations (the command, issue 42: the commands live in
commands/, reached through cli.py) and imagefolder_lmdb.writing.record_locations (its library); this old
name re-exports both for one release (scripts/add_locations.py imports it here)."""

import sys

from imagefolder_lmdb.commands.add_locations import main, outcome_lines
from imagefolder_lmdb.writing.record_locations import *  # noqa: F403
from imagefolder_lmdb.writing.record_locations import (
    Finding,
    LocationCount,
    Outcome,
    add_locations,
    add_locations_to_file,
    current_locations,
    locations_finding,
    locations_from_walk,
    wrong_locations,
)

__all__ = [
    "Finding",
    "LocationCount",
    "Outcome",
    "add_locations",
    "add_locations_to_file",
    "current_locations",
    "locations_finding",
    "locations_from_walk",
    "main",
    "outcome_lines",
    "wrong_locations",
]

if __name__ == "__main__":
    sys.exit(main())
