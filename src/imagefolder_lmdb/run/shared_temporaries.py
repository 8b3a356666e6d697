# SPDX-License-Identifier: MIT
"""A run's temporary folder in the shared $TMPDIR, and the clean-up of those a killed run left
(issue 57). Only a run that owns no work folder (a config file's) puts its temporaries there; every
other run keeps them in ``{work}/.temporary`` (run/ownership.py).

$TMPDIR holds the user's own folders and, on a cluster, other hosts' runs, whose processes this host
cannot see. So a folder is removed only when all of these hold: its name has this module's exact
shape with this host in it, the marker written at its creation names this host and a process id,
and that process is gone (or the number now belongs to a process started later). Folders of the
shape earlier releases used (``imagefolder-lmdb-<pid>-<8 characters>``) are never removed: a user's
folder can have that shape too; ``convert`` names them once, with the command that removes them."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

#: The start of every temporary folder's name; host and process id follow: ``<PREFIX><host>.<pid>.``
PREFIX = "imagefolder-lmdb-run."
#: Written into the folder when it is made: {"host", "pid", "started"}, the owner's identity.
MARKER = ".imagefolder-lmdb-owner.json"
#: tempfile.mkdtemp's random part: 8 of [a-z0-9_]
RANDOM_PART = r"[a-z0-9_]{8}"
#: The shape an earlier release gave its folders (their owner is only a PID: no host, no marker).
EARLIER_SHAPE = re.compile(rf"imagefolder-lmdb-\d+-{RANDOM_PART}")
#: The earlier-release folders already named, one name a line, so each is named once.
NAMED_FILE = Path("imagefolder-lmdb") / "earlier-temporaries-named.txt"


@contextlib.contextmanager
def shared_temporary_folder() -> Iterator[str]:
    """A new folder in $TMPDIR owned by this process (removed when the block ends), after removing
    what this host's killed runs left there and naming, once, what earlier releases left."""
    scratch = tempfile.gettempdir()
    clear_abandoned_temporaries(scratch)
    name_earlier_temporaries(scratch)
    with tempfile.TemporaryDirectory(prefix=own_prefix()) as folder:
        Path(folder, MARKER).write_text(json.dumps(owner_record(os.getpid())))
        yield folder


def host_label(host: str | None = None) -> str:
    """The host name as it appears in a folder name: characters outside [A-Za-z0-9-] become '_'."""
    return re.sub(r"[^A-Za-z0-9-]", "_", host if host is not None else socket.gethostname())


def own_prefix() -> str:
    return f"{PREFIX}{host_label()}.{os.getpid()}."


def owner_record(pid: int) -> dict[str, object]:
    return {"host": socket.gethostname(), "pid": pid, "started": process_start(pid)}


def process_start(pid: int) -> int | None:
    """When process ``pid`` started, in clock ticks since boot (/proc/<pid>/stat, field 22); None
    where that cannot be read. With the PID it names one process: a reused number starts later."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()  # the name before ")" may hold spaces
    return int(fields[19]) if len(fields) > 19 and fields[19].isdigit() else None


def clear_abandoned_temporaries(scratch: str) -> None:
    """Remove the folders in ``scratch`` that a run of ours on this host made and whose owner is gone."""
    shape = re.compile(rf"{re.escape(PREFIX + host_label())}\.(\d+)\.{RANDOM_PART}")
    with contextlib.suppress(OSError), os.scandir(scratch) as entries:
        for entry in entries:
            match = shape.fullmatch(entry.name)
            if match and entry.is_dir(follow_symlinks=False) and abandoned(entry.path, int(match[1])):
                shutil.rmtree(entry.path, ignore_errors=True)


def abandoned(folder: str, pid: int) -> bool:
    """Whether ``folder``'s marker names this host and ``pid``, and that process is gone. No marker,
    or one that cannot be read: not ours to judge, kept."""
    try:
        owner = json.loads(Path(folder, MARKER).read_text())
    except (OSError, ValueError):
        return False
    if not isinstance(owner, dict) or owner.get("host") != socket.gethostname() or owner.get("pid") != pid:
        return False
    started = owner.get("started")
    now = process_start(pid)
    return not alive(pid) or (isinstance(started, int) and now is not None and now != started)


def alive(pid: int) -> bool:
    """Whether a process of that number exists (another user's included)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def earlier_temporaries(scratch: str) -> list[str]:
    """The folders in ``scratch`` shaped as an earlier release named its temporaries, sorted."""
    with contextlib.suppress(OSError), os.scandir(scratch) as entries:
        return sorted(e.name for e in entries if EARLIER_SHAPE.fullmatch(e.name) and e.is_dir(follow_symlinks=False))
    return []


def name_earlier_temporaries(scratch: str) -> None:
    """Say once which folders in ``scratch`` may be an earlier release's temporaries, and how to remove
    them; never remove them (the shape alone does not prove who made a folder)."""
    named_file = cache_folder() / NAMED_FILE
    named = already_named(named_file)
    new = [path for name in earlier_temporaries(scratch) if (path := os.path.join(scratch, name)) not in named]
    if not new:
        return
    shown = " ".join(new[:3]) + (f" (and {len(new) - 3} more)" if len(new) > 3 else "")
    print(
        f"note: {len(new)} folder(s) in {scratch} may be temporaries an earlier release of imagefolder-lmdb "
        f"left: {shown}. They are never removed for you; if no run of yours uses them: rm -r {' '.join(new[:3])}",
        file=sys.stderr,
    )
    with contextlib.suppress(OSError):
        named_file.parent.mkdir(parents=True, exist_ok=True)
        with named_file.open("a") as record:
            record.writelines(f"{path}\n" for path in new)


def already_named(named_file: Path) -> set[str]:
    try:
        return set(named_file.read_text().splitlines())
    except OSError:
        return set()


def cache_folder() -> Path:
    """$XDG_CACHE_HOME, or ~/.cache: where the names already shown are kept."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
