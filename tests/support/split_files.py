"""Small split files written straight through the one meta builder, for the tests of a split of
revisions (tests/unit/test_revisions.py, test_first_revision.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from imagefolder_lmdb.reader import META_KEYS, checksum, encode_meta, record_key
from imagefolder_lmdb.writing.lmdb_writer import LMDBWriter
from imagefolder_lmdb.writing.meta_document import build_meta
from imagefolder_lmdb.writing.record_locations import add_locations


def split_file(path: Path, samples: dict[str, bytes], classes: list[str]) -> Path:
    """A split file of ``samples`` (path: stored bytes, in the order given), labelled by their folder."""
    values, n = list(samples.values()), len(samples)
    meta = build_meta(
        tool="test",
        classes=classes,
        storage=[8] * n,
        settings={},
        source={"path": "tree", "images": n, "classes": len(classes)},
        source_bytes=[len(value) for value in values],
        stored_bytes=[len(value) for value in values],
        skipped=[],
        sizes=np.ones((n, 2), np.uint32),
        crc32=[checksum(value) for value in values],
        paths=list(samples),
        labels=[classes.index(name.split("/")[0]) for name in samples],
    )
    writer = LMDBWriter(str(path), expected_bytes=sum(map(len, values)) + (1 << 20))
    for index, value in enumerate(values):
        writer.append(record_key(index), value)
    stored = encode_meta(meta)
    del stored[META_KEYS["locations"]]
    writer.put_many(stored)
    add_locations(writer.env, str(path))
    writer.close()
    return path
