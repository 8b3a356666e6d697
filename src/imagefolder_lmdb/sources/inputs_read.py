"""The files besides the images that a listing parses (a label file, a devkit, a val CSV), each read
once: the bytes a job parses are the bytes it digests, so that what the dataset's ``made_from``
records can be checked against what its labels came from (run/read_once.py). A file read a second
time to digest it could have been saved in between (an editor, a sync client): then the record would
name a file the labels did not come from.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

#: A digest's length in hex characters, as ``made_from`` records a file (source_record.py ``file_digest``).
DIGEST_CHARS = 20


@dataclass(frozen=True)
class InputRead:
    """An input file as a job parsed it: its real path and the digest of the bytes parsed."""

    path: str
    digest: str

    @classmethod
    def of_sha256(cls, path: str, sha256: str) -> InputRead:
        """From a full SHA-256 of the bytes parsed (a label file's, label_files/reading.py)."""
        return cls(os.path.realpath(path), sha256[:DIGEST_CHARS])


def content_digest(data: bytes) -> str:
    """The digest ``made_from`` records of a file whose bytes are ``data``."""
    return hashlib.sha256(data).hexdigest()[:DIGEST_CHARS]


def read_input(path: str) -> tuple[bytes, InputRead]:
    """The bytes of ``path``, read once, and the record of them (small files: a few MB at most)."""
    with open(path, "rb") as stream:
        data = stream.read()
    return data, InputRead(os.path.realpath(path), content_digest(data))
