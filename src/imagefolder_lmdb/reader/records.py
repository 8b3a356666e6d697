"""Record sources, the interface: what a dataset asks of the place its records come from (``RecordSource``:
``read`` a batch, ``get_bytes``) and what opening a file found (``Opened``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from imagefolder_lmdb.reader.file_checks import LmdbReadTxn
from imagefolder_lmdb.reader.format import Meta

# A dataset's records come from one of three sources, each a small object of its own part below:
# v1 records through LMDB (LmdbRecords), v1 records by offset (LocatedRecords, which hands the
# records it cannot locate to an LmdbRecords), and legacy pickles (_LegacyRecords). The dataset
# never branches on which one it has. Sources hold no process-specific state (environments and
# descriptors are in the per-process table), so they pickle with the dataset.

#: Opens a read transaction of the dataset's file. The dataset passes its own (LMDBReader._transaction):
#: it owns the file's lock settings and reader slots; a source opens at most one per batch.
Begin = Callable[[], LmdbReadTxn]


class RecordSource(Protocol):
    """Where a dataset's records come from."""

    @property
    def legacy(self) -> bool:
        """A folder2lmdb pickle file: no image sizes, checksums or storage codes."""
        ...

    @property
    def by_offset(self) -> bool:
        """Records are read with one os.pread each at their recorded offsets (reads_by_offset)."""
        ...

    def read(self, positions: list[int], decode: str, begin: Begin, targets: Sequence[Any]) -> list[tuple[Any, Any]]:
        """Decoded images (see DECODE_CHOICES) and labels of ``positions`` (valid indices), in order.
        ``targets``: the dataset's labels, which v1 records use (legacy records carry their own)."""
        ...

    def get_bytes(self, index: int, begin: Begin) -> bytes:
        """The stored bytes of record ``index`` (a valid index)."""
        ...


@dataclass
class Opened:
    """What opening a file found: its record source and ImageFolder's index of the records."""

    records: RecordSource
    document: dict[str, Any]  # the meta JSON document (legacy: a stand-in naming the layout)
    classes: list[str]
    names: list[str]  # each record's name in ``samples``: its relative path (legacy: its key)
    targets: list[Any]  # each record's class index, or (multi-label) list of class indices
    meta: Meta | None  # None for a legacy file, which has no meta arrays
    revision: int | None = None  # of a split of revisions, the one opened (reader/revisions.py)
    samples: list[tuple[str, Any]] | None = None  # made already (a view keeping its one file whole); else zipped
