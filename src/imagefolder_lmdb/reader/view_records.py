"""A view's record source (``ViewRecords``): sample ``i`` is record ``records[i]`` of the dataset
``parts[files[i]]``, each file a dataset of its own that checks, reopens and reads it as ever (by
offset, through LMDB, by ranged requests); and what a loader's state says of the dataset it read
(``DatasetState``: the files' contents, the classes, the length), every dataset's, a view's or not."""

from __future__ import annotations

import gc
import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from imagefolder_lmdb.reader.records import Begin, Opened, RecordSource

if TYPE_CHECKING:
    from imagefolder_lmdb.reader.identity import FileIdentity


class FileDataset(Protocol):
    """What a view asks of the dataset of one of its files (an LMDBReader)."""

    path: str
    _records: RecordSource
    _sample_targets: list[Any]

    def _check_file(self) -> None: ...

    def _transaction(self) -> Any: ...

    def get_bytes(self, index: int) -> bytes: ...

    @property
    def reads_by_offset(self) -> bool: ...


class ViewRecords:
    """The records of a view: each read goes to the file's own dataset, after its file check."""

    legacy = False
    token = None  # a view pins no one object: each file's dataset pins its own

    def __init__(self, parts: Sequence[FileDataset], files: np.ndarray | None, records: np.ndarray) -> None:
        self.parts = list(parts)
        self.files = files  # None: one file
        self.records = records

    @property
    def by_offset(self) -> bool:
        return all(part.reads_by_offset for part in self.parts)

    def source(self, index: int) -> tuple[FileDataset, int]:
        """The dataset of the file sample ``index`` lies in, and its record there."""
        part = self.parts[0] if self.files is None else self.parts[self.files.item(index)]
        return part, self.records.item(index)

    def read(self, positions: list[int], decode: str, begin: Begin, targets: Sequence[Any]) -> list[tuple[Any, Any]]:
        """The samples of ``positions`` (the view's indices), each with the view's target."""
        if len(positions) == 1:  # ds[i]: one lookup, one read (source() inlined: the view's whole cost)
            index = positions[0]
            part = self.parts[0] if self.files is None else self.parts[self.files.item(index)]
            part._check_file()
            read = part._records.read([self.records.item(index)], decode, part._transaction, part._sample_targets)
            return [(read[0][0], targets[index])]
        records = self.records[positions].tolist()
        files = [0] * len(positions) if self.files is None else self.files[positions].tolist()
        images: list[Any] = [None] * len(positions)
        for number in sorted(set(files)):  # a batch read per file, as its dataset reads one
            slots = [slot for slot, file in enumerate(files) if file == number]
            part = self.parts[number]
            part._check_file()
            batch = part._records.read([records[s] for s in slots], decode, part._transaction, part._sample_targets)
            for slot, (image, _) in zip(slots, batch, strict=True):
                images[slot] = image
        return [(image, targets[index]) for image, index in zip(images, positions, strict=True)]

    def get_bytes(self, index: int, begin: Begin) -> bytes:
        part, record = self.source(index)
        return part.get_bytes(record)


def listed_samples(opened: Opened, listed: bool) -> Sequence[tuple[str, Any]]:
    """ImageFolder's ``samples`` of what opening found: the list of (path, target) pairs, made with the cycle
    collector paused (each pair is an allocation that can set off a collection scanning the pairs made so far,
    none of them in a cycle: up to twice the time for a million); unless ``listed``, a Sequence making each on
    demand (a file of a view: the view lists its own, and a file's list is most of what opening it costs)."""
    if opened.samples is not None:
        return opened.samples
    if not listed:
        return PairedSamples(opened.names, opened.targets)
    collecting = gc.isenabled()
    gc.disable()
    try:
        return list(zip(opened.names, opened.targets, strict=True))
    finally:
        if collecting:
            gc.enable()


class PairedSamples(Sequence[tuple[str, Any]]):
    """``samples`` of a view's file: (path, target) pairs made when asked for."""

    def __init__(self, names: Sequence[str], targets: Sequence[Any]) -> None:
        self.names, self.targets = names, targets

    def __len__(self) -> int:
        return len(self.names)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return list(zip(self.names[index], self.targets[index], strict=True))
        return self.names[index], self.targets[index]


class Described(Protocol):
    """What a loader's state records of a dataset."""

    def state_dict(self) -> dict[str, Any]: ...

    path: str
    classes: list[str]
    targets: list[Any]
    _records: RecordSource
    _identity: FileIdentity | None


def dataset_state(ds: Described) -> dict[str, Any]:
    """The dataset a loader reads, in a few words: its files' contents, its classes and length."""
    records = ds._records
    parts = records.parts if isinstance(records, ViewRecords) else [ds]
    contents = [getattr(part, "_identity", None) for part in parts]
    classes = hashlib.sha256("\0".join(ds.classes).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return {
        "files": sorted("" if identity is None else identity.content for identity in contents),  # in any order
        "classes": classes,
        "length": len(ds.targets),
    }


def check_state(ds: Described, saved: dict[str, Any]) -> None:
    """ValueError where a saved state is of another dataset than ``ds``: its indices name other images."""
    mine = ds.state_dict()["dataset"]
    if saved.get("dataset") is None:
        return  # a state saved before it recorded the dataset
    differ = [name for name in ("files", "classes", "length") if saved["dataset"].get(name) != mine[name]]
    if differ:
        raise ValueError(
            f"the loader's state was saved reading another dataset than {ds.path} (its {', '.join(differ)} "
            f"differ: saved {[saved['dataset'].get(name) for name in differ]}, here {[mine[n] for n in differ]}): "
            "its positions would name other images. Resume with the files and classes= the job was started with."
        )


class DatasetState:
    """What every dataset (a view or one file) tells of where its samples come from, and the state a
    torchdata ``StatefulDataLoader`` saves of it (``state_dict``): a resume on other files or another
    view is refused (``load_state_dict``), since the saved positions would name other images."""

    path: str
    classes: list[str]
    targets: list[Any]
    _records: RecordSource
    _identity: FileIdentity | None

    def _check_index(self, index: Any) -> int:  # the dataset's
        raise NotImplementedError

    @property
    def files(self) -> list[str]:
        """The files this dataset reads: its own, or a view's (``LMDBDataset(ds.files, classes=ds.classes)``
        makes the same view again)."""
        records = self._records
        return [part.path for part in records.parts] if isinstance(records, ViewRecords) else [self.path]

    def source_of(self, index: int) -> tuple[str, int]:
        """The file sample ``index`` lies in and its index there (a view's; a file's own: itself)."""
        index = self._check_index(index)
        if isinstance(self._records, ViewRecords):
            part, record = self._records.source(index)
            return part.path, record
        return self.path, index

    def state_dict(self) -> dict[str, Any]:
        # asked at every snapshot, in every worker (torchdata): described once, kept
        described = self.__dict__.get("_described_state")
        if described is None:
            described = self.__dict__["_described_state"] = dataset_state(self)
        return {"dataset": described}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        check_state(self, state)
