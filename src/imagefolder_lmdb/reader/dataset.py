"""The dataset classes: ``LMDBReader`` (ImageFolder's index and reads, without torch's ``Dataset``
base) and ``LMDBDataset``, the same on ``torch.utils.data.Dataset``, built on first access."""

from __future__ import annotations

import operator
import os
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import lmdb
import numpy as np

from imagefolder_lmdb.reader.codec import STORAGE_REASONS
from imagefolder_lmdb.reader.dataset_document import class_words, resized_words, size_setting, source_root
from imagefolder_lmdb.reader.decoding import (
    DECODE_CHOICES,
    LAZY,
    Decode,
    decoded_unless_reduced,
    lazy_jpeg_transforms,
    torchcodec_jpeg_decoder,
    wants_lazy_jpeg,
)
from imagefolder_lmdb.reader.drop_in import DropIn, dataset_bases, joint_transforms
from imagefolder_lmdb.reader.file_checks import LmdbReadTxn
from imagefolder_lmdb.reader.format import (
    META_KEYS,
    DamagedRecordError,
    FormatError,
    checksum,
    decode_meta,
    is_legacy_pickle_lmdb,
)
from imagefolder_lmdb.reader.format_targets import RESERVED_FIELD
from imagefolder_lmdb.reader.handles import begin_read, forget_if_replaced, guarded, opened_token, shared_env
from imagefolder_lmdb.reader.identity import FileChangedError, FileIdentity, changed_message, content_id
from imagefolder_lmdb.reader.legacy import open_legacy
from imagefolder_lmdb.reader.memory import keep_freed_memory_for_reuse
from imagefolder_lmdb.reader.records import Opened, RecordSource
from imagefolder_lmdb.reader.records_located import LocatedRecords, v1_records
from imagefolder_lmdb.reader.revisions import open_if_revisions, refuse_if_pointer
from imagefolder_lmdb.reader.targets import LabelsAndFields, TargetType, check_target_options
from imagefolder_lmdb.reader.url_openers import url_opener
from imagefolder_lmdb.reader.urls import is_url
from imagefolder_lmdb.reader.view_records import DatasetState, listed_samples
from imagefolder_lmdb.reader.views import ClassNames, DatasetPaths, open_view, view_request


def _open_records(path: str, env: lmdb.Environment, lock: bool, allow_pickle: bool, crc_check: bool) -> Opened:
    """Read what the file at ``path`` says about itself, and choose once where its records come from."""
    with guarded(env.begin(), path, lock) as txn:
        if allow_pickle and txn.get(META_KEYS["json"]) is None and is_legacy_pickle_lmdb(txn):
            return open_legacy(txn, path)
        meta = decode_meta(txn, path)
        records = v1_records(path, env, meta, lock, crc_check)
    return Opened(records, meta.document, meta.classes, meta.paths, meta.targets(), meta)


def _reopened(
    path: str, env: lmdb.Environment, lock: bool, opened: FileIdentity, crc_check: bool
) -> tuple[RecordSource, FileIdentity]:
    """The record source of the file now at ``path`` if it holds the content the dataset opened (a
    compacted copy, a ``cp``: its record locations are checked again); else FileChangedError."""
    refuse_if_pointer(path, env, lock, opened.describe())  # the split changed since it opened (issue 58)
    with guarded(env.begin(), path, lock) as txn:
        meta = decode_meta(txn, path)
    found = FileIdentity(content_id(meta), opened_token(path))
    if found.content != opened.content:
        raise FileChangedError(changed_message(path, opened.describe(), found.describe(meta.document)))
    return v1_records(path, env, meta, lock, crc_check), found


def _resolved(path: str) -> str:
    """A file's real path, fixed when the dataset is made: a later ``chdir``, or a symlink pointed at
    another version, changes neither the file this dataset reads nor the one its workers reopen."""
    return path if is_url(path) else os.path.realpath(path)


