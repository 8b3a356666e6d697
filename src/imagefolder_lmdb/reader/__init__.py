"""The reader of imagefolder-lmdb files: ``LMDBDataset``, a drop-in for torchvision's ``ImageFolder``.

Its dependencies are lmdb, numpy, Pillow and torch (``decode="tensor"`` also TorchCodec); it imports
nothing else of the package (a URL goes to the opener ``remote`` registers: ``url_openers``), so the workflow's
writers import the format, the LMDB layout, the JPEG marker walk and the malloc setting from it (one
home each).
Importing it imports no torch: ``LMDBDataset`` does, on first access. What lives where:

==================== ===================================================================================
``format``           the on-disk format: keys, meta layout, ``Meta``, ``FormatError``
``keys``             record keys, meta keys, the record checksum, ``FormatError`` (no numpy: the record writers' jobs)
``codec``            the codec registry: what each codec does, each storage code's reason and codec
``format_targets``   the format's version-4 keys: label lists and typed fields, packed, unpacked, checked
``lmdb_layout``      LMDB's on-disk layout (pages, nodes, meta page), shared with lmdb_pages.py
``lmdb_pages``       where each value lies, found by walking the B-tree with plain reads (``walk``)
``lmdb_check``       the whole file checked with plain reads before LMDB reads it (``check``)
``file_checks``      an LMDB file's header and pages checked with plain reads (``check_lmdb_file``,
                     ``PageGuard``, ``TruncatedFileError``)
``handles``          opening read-only, the per-process table of environments and descriptors
                     (``shared_env``, ``shared_fd``, ``close_all_envs``), ``ReadersFullError``
``identity``         which file a dataset opened: content id and storage token (``FileChangedError``)
``decoding``         stored bytes to PIL images or tensors (``pil_decode``, ``tensor_decode``)
``jpeg_markers``     JPEG's marker walk, shared with the writer (writing/reencode.py)
``records``          the record sources' interface
``records_lmdb``     records read through LMDB
``offset_reads``     a record's bytes read by file offset (``os.pread``)
``record_locations`` whether a file's recorded locations fit it (``locations_problem``)
``records_located``  records read by offset, cold batches hinted (``posix_fadvise``)
``memory``           glibc malloc kept for the next batch (``keep_freed_memory_for_reuse``; the writer's too)
``legacy``           folder2lmdb pickles, ``allow_pickle=True`` only
``drop_in``          ImageFolder's ``loader``, ``extensions``, ``transforms``, ``find_classes``
``dataset``          ``LMDBReader`` and ``LMDBDataset``
``targets``          a sample's target (``target_type``); ``multi_hot``, ``collate_label_lists`` (torch when called)
``document``         a file's meta document read on its own, None for what is not a dataset (``read_document``)
``urls``             which paths are URLs (``is_url``), handed to imagefolder_lmdb.remote
``url_openers``      who opens a URL: the opener imagefolder_lmdb.remote registers (an entry point)
``views``            a class subset, several files as one (``LMDBDataset(path, classes=...)``, ``[a, b]``)
``view_index``       a view's index as numpy arrays: which file and record each sample is, its labels
``view_records``     a view's record source; what a loader's state records of a dataset (``DatasetState``)
``class_names``      class lists read: a file of names, ``imagenet1k``, ``FILE.lmdb`` (the workflow's too)
==================== ===================================================================================
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Each name is imported from its module on first use (PEP 562, ``__getattr__`` below): a rule job that
# needs the format's keys does not import the whole reader (numpy, PIL, lmdb) at its start.
if TYPE_CHECKING:
    from imagefolder_lmdb.reader.codec import (
        CODECS,
        STORAGE,
        STORAGE_CODES,
        STORAGE_REASONS,
        Codec,
        codec_of,
        format_version_of,
    )
    from imagefolder_lmdb.reader.dataset import LMDBDataset, LMDBReader, class_words, size_setting, source_root
    from imagefolder_lmdb.reader.decoding import (
        DECODE_CHOICES,
        TORCHCODEC_PIN,
        Decode,
        encoded_tensor_decode,
        pil_decode,
        pil_to_chw,
        tensor_decode,
    )
    from imagefolder_lmdb.reader.file_checks import (
        LmdbHeader,
        PageGuard,
        TruncatedFileError,
        check_lmdb_file,
        read_lmdb_header,
    )
    from imagefolder_lmdb.reader.format import (
        CHECKSUMMED_ARRAYS,
        CHECKSUMMED_FIELDS,
        FORMAT_ID,
        FORMAT_VERSION,
        LEGACY_KEYS,
        LOCATION_DTYPE,
        READABLE_VERSIONS,
        DamagedRecordError,
        Meta,
        decode_meta,
        encode_document,
        encode_meta,
        field_checksum,
        is_legacy_pickle_lmdb,
    )
    from imagefolder_lmdb.reader.handles import (
        DEFAULT_MAX_READERS,
        ReadersFullError,
        close_all_envs,
        guarded,
        open_env_readonly,
        readers_full_message,
        shared_env,
        shared_fd,
        shared_guard,
    )
    from imagefolder_lmdb.reader.identity import (
        FileChangedError,
        FileIdentity,
        LocalFileToken,
        StorageToken,
        content_id,
    )
    from imagefolder_lmdb.reader.keys import KEY_WIDTH, MAX_RECORDS, META_KEYS, FormatError, checksum, record_key
    from imagefolder_lmdb.reader.legacy import legacy_keys, legacy_loads, legacy_record
    from imagefolder_lmdb.reader.memory import (
        HEAP_BLOCKS_UP_TO,
        KEEP_FREED_BYTES,
        MALLOC_ENV,
        keep_freed_memory_for_reuse,
    )
    from imagefolder_lmdb.reader.record_locations import (
        SPOT_CHECKS,
        LocationsWarning,
        locations_checksum,
        locations_layout_problem,
        locations_problem,
        spot_check_indices,
    )

#: Where each public name lives: the module under imagefolder_lmdb.reader that defines it.
_HOMES: dict[str, tuple[str, ...]] = {
    "codec": ("CODECS", "STORAGE", "STORAGE_CODES", "STORAGE_REASONS", "Codec", "codec_of", "format_version_of"),
    "dataset": ("LMDBReader", "LMDBDataset", "class_words", "size_setting", "source_root"),
    "decoding": (
        "DECODE_CHOICES",
        "TORCHCODEC_PIN",
        "Decode",
        "encoded_tensor_decode",
        "pil_decode",
        "pil_to_chw",
        "tensor_decode",
    ),
    "file_checks": ("LmdbHeader", "PageGuard", "TruncatedFileError", "check_lmdb_file", "read_lmdb_header"),
    "format": (
        "CHECKSUMMED_ARRAYS",
        "CHECKSUMMED_FIELDS",
        "FORMAT_ID",
        "FORMAT_VERSION",
        "LEGACY_KEYS",
        "LOCATION_DTYPE",
        "READABLE_VERSIONS",
        "DamagedRecordError",
        "Meta",
        "decode_meta",
        "encode_document",
        "encode_meta",
        "field_checksum",
        "is_legacy_pickle_lmdb",
    ),
    "keys": ("FormatError", "KEY_WIDTH", "MAX_RECORDS", "META_KEYS", "checksum", "record_key"),
    "handles": (
        "DEFAULT_MAX_READERS",
        "ReadersFullError",
        "close_all_envs",
        "guarded",
        "open_env_readonly",
        "readers_full_message",
        "shared_env",
        "shared_fd",
        "shared_guard",
    ),
    "identity": ("FileChangedError", "FileIdentity", "LocalFileToken", "StorageToken", "content_id"),
    "legacy": ("legacy_keys", "legacy_loads", "legacy_record"),
    "memory": ("HEAP_BLOCKS_UP_TO", "KEEP_FREED_BYTES", "MALLOC_ENV", "keep_freed_memory_for_reuse"),
    "record_locations": (
        "SPOT_CHECKS",
        "LocationsWarning",
        "locations_checksum",
        "locations_layout_problem",
        "locations_problem",
        "spot_check_indices",
    ),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "CHECKSUMMED_ARRAYS",
    "CHECKSUMMED_FIELDS",
    "CODECS",
    "DECODE_CHOICES",
    "DEFAULT_MAX_READERS",
    "FORMAT_ID",
    "FORMAT_VERSION",
    "HEAP_BLOCKS_UP_TO",
    "KEEP_FREED_BYTES",
    "KEY_WIDTH",
    "LEGACY_KEYS",
    "LOCATION_DTYPE",
    "MALLOC_ENV",
    "MAX_RECORDS",
    "META_KEYS",
    "READABLE_VERSIONS",
    "SPOT_CHECKS",
    "STORAGE",
    "STORAGE_CODES",
    "STORAGE_REASONS",
    "TORCHCODEC_PIN",
    "Codec",
    "DamagedRecordError",
    "Decode",
    "FileChangedError",
    "FileIdentity",
    "FormatError",
    "LMDBDataset",
    "LMDBReader",
    "LmdbHeader",
    "LocalFileToken",
    "LocationsWarning",
    "Meta",
    "PageGuard",
    "ReadersFullError",
    "StorageToken",
    "TruncatedFileError",
    "check_lmdb_file",
    "checksum",
    "class_words",
    "close_all_envs",
    "codec_of",
    "content_id",
    "decode_meta",
    "encode_document",
    "encode_meta",
    "encoded_tensor_decode",
    "field_checksum",
    "format_version_of",
    "guarded",
    "is_legacy_pickle_lmdb",
    "keep_freed_memory_for_reuse",
    "legacy_keys",
    "legacy_loads",
    "legacy_record",
    "locations_checksum",
    "locations_layout_problem",
    "locations_problem",
    "open_env_readonly",
    "pil_decode",
    "pil_to_chw",
    "read_lmdb_header",
    "readers_full_message",
    "record_key",
    "shared_env",
    "shared_fd",
    "shared_guard",
    "size_setting",
    "source_root",
    "spot_check_indices",
    "tensor_decode",
]


def __getattr__(name: str) -> Any:
    # PEP 562: a name is imported from its module when first asked for, then kept here. LMDBDataset, a
    # torch Dataset, is built (importing torch) on first access, in imagefolder_lmdb.reader.dataset,
    # where pickle finds it; the writers never ask for it.
    home = _HOME_OF.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value
