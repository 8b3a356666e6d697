# SPDX-License-Identifier: MIT
"""``convert SRC s3://…/prefix --no-merge``: each data file uploaded as its job finishes (issue 60, point 4).

``arm`` (called by publish/destination.py once the replace rule allowed the run) sets run/launch.py's
BESIDE_RUN, so that ``live_upload`` runs beside Snakemake: it starts publish/live_helper.py, the process
that sends each finished data file (obstore never runs in ``convert``'s process, which forks Snakemake and
may be a notebook's that forks DataLoader workers next: remote/client.py). Once Snakemake has ended, the
helper is told so and sends what is left; then ``convert`` publishes each split as before (publish/upload.py),
which finds the data files there and sends the pointer last. A failed or interrupted Snakemake run, or a
signal while the helper finishes, stops the helper (its upload in flight aborted); the data objects already
sent stay unnamed, and the same command reuses them (or removes those it no longer names: live_record.py).

Where Snakemake sends jobs to a cluster, the helper still runs where ``convert`` runs (the login node): it
reads the data files from the shared work folder, so compute nodes need no credentials at all.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from functools import partial
from typing import IO, TYPE_CHECKING, Any

from imagefolder_lmdb.run.launch import BESIDE_RUN, ConvertError
from imagefolder_lmdb.work.paths import RunPaths

if TYPE_CHECKING:
    from imagefolder_lmdb.run.invocation import Run


def arm(run: Run, destination: str | None, overwrite: bool) -> None:
    """Beside ``run``'s Snakemake, the live upload of its data files to ``destination`` where it converts
    without a merge; else nothing (this process's previous call armed, disarmed)."""
    config = run.config
    if destination is None or run.dry_run or config is None or config.get("merge", True):
        BESIDE_RUN.set(None)
        return
    BESIDE_RUN.set(partial(live_upload, helper_command(config, destination, overwrite), destination))


def helper_command(config: dict[str, Any], destination: str, overwrite: bool) -> list[str]:
    """The helper's command line: each split's data files folder, its local pointer and its URL."""
    paths = RunPaths(config["results"], config["work"])
    # the run's records, where the publish after it keeps them (publish/destination.py: OUTDIR/work)
    work = os.path.join(os.path.dirname(os.path.abspath(paths.dataset("x"))), "work")
    command = [sys.executable, "-m", "imagefolder_lmdb.publish.live_helper", "--work", work]
    for split in config["splits"]:
        files = os.path.dirname(paths.data_file(split, "0"))
        command += ["--split", files, paths.dataset(split), f"{destination.rstrip('/')}/{split}.lmdb"]
    return [*command, "--overwrite"] if overwrite else command


@contextlib.contextmanager
def live_upload(command: list[str], destination: str) -> Iterator[None]:
    """The helper running while inside; left without an exception: it sends what is left and ends."""
    helper = Helper(command)
    try:
        yield
    except BaseException:
        helper.stop()  # Snakemake failed or was stopped: the upload in flight aborted
        raise
    helper.finish(destination)


class Helper:
    """The helper process and what it said (read as it comes: a full pipe would stall it)."""

    def __init__(self, command: list[str]) -> None:
        # a session of its own: a Ctrl-C reaches ``convert``, which stops it once (a second signal could
        # land in its abort); stdin tells it when Snakemake has ended, or, at its end, that convert is gone
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.said: dict[str, list[str]] = {"stdout": [], "stderr": []}
        self.readers = [self._reader(self.process.stdout, "stdout"), self._reader(self.process.stderr, "stderr")]

    def _reader(self, stream: IO[str] | None, name: str) -> threading.Thread:
        def read() -> None:
            assert stream is not None
            for line in stream:
                self.said[name].append(line.rstrip("\n"))

        thread = threading.Thread(target=read, daemon=True)
        thread.start()
        return thread

    def _ended(self) -> int:
        returncode = self.process.wait()
        for reader in self.readers:
            reader.join()
        return returncode

    def stop(self) -> None:
        """The helper ended now: SIGTERM, its upload in flight aborted (no object, no pending upload)."""
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGTERM)
        with contextlib.suppress(OSError):
            assert self.process.stdin is not None
            self.process.stdin.close()
        self._ended()

    def finish(self, destination: str) -> None:
        """Snakemake has ended: the helper sends the files left and ends; what it sent said. A signal meanwhile
        stops it (ConvertError, 128 + the signal); its failure is a note: the publish after it sends the rest."""
        assert self.process.stdin is not None
        with contextlib.suppress(OSError):  # it may have failed already
            self.process.stdin.write("done\n")
        with contextlib.suppress(OSError):
            self.process.stdin.close()
        try:
            returncode = self._ended()
        except KeyboardInterrupt as exc:  # run/launch.py's Interrupted (a signal), or Python's own
            self.stop()
            raise ConvertError(
                f"stopped while publishing to {destination} (above); the same command uploads again without converting",
                128 + int(getattr(exc, "signum", signal.SIGINT)),
            ) from None
        for line in dict.fromkeys(self.said["stdout"]):  # a note said per file (obstore's) said once
            print(line, flush=True)
        if returncode != 0:
            problem = "; ".join(self.said["stderr"]) or f"exit status {returncode}"
            print(f"note: uploading data files while converting stopped ({problem}); sending them now", file=sys.stderr)