def _open_path(
    ds: LMDBReader, max_in_flight: int, cache_dir: str | os.PathLike[str] | None, cache_bytes: int, revision: int | None
) -> Opened:
    """``ds.path`` opened: a file in place, or a URL (s3://, gs://, az://, http(s)://) through
    imagefolder_lmdb.remote (the [remote] extra), reading records by ranged requests."""
    if is_url(ds.path):
        if ds.lock:  # LMDB's lock file and reader table live beside a file, never beside an object
            raise ValueError(f"lock=True is for a file read in place; {ds.path} is read by ranged requests")

        # the [remote] extra's opener, registered from above (reader/url_openers.py): no import up
        opener = url_opener(ds.path)
        if revision is None:  # an opener of before issue 58 takes no revision
            return opener(ds.path, max_in_flight, cache_dir, cache_bytes)
        return opener(ds.path, max_in_flight, cache_dir, cache_bytes, revision)
    if cache_dir is not None:
        raise ValueError(f"cache_dir is for datasets read from a URL; {ds.path} is read in place")
    forget_if_replaced(ds.path)
    opened = open_if_revisions(ds.path, ds._env(), ds, revision)  # a split of revisions (issue 58)
    return opened or _open_records(ds.path, ds._env(), ds.lock, ds.allow_pickle, ds.crc_check)


def _check_options(decode: str, lock: bool, max_readers: int | None) -> None:
    """Refuse LMDBReader arguments that cannot work, before anything is opened."""
    if decode not in DECODE_CHOICES:
        raise ValueError(f"decode={decode!r}: choose one of {', '.join(map(repr, DECODE_CHOICES))}")
    if max_readers is not None and not lock:
        raise ValueError(
            "max_readers applies only with lock=True: with lock=False (the default) LMDB keeps no "
            "reader table, so any number of workers and ranks can read at once"
        )
    if max_readers is not None and max_readers < 1:
        raise ValueError(f"max_readers={max_readers}: must be at least 1")
    if decode == "tensor":
        torchcodec_jpeg_decoder()  # fail here, not in a worker, when TorchCodec is missing


