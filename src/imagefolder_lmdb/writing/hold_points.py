"""The crash tests' hook: a step reaching the point named in HOLD_ENV creates the file named in
HOLD_MARKER_ENV and waits there until the marker is removed (the test releases it) or the process is
killed, so that a signal or a second command lands at a known moment. Unset, as in every real run, it
does nothing. Every point is one entry of HOLD_POINTS (a conversion's) or COMMAND_POINTS (the other
commands', mid-work), so that a harness can try them all."""

from __future__ import annotations

import os
import time

HOLD_ENV = "IMAGEFOLDER_LMDB_TEST_HOLD"
HOLD_MARKER_ENV = "IMAGEFOLDER_LMDB_TEST_HOLD_MARKER"

# In the order a conversion reaches them; "encode_shard" holds as "encode_shard:<shard>" (one shard's half),
# "data-file" as "data-file:<shard>" (its data file complete, not yet renamed). "data-file" and "pointer":
# merge: false only (NO_MERGE_POINTS), "merge" to "written": merge: true only.
HOLD_POINTS: tuple[str, ...] = (
    "starting",
    "plan",
    "recovered",
    "planned",
    "set-aside",
    "extract",
    "count_check",
    "encode_shard",
    "data-file",
    "pointer",
    "merge",
    "write_meta",
    "written",
    "verify",
    "verified",
    "reported",
    "put-back",
    "upload-part",
    "upload-complete",
)
#: The points only a conversion with ``merge: false`` reaches (an encode job making its data file, and rule
#: write_pointer).
NO_MERGE_POINTS: tuple[str, ...] = ("data-file", "pointer")
#: The other commands' moments mid-work, each reached by that command alone (tests/workflow/test_ctrl_c.py):
#: verify and add-locations at each file (":<n>", n from 0), info with every dataset read, convert-legacy
#: halfway through the records.
COMMAND_POINTS: tuple[str, ...] = ("verify-file", "info-read", "add-locations-file", "convert-legacy-record")
#: The moments of a change applied as a new revision (run/change.py), in the order it reaches them: the
#: added file half written, complete, the pointer replaced (the every-moment harness's "change" scenario).
CHANGE_POINTS: tuple[str, ...] = ("change-encode", "change-added", "change-written")
#: The moments of publishing a split of revisions (publish/revisions.py) besides a data file's own upload
#: ("upload-part", "upload-complete"): the published single file copied beside the pointer, every data file
#: there and the pointer not yet written, the pointer written and not yet read back.
PUBLISH_POINTS: tuple[str, ...] = ("publish-copied", "publish-sent", "publish-pointer")
#: The moment of a ``--no-merge`` publish's live upload (publish/live_helper.py): a data file's object complete
#: and unnamed while the conversion goes on ("live-sent:<n>", n from 0 per split).
LIVE_POINTS: tuple[str, ...] = ("live-sent",)
#: Every list above by its name: a point is known if it is in one of them (the refusal names them all).
POINT_LISTS: dict[str, tuple[str, ...]] = {
    "HOLD_POINTS": HOLD_POINTS,
    "COMMAND_POINTS": COMMAND_POINTS,
    "CHANGE_POINTS": CHANGE_POINTS,
    "PUBLISH_POINTS": PUBLISH_POINTS,
    "LIVE_POINTS": LIVE_POINTS,
}
ALL_POINTS: frozenset[str] = frozenset(point for points in POINT_LISTS.values() for point in points)


def hold_point(name: str, part: int | None = None) -> None:
    """Wait here until released (the marker removed) if the test running this asked to hold at ``name``
    (or at ``name:part`` where the point has parts)."""
    if name not in ALL_POINTS:
        raise ValueError(f"hold point {name!r} is not in {', '.join(POINT_LISTS)}")
    wanted = os.environ.get(HOLD_ENV)
    if wanted is None or wanted not in (name, f"{name}:{part}"):
        return
    marker = os.environ[HOLD_MARKER_ENV]
    with open(marker, "w"):
        pass
    while os.path.exists(marker):
        time.sleep(0.1)
