"""A data file of a split of revisions opened and checked by its content id (``opened_file``): by plain reads
where its records are located (reader/data_files.py), else through its LMDB environment; a missing one is
``MissingDataFileError``, one of other content ``FileChangedError``, each naming the file."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from imagefolder_lmdb.reader.data_files import read_located
from imagefolder_lmdb.reader.file_checks import LmdbReadTxn
from imagefolder_lmdb.reader.format import FormatError, Meta, decode_meta
from imagefolder_lmdb.reader.handles import begin_read, forget_if_replaced, guarded, opened_token, shared_env
from imagefolder_lmdb.reader.identity import FileChangedError, LocalFileToken, content_id
from imagefolder_lmdb.reader.keys import PUBLISHED_COPY_KEY
from imagefolder_lmdb.reader.offset_reads import CAN_PREAD
from imagefolder_lmdb.reader.records import RecordSource
from imagefolder_lmdb.reader.records_lmdb import LmdbRecords
from imagefolder_lmdb.reader.records_located import v1_records
from imagefolder_lmdb.reader.revision_format import DataFile, data_folder


class MissingDataFileError(FileNotFoundError):
    """A data file of the revision a dataset reads is gone (``gc``, a pointer copied without its folder)."""


class OpenOptions(Protocol):
    """What opening a revision takes from the dataset (LMDBReader's attributes)."""

    lock: bool
    max_readers: int | None
    crc_check: bool


def missing_message(pointer: str, number: int, missing: list[str]) -> str:
    """One line naming the missing data files of revision ``number`` and the fix."""
    return (
        f"{pointer}: revision={number} reads data files that are not there: {', '.join(missing)} (a split of "
        f"revisions is the pointer {os.path.basename(pointer)} and its folder {data_folder(pointer)}/: copy both; "
        "`imagefolder-lmdb gc` removes only files no kept revision names). Copy the folder beside the pointer, "
        "or open a revision whose files are there (LMDBDataset(path) opens the current one)."
    )


class FileBegin:
    """Opens a read transaction of a data file through LMDB (its records read through it: files without
    fitting locations, ``lock=True``); a class, not a closure, so that it goes to workers with the dataset."""

    def __init__(self, path: str, lock: bool, max_readers: int | None) -> None:
        self.path, self.lock, self.max_readers = path, lock, max_readers

    def __call__(self) -> LmdbReadTxn:
        env = shared_env(self.path, lock=self.lock, max_readers=self.max_readers)
        return guarded(begin_read(env, self.path), self.path, self.lock)


@dataclass
class DataFileSource:
    """One data file of a revision: where it lies, its content id, the file opened and its records. A
    located file (``located``) is read by offset with this process's one descriptor of it (shared_fd, on
    its first read), at the places ``offsets``/``lengths`` its opening found (the revision's reader
    composes them for every sample and drops them here); another file through its LMDB environment
    (``source``, ``begin``), as a split file is."""

    path: str
    id: str
    token: LocalFileToken | None
    source: RecordSource
    begin: FileBegin
    located: bool = False
    meta: Meta | None = None
    offsets: np.ndarray | None = None  # uint64 per record of a located file, none 0
    lengths: np.ndarray | None = None  # uint32 per record of a located file
    #: (device, inode) of the file opened: what shared_fd records of its descriptor (compared at its first read)
    identity: tuple[int, int] | None = field(init=False)

    def __post_init__(self) -> None:
        self.identity = None if self.token is None else (self.token.device, self.token.inode)


def opened_file(pointer: str, number: int, file: DataFile, place: str, options: OpenOptions) -> DataFileSource:
    """A data file opened and checked by its content id (FileChangedError for other content): by plain
    reads, keeping no descriptor, where its records are located (reader/data_files.py); else by LMDB."""
    forget_if_replaced(place)  # the file now at the name, as a dataset opens its path (a copy put back)
    begin = FileBegin(place, options.lock, options.max_readers)
    try:  # lock=True asks for LMDB's reader protocol, which reads by offset do not follow (v1_records)
        located = read_located(place) if CAN_PREAD and not options.lock else None
        if located is None:
            return _through_lmdb(pointer, number, file, place, options, begin)
    except FileNotFoundError:
        raise MissingDataFileError(missing_message(pointer, number, [place])) from None
    meta, token = located.meta, located.token
    _check_content(meta, pointer, number, file, place)
    # read through LMDB only if a record turns out not located after all (none is: data_files.py)
    records = LmdbRecords(place, meta.storage, meta.crc32 if options.crc_check else None)
    return DataFileSource(
        place, file.id, token, records, begin, located=True, meta=meta, offsets=located.offsets, lengths=located.lengths
    )


def _through_lmdb(
    pointer: str, number: int, file: DataFile, place: str, options: OpenOptions, begin: FileBegin
) -> DataFileSource:
    """A data file whose records are read through its LMDB environment, opened here."""
    env = shared_env(place, lock=options.lock, max_readers=options.max_readers)
    with guarded(env.begin(), place, options.lock) as txn:
        meta = decode_meta(txn, place)
        meta_copy = txn.get(PUBLISHED_COPY_KEY) is not None
    _check_content(meta, pointer, number, file, place)
    if meta_copy:  # the published file's locations, none of its records: LMDB names any record read missing
        source: RecordSource = LmdbRecords(place, meta.storage, meta.crc32 if options.crc_check else None)
    else:
        source = v1_records(place, env, meta, options.lock, options.crc_check)
    return DataFileSource(place, file.id, opened_token(place), source, begin, meta=meta)


def _check_content(meta: Meta, pointer: str, number: int, file: DataFile, place: str) -> None:
    """FormatError or FileChangedError unless the data file holds what the revision names by its name."""
    if meta.label_lists is not None or meta.fields:
        raise FormatError(f"{place}: a multi-label or field file cannot be a data file of a split of revisions yet")
    found = content_id(meta)
    if found != file.id:
        raise FileChangedError(
            f"{place}: holds content {found[:12]}, not {file.id[:12]} that revision={number} of {pointer} names by "
            "this file's name: the file was replaced by another. Copy the split's folder again from its original."
        )