class _Index(DropIn, LabelsAndFields, DatasetState):
    """What opening the file found, as LMDBReader shows it: ImageFolder's index (``root``, ``classes``,
    ``class_to_idx``, ``samples``, ``imgs``, ``targets``), the words of each class where the file has
    them (``class_words``), how images are labelled and their fields (``label_kind``, ``field_types``,
    ``fields(i)``), the target each sample gives (``target_type``), what the meta knows of each record
    without decoding it (``image_sizes``, ``checksums``, ``storage_codes``; None for a legacy
    file), and which record source reads them (``is_legacy``, ``reads_by_offset``)."""

    path: str
    lock: bool
    max_readers: int | None
    crc_check: bool
    decode: str
    transform: Callable[[Any], Any] | None
    _records: RecordSource
    _identity: FileIdentity | None

    def _set_index(self, opened: Opened) -> None:
        self._records = opened.records  # where reads go; chosen by _open_records
        self.meta_document: dict[str, Any] = opened.document
        self.classes: list[str] = opened.classes
        self.class_to_idx: dict[str, int] = {name: i for i, name in enumerate(self.classes)}
        self.imgs = self.samples = listed_samples(opened, listed=not isinstance(self, _ViewFile))
        self.root: str | None = source_root(opened.document)
        # a copy prepared at a smaller size (encode.short_side, encode.max_side); None: source sizes
        self.short_side: int | None = size_setting(opened.document, "short_side")
        self.max_side: int | None = size_setting(opened.document, "max_side")
        self.class_words: list[str] | None = class_words(opened.document, self.classes)  # words of classes[k]
        meta = opened.meta
        self._set_targets(opened)
        self.image_sizes: np.ndarray | None = None if meta is None else meta.sizes  # (width, height) each
        self.checksums: np.ndarray | None = None if meta is None else meta.crc32  # CRC-32 of each value
        self.storage_codes: np.ndarray | None = None if meta is None else meta.storage  # STORAGE_REASONS
        # the file opened (reader/identity.py); legacy pickles have no meta to pin their content by; a URL's
        # storage token is the object's version (remote/records.ObjectVersion), which every read is pinned to
        self._identity = None
        self.revision: int | None = opened.revision  # a split of revisions: the one opened; a split file: None
        if meta is not None and opened.revision is None:  # a revision's data files are checked by its records
            remote = is_url(self.path)
            token = opened.records.token if remote else opened_token(self.path)  # type: ignore[attr-defined]
            self._identity = FileIdentity(content_id(meta), token)

    def _check_file(self) -> None:
        """Before each read: the path still holds the file this dataset opened, in this process too
        (a worker, an epoch's new workers, the parent after a fork open it again; reader/identity.py)."""
        if self._identity is None or is_url(self.path):  # a URL: If-Match on every read (remote/engine.py)
            return
        token = opened_token(self.path)
        if token is None:  # not open in this process yet
            env = shared_env(self.path, lock=self.lock, max_readers=self.max_readers)
            token = opened_token(self.path)
        if token != self._identity.storage:
            env = shared_env(self.path, lock=self.lock, max_readers=self.max_readers)
            self._records, self._identity = _reopened(self.path, env, self.lock, self._identity, self.crc_check)

    @property
    def lazy_jpeg(self) -> bool:
        """Whether ``transform`` receives JPEGs opened but not yet decoded: with ``decode="pil"``, when
        the transform holds one of imagefolder_lmdb.transforms (which decode at the size they need)."""
        return self.decode == "pil" and wants_lazy_jpeg(self.transform)

    def _checked(self, index: Any) -> int:
        """``index`` checked, and the file too (_check_file)."""
        index = self._check_index(index)
        self._check_file()
        return index

    def get_bytes(self, index: int) -> bytes:  # LMDBReader's
        raise NotImplementedError

    def check_crc(self, index: int) -> bool:
        """Whether record ``index`` still has the CRC-32 recorded when it was written (meta/crc32).

        Raises:
            IndexError: ``index`` out of range.
            FormatError: a legacy file, which records no checksums.
        """
        self._require_meta("checksums")
        assert self.checksums is not None
        try:  # with crc_check=True (the default) the read checks it
            return checksum(self.get_bytes(index)) == self.checksums.item(self._check_index(index))
        except DamagedRecordError:
            return False

    @property
    def is_legacy(self) -> bool:
        """Whether this is a legacy folder2lmdb file read with ``allow_pickle=True``."""
        return self._records.legacy

    @property
    def reads_by_offset(self) -> bool:
        """Whether records are read with one pread each at their recorded file offsets (the fast
        path), rather than through LMDB's memory map."""
        return self._records.by_offset

    def __len__(self) -> int:
        return len(self.targets)

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        for index in range(len(self)):
            yield self[index]  # type: ignore[index]  # LMDBReader's

    def __getstate__(self) -> dict[str, Any]:
        # nothing process-specific lives on it: environments and descriptors are per process (handles.py)
        return self.__dict__.copy()

    def _check_index(self, index: Any) -> int:
        given = operator.index(index)  # ints, numpy integers, 0-d integer tensors
        n = len(self.targets)
        index = given + n if given < 0 else given
        if not 0 <= index < n:
            raise IndexError(f"index {given} out of range for {self.path} with {n} images (-{n} to {n - 1})")
        return index

    def _require_meta(self, what: str) -> None:
        if self._records.legacy:
            raise FormatError(
                f"{self.path} is a legacy pickle LMDB: it stores no {what}. "
                "Convert it with scripts/convert_legacy.py (`imagefolder-lmdb convert-legacy`) to get them."
            )

    def storage_reason(self, index: int) -> str:
        """How record ``index`` was stored: ``passthrough``, ``reencoded:<why>``, ``reencoded-webp:<why>``, ..."""
        self._require_meta("storage reasons")
        assert self.storage_codes is not None
        return STORAGE_REASONS[int(self.storage_codes[self._check_index(index)])]

    def aspect_ratios(self) -> np.ndarray:
        """``width / height`` of each stored image, ``float64[len(self)]``, for aspect-ratio
        bucketing; from the meta's ``image_sizes``, no decoding."""
        self._require_meta("image sizes")
        assert self.image_sizes is not None
        return self.image_sizes[:, 0].astype(np.float64) / self.image_sizes[:, 1].astype(np.float64)

    # -- the offsets in use (None when reading through LMDB), for tests that look inside ----------

    @property
    def _offsets(self) -> np.ndarray | None:
        return getattr(self._records, "offsets", None)

    @_offsets.setter
    def _offsets(self, value: None) -> None:  # ds._offsets = None: read through LMDB from now on
        if value is not None:
            raise ValueError("reads by offset can only be turned off, by setting _offsets to None")
        if isinstance(self._records, LocatedRecords):
            self._records.stop_reading_by_offset()

    @property
    def _lengths(self) -> np.ndarray | None:
        return getattr(self._records, "lengths", None)


# LMDBReader is the whole reader without torch's Dataset base, for tools that should not pay torch's
# import (the workflow's verify step); PyTorch code uses LMDBDataset, built on it below.
class LMDBReader(_Index):
    """An ImageFolder stored in one LMDB file: the same indices, labels, classes and samples.

    ``LMDBDataset("results/train.lmdb", transform)`` replaces ``ImageFolder("train/", transform)``.
    How it reads (by offset, batches, processes, damaged files, ``lock``, legacy files):
    docs/training.md.

    Args:
        path (str or os.PathLike): ``results/<split>.lmdb`` (kept as ``ds.path``: its realpath), or its URL;
            a list of them: one dataset, ImageFolder over the union of their trees (reader/views.py).
        transform (callable, optional): takes the image ``decode`` makes and returns a transformed
            version, as ImageFolder's ``transform``. One that holds imagefolder_lmdb.transforms gets
            large RGB JPEGs opened but not decoded (``lazy_jpeg``), to decode at the size it needs.
        target_transform (callable, optional): takes the target (``target_type``) and transforms it, as torchvision's.
        decode (str): what ``transform`` receives: ``"pil"`` (default), an RGB ``PIL.Image``
            exactly as ImageFolder's loader makes it; ``"tensor"``, a uint8 ``(3, H, W)`` RGB tensor
            decoded by TorchCodec (pixel-equal to ``"pil"`` with the pinned versions); ``"bytes"``,
            the stored bytes (a JPEG unless stored as-is).
        lock (bool): use LMDB's ``-lock`` file and its reader table (default False: no lock file,
            no reader limit, read-only filesystems work). A file read in place only; refused for a URL.
        max_readers (int, optional): the reader table's slots with ``lock=True`` (default 126).
        crc_check (bool): check every record read against the CRC-32 recorded when it was written
            (default True; ~2 us for a 110 KB record, reader/format.checksum), raising
            DamagedRecordError on a mismatch. False skips it, for copies checked another way. A URL
            is always checked; legacy files record no CRC and are never checked.
        allow_pickle (bool): also read LEGACY folder2lmdb files (pickles) with a restricted unpickler (default False).
        max_in_flight (int): for a URL (``s3://``, ``gs://``, ``az://``, ``http(s)://``, the
            ``[remote]`` extra), the most ranged reads in flight at once (default 64).
        cache_dir (str or os.PathLike, optional): for a URL, a local folder keeping fetched records (not for a file).
        cache_bytes (int): the most bytes ``cache_dir`` holds (default 64 GiB).
        target_type (str or list of str): each sample's target, as torchvision's CelebA's:
            ``"label"`` (default: the class index; multi-label, the list of them), a field's name,
            or a list of names (a tuple of their values; one name: its value; none: None).
        revision (int, optional): of a split changed since its conversion (docs/FORMAT.md, version 5): the
            revision to read (default: the current one), kept for the dataset's life.
        classes (list of str, or a file, ``imagenet1k``, ``FILE.lmdb``): only these classes, numbered
            from 0 as ImageFolder over their folders (a view, reader/views.py). allow_mixed (bool): a
            union may mix label kinds, sizes, fields and orders (default False: refused, named).

    Attributes:
        classes, class_to_idx, samples, imgs, targets: ImageFolder's; ``samples`` holds
            ``(relative path, class index)`` pairs (legacy files: ``(key, label)``); multi-label
            files: the lists of class indices in both, whatever ``target_type`` says.
        label_kind, field_types: ``"single"``, ``"multi"`` or ``"none"`` (no labels: each target -1); each field's type.
        root (str or None): the folder converted, so ``os.path.join(root, samples[i][0])`` is
            ImageFolder's ``samples[i][0]``; None where unknown. Assign it if the source moved.
        class_words (list[str] or None): the words of each class, for ImageNet-1k WNIDs.
        image_sizes, checksums, storage_codes (numpy arrays or None): each record's stored
            ``(width, height)``, CRC-32 and storage code, from the meta; None for legacy files.
        short_side, max_side (int or None): the sizes a prepared copy was shrunk to.
        revision (int or None): the revision read of a split of revisions; None for a single split file.

    Raises:
        FileNotFoundError: nothing at ``path``.
        TruncatedFileError: the file is shorter than its LMDB header says (an incomplete copy).
        FormatError: not an imagefolder-lmdb file, a newer format version, a legacy file without
            ``allow_pickle=True``, or damage; the message says what to do. Reading a record whose
            bytes fail their CRC-32 raises its subclass DamagedRecordError (file or URL, index, the
            fix); from a URL, read twice first, as remote.records.ChecksumError, an OSError too.
        ReadersFullError: ``lock=True`` and every reader slot taken.
        ValueError: an unknown ``decode``, ``max_readers`` without ``lock=True`` or below 1, a ``target_type`` naming
            no field of the file (the message lists them), or settings other than those it is open with here.
        ImportError: ``decode="tensor"`` without TorchCodec. MissingDataFileError: a revision's file is gone.
        OSError: for a URL, an object that cannot be read after retries (``RemoteReadError``) or
            that was replaced since it was opened (``ObjectChangedError``), from imagefolder_lmdb.remote.
    """

    def __init__(
        self,
        path: DatasetPaths,
        transform: Callable[[Any], Any] | None = None,
        target_transform: Callable[[Any], Any] | None = None,
        decode: Decode = "pil",
        *,
        lock: bool = False,
        max_readers: int | None = None,
        allow_pickle: bool = False,
        crc_check: bool = True,
        max_in_flight: int = 64,
        cache_dir: str | os.PathLike[str] | None = None,
        cache_bytes: int = 64 << 30,
        target_type: TargetType = RESERVED_FIELD,
        revision: int | None = None,
        classes: ClassNames | None = None,
        allow_mixed: bool = False,
    ) -> None:
        _check_options(decode, lock, max_readers)
        check_target_options(target_type, target_transform)
        self.target_type = target_type
        view = view_request(path, classes, allow_mixed)  # a str: one file read whole (else reader/views.py)
        self.path = _resolved(view) if isinstance(view, str) else view.path
        self.transform = transform
        self.target_transform = target_transform
        self.transforms = joint_transforms(transform, target_transform)
        self.decode: str = decode
        self.lock = lock
        self.max_readers = max_readers
        self.allow_pickle = allow_pickle
        self.crc_check = crc_check
        if not isinstance(view, str):
            return open_view(self, view, _ViewFile, max_in_flight, cache_dir, cache_bytes, revision)
        self._set_index(_open_path(self, max_in_flight, cache_dir, cache_bytes, revision))

    def _env(self) -> lmdb.Environment:
        return shared_env(self.path, lock=self.lock, max_readers=self.max_readers)

    def _transaction(self) -> LmdbReadTxn:
        """A read transaction of the file (see begin_read): record sources open at most one per batch.
        Its ``get`` checks the pages on the way to each key first (guarded)."""
        return guarded(begin_read(self._env(), self.path), self.path, self.lock)

    # -- reading: the record source reads, the dataset transforms ---------------------------------

    def __getitems__(self, indices: Sequence[int]) -> list[tuple[Any, Any]]:
        """Samples ``[(image, target), ...]`` of ``indices``, read together by the record source
        (by offset: LocatedRecords.read, which hints a cold batch at once).

        DataLoader's batched fetch calls this instead of ``__getitem__`` once per sample; the list
        it returns goes to ``collate_fn``. Transforms run after every record has been read."""
        positions = [self._check_index(index) for index in indices]
        self._check_file()
        if len(positions) > 1:
            keep_freed_memory_for_reuse()
        wanting = lazy_jpeg_transforms(self.transform) if self.decode == "pil" else []
        batch = self._records.read(positions, LAZY if wanting else self.decode, self._transaction, self._sample_targets)
        samples = zip(batch, positions, strict=True)
        return [_transformed(self, image, target, index, wanting) for (image, target), index in samples]

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        return self.__getitems__([index])[0]

    def get_bytes(self, index: int) -> bytes:
        """The stored image bytes of record ``index``.

        Args:
            index (int): the record's index (negative counts from the end, as for a list).

        Returns:
            bytes: the value as stored (a JPEG unless stored-as-is), read as training reads it.

        Raises:
            IndexError: ``index`` out of range.
            FormatError: the record is missing (a damaged file); DamagedRecordError, its subclass:
                the bytes fail their CRC-32 (unless ``crc_check=False``; from a URL, always checked,
                remote.records.ChecksumError, a DamagedRecordError and an OSError).
        """
        return self._records.get_bytes(self._checked(index), self._transaction)

    def __repr__(self) -> str:
        return _described(self)


class _ViewFile(LMDBReader):
    """A file of a view, a dataset of its own whose ``samples`` are made on demand (view_records.listed_samples)."""


def _transformed(ds: LMDBReader, image: Any, target: Any, index: int, wanting: list[Any]) -> tuple[Any, Any]:
    """One sample through ``transform`` and ``target_transform``. A lazily opened JPEG (``wanting``: the
    transforms that asked for it) is decoded inside the transform: an error there is told which
    record and file it was; one too small for any reduction is decoded first, as without them."""
    if ds.transform is not None:
        try:
            image = ds.transform(decoded_unless_reduced(image, wanting) if wanting else image)
        except Exception as exc:
            if wanting:
                exc.add_note(
                    f"while transforming record {index} ({ds.samples[index][0]}) of {ds.path}, "
                    "whose JPEG the transform decodes (a lazily opened image, imagefolder_lmdb.transforms)"
                )
            raise
    if ds.target_transform is not None:  # never with no target: refused when the dataset is made
        target = ds.target_transform(target)
    return image, target


def _described(ds: LMDBReader) -> str:
    """``repr(ds)``, in the form of ImageFolder's."""
    lines = [
        f"Dataset {type(ds).__name__}",
        f"    Number of datapoints: {len(ds)}",
        f"    Root location: {ds.root}",  # as ImageFolder's repr names its folder
        f"    Path: {ds.path}",  # then this file's own lines, where VisionDataset puts extra_repr's
        f"    Classes: {len(ds.classes)}",
        f"    Decode: {ds.decode}",
    ]
    lines += ds.target_lines()
    if ds.is_legacy:
        lines.append("    Layout: legacy folder2lmdb pickle (allow_pickle=True)")
    resized = resized_words(ds.short_side, ds.max_side)
    if resized:
        lines.append(f"    Resized at conversion: {resized}")
    if ds.transforms is not None:  # as VisionDataset's repr: only the first line indented
        lines.append(f"    {ds.transforms!r}")
    return "\n".join(lines)


def _build_dataset_class() -> type:
    """``LMDBDataset``: the methods above on top of torchvision's ``ImageFolder`` (its ``__init__``
    never run: the file holds the index), or of torch's ``Dataset`` without torchvision (drop_in.py)."""
    cls = type("LMDBDataset", (LMDBReader, *dataset_bases()), {"__module__": __name__})
    cls.__doc__ = LMDBReader.__doc__
    return cls


def __getattr__(name: str) -> Any:
    # PEP 562: `from dataset import LMDBDataset` (and unpickling one) builds the class once, importing
    # torch then; the writers never ask for it. Cached in the module, so pickle finds the same class.
    if name == "LMDBDataset":
        cls = globals()["LMDBDataset"] = _build_dataset_class()
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if TYPE_CHECKING:
    LMDBDataset = LMDBReader
