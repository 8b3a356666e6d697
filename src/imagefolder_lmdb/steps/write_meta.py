"""Rule write_meta: store the meta (classes, labels, paths, sizes, checksums, settings, counts)
in the merged LMDB and place it at its final path.

The merged file is hard-linked (copied across filesystems) to a temporary name beside the final
path, the meta goes in with one transaction, then where each record lies (add_locations: a walk
of the B-tree and one more transaction), and only then is it renamed into place: a reader never
meets a final file without meta. Passed-through image bytes are not copied again. A disk too
full for it is named (its mount point, the room needed and free) before or while writing, and the
temporary file never stays behind.
"""

import errno
import json
import logging
import os
import shutil
from functools import partial
from typing import Any, TextIO

import lmdb
import numpy as np

from imagefolder_lmdb.board.rule_runner import run_rule
from imagefolder_lmdb.classes.lists import wordnet_words
from imagefolder_lmdb.config.step_settings import WriteMetaSettings
from imagefolder_lmdb.reader import LOCATION_DTYPE, META_KEYS, Meta, encode_meta
from imagefolder_lmdb.reader.format_targets import FieldColumn
from imagefolder_lmdb.reader.format_unlabelled import UNLABELLED
from imagefolder_lmdb.run.made_from import CHANGED_GROUPS
from imagefolder_lmdb.run.made_from import KEY as MADE_FROM_KEY
from imagefolder_lmdb.sources import files_in_place
from imagefolder_lmdb.work.files import (
    CountsReport,
    ManifestHeader,
    Sample,
    ShardReport,
    column,
    kept_indices,
    read_counts,
    read_json,
    read_manifest,
    read_manifest_header,
    read_shard_report,
)
from imagefolder_lmdb.work.source_locations import FileLocation
from imagefolder_lmdb.writing import meta_document
from imagefolder_lmdb.writing.atomic import publish, remove_path, temporary_path
from imagefolder_lmdb.writing.disk_space import DiskFullError, check_free_space, disk_full_message
from imagefolder_lmdb.writing.hold_points import hold_point
from imagefolder_lmdb.writing.lmdb_open import count_records, open_lmdb_readonly
from imagefolder_lmdb.writing.lmdb_writer import LMDBWriter
from imagefolder_lmdb.writing.record_locations import LocationCount, add_locations, current_locations

log = logging.getLogger("imagefolder_lmdb.write_meta")

#: The writer meta/json's ``tool`` names (its version: writing/meta_document.py's TOOL_VERSION).
TOOL = "imagefolder-lmdb-workflow"


def class_list_entry(counts: CountsReport) -> dict[str, Any]:
    """Where the classes came from and what lay outside them (count_check's counts report)."""
    outside = counts.outside_class_list
    return {
        "origin": counts.class_list["origin"],
        "images_outside": outside["images"],
        "classes_outside": outside["classes"],
        "classes_unread": outside["unread_classes"],
    }


def words_entry(classes: list[str]) -> dict[str, list[str]]:
    """meta/json's ``class_words`` (the WordNet words of each class) when every class is an
    ImageNet-1k WNID; nothing otherwise."""
    words = wordnet_words(classes)
    return {} if words is None else {"class_words": words}


def recorded_root(header: ManifestHeader, kept: list[int], elsewhere: set[int]) -> str | None:
    """meta/json's ``source.root``: the folder under which every record's relative path is its
    source file, as ImageFolder's ``samples`` are, so ``os.path.join(root, path)`` finds it. Only a
    folder read in place has one: an archive's members are no files, an unpacked tree lies in the
    work folder (deleted after success), and a val image labelled by its file name may lie in no
    ``<wnid>/`` folder (``elsewhere``: the manifest indices of such images; a val folder sorted into
    them has a root)."""
    if not files_in_place(header.kind) or not elsewhere.isdisjoint(kept):
        return None
    return header.root


def at_own_path(sample: Sample) -> bool:
    """Whether the sample's file is ``root/path`` (no location, or a file location naming it)."""
    location = sample.location  # no FileLocation made per sample to compare (1.28M for ImageNet)
    return location is None or (type(location) is FileLocation and location.file == sample.path)


def build_meta(
    manifest_path: str,
    counts: CountsReport,
    reports: list[ShardReport],
    settings: WriteMetaSettings,
    made_from: dict[str, Any] | None = None,
    rows: tuple[int, int] | None = None,
) -> Meta:
    """``made_from``: what the split was made from (run/made_from.py), recorded so that a later run
    can tell whether the dataset still matches its source and settings. ``rows``: only the manifest's
    images ``start..stop-1`` (one shard's data file, steps/data_file.py), which are then its source's images."""
    header = read_manifest_header(manifest_path)
    kept = kept_indices(reports)
    samples: dict[int, Sample] = {}
    elsewhere: set[int] = set()
    for sample in read_manifest(manifest_path, *rows) if rows else read_manifest(manifest_path):
        if not at_own_path(sample):
            elsewhere.add(sample.index)
        sample.location = None  # not needed further: ImageNet's 1.28M locations not held to the end
        samples[sample.index] = sample
    stored = [samples[i] for i in kept]
    return meta_document.build_meta(
        tool=TOOL,
        classes=header.classes,
        storage=column(reports, "storage"),
        settings={"encode": settings.encode.recorded()},
        source={
            "path": counts.source,
            "root": recorded_root(header, kept, elsewhere),
            "images": header.count if rows is None else rows[1] - rows[0],
            "classes": len(header.classes),
            "ignored_files": counts.ignored_files,
            **({"inside": counts.inside} if counts.inside else {}),  # splits.<name>.root: the folder read
        },
        source_bytes=column(reports, "source_bytes"),
        stored_bytes=column(reports, "stored_bytes"),
        skipped=column(reports, "skipped"),
        sizes=np.stack([column(reports, "width"), column(reports, "height")], axis=1),
        crc32=column(reports, "crc32"),
        paths=[sample.path for sample in stored],
        **stored_targets(header, stored),
        **document_entries(counts, header.classes, made_from),
    )


def stored_targets(header: ManifestHeader, stored: list[Sample]) -> dict[str, Any]:
    """The builder's ``labels`` (or a multi-label split's ``label_lists``) and ``fields`` of the
    stored images, from the manifest (a label file's annotations: sources/table_listing.py)."""
    if header.label_kind == "multi":
        targets: dict[str, Any] = {"label_lists": [annotated(sample, "labels", []) for sample in stored]}
    else:  # a split without labels (label_kind "none"): each -1, and the file says so (format version 6)
        targets = {"labels": [sample.label for sample in stored], "unlabelled": header.label_kind == UNLABELLED}
    if header.field_types:
        targets["fields"] = {
            name: FieldColumn(kind, [annotated(sample, "fields", {})[name] for sample in stored])
            for name, kind in header.field_types.items()
        }
    return targets


def annotated(sample: Sample, key: str, default: Any) -> Any:
    return default if sample.annotations is None else sample.annotations.get(key, default)


def document_entries(counts: CountsReport, classes: list[str], made_from: dict[str, Any] | None) -> dict[str, Any]:
    """meta/json's entries beyond the builder's own: the class list's origin, the words of the
    classes, what the split was made from."""
    made_from_entry = {MADE_FROM_KEY: made_from} if made_from is not None else {}
    return {"class_list": class_list_entry(counts), **words_entry(classes), **made_from_entry}


#: LMDB's page size, and the pages a meta transaction copies besides its values (the path to each
#: key, the free list): room write_meta asks for beyond the meta's bytes.
PAGE_BYTES = 4096
OVERHEAD_PAGES = 64


def meta_room(values: dict[bytes, bytes], records: int) -> int:
    """About how many bytes storing the meta adds to the file: its values, each on pages of its
    own, the record locations add_locations stores after them, and LMDB's own pages."""
    pages = sum(len(value) // PAGE_BYTES + 1 for value in values.values())
    return (pages + OVERHEAD_PAGES) * PAGE_BYTES + LOCATION_DTYPE.itemsize * records


def link_or_copy(source: str, destination: str, then_bytes: int) -> None:
    """Give ``destination`` the content of ``source`` without copying the bytes where possible (a
    hard link); across file systems a copy. Either way, stop before writing when the disk holding
    ``destination`` lacks room for the copy and the ``then_bytes`` written into it afterwards, and
    name that disk when it fills up all the same."""
    remove_path(destination)
    try:
        os.link(source, destination)
    except OSError:
        needed = os.path.getsize(source) + then_bytes
    else:
        check_free_space(destination, then_bytes)
        return
    check_free_space(destination, needed)
    try:
        shutil.copyfile(source, destination)
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            raise DiskFullError(disk_full_message(destination, needed)) from exc
        raise


def same_meta_stored(env: lmdb.Environment, values: dict[bytes, bytes]) -> bool:
    """Whether the file already holds exactly this meta, apart from its creation time and record
    locations: the merged file is hard-linked, so an attempt killed after its meta transaction
    wrote into it. Not writing it again keeps the LMDB transaction id, which the record locations
    are tied to, the same as in an uninterrupted run, and so the whole file."""
    with env.begin() as txn:
        if any(txn.get(key) != value for key, value in values.items() if key != META_KEYS["json"]):
            return False
        stored = txn.get(META_KEYS["json"])
    if stored is None:
        return False
    volatile = ("created", "locations")
    document, wanted = json.loads(stored), json.loads(values[META_KEYS["json"]])
    return {k: v for k, v in document.items() if k not in volatile} == {
        k: v for k, v in wanted.items() if k not in volatile
    }


def store_meta(writer: LMDBWriter, path: str, values: dict[bytes, bytes]) -> LocationCount:
    """The meta, then the record locations, into the file ``writer`` has open; closed after. A full
    disk is named as such, with the room needed (``writer.adds_bytes``)."""
    try:
        if not same_meta_stored(writer.env, values):
            writer.put_many(values)
        located = current_locations(writer.env, path) or add_locations(writer.env, path)
    except BaseException as exc:
        writer.abandon()
        if isinstance(exc, lmdb.Error):
            writer.raise_if_disk_full(exc)
        raise
    writer.close()  # names a full disk itself
    return located


def write_meta(
    merged: str,
    manifest: str,
    counts_path: str,
    report_paths: list[str],
    output: str,
    settings: WriteMetaSettings,
    made_from: dict[str, Any] | None = None,
) -> Meta:
    reports = [read_shard_report(path) for path in report_paths]
    meta = build_meta(manifest, read_counts(counts_path), reports, settings, made_from)
    env = open_lmdb_readonly(merged)
    records = count_records(env)
    env.close()
    if records < meta.length:
        raise RuntimeError(f"{merged} holds {records} records, the meta describes {meta.length}")
    place_with_meta(merged, output, meta)
    return meta


def place_with_meta(merged: str, output: str, meta: Meta, shard: int | None = None) -> None:
    """``merged``'s records with ``meta`` and their locations at ``output``, complete before it is
    renamed there. ``shard``: the output is that shard's data file (merge: false, steps/data_file.py),
    which holds at its own moment."""
    values = encode_meta(meta)
    del values[META_KEYS["locations"]]  # an all-zero placeholder; add_locations stores the real ones
    temporary = temporary_path(output)
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    room = meta_room(values, meta.length)
    try:  # whatever stops it, no partial file stays behind to fill the disk
        link_or_copy(merged, temporary, room)
        writer = LMDBWriter(temporary, expected_bytes=os.path.getsize(temporary) + room, adds_bytes=room)
        located = store_meta(writer, temporary, values)
        if shard is None:
            hold_point("write_meta")  # complete, but not yet at its final path
        else:
            hold_point("data-file", shard)
    except BaseException:
        remove_path(temporary)
        raise
    publish(temporary, output)
    if shard is None:
        hold_point("written")  # at its final path, its reports not yet redone
    log.info(
        "%s: %d images, %d classes, %d skipped, %d located for one-read access",
        output,
        meta.length,
        len(meta.classes),
        len(meta.document["stats"]["skipped"]),
        located.located,
    )


def main(smk: Any, stream: TextIO) -> None:
    write_meta(
        smk.input.merged,
        smk.input.manifest,
        smk.input.counts,
        list(smk.input.reports),
        smk.output[0],
        WriteMetaSettings.from_params(smk.params),
        recorded_made_from(smk.input.made_from[0]),
    )


def recorded_made_from(path: str) -> dict[str, Any]:
    """The made_from file as the dataset records it (which groups changed is this run's news)."""
    made_from = read_json(path)
    made_from.pop(CHANGED_GROUPS, None)
    return made_from


#: What the rule's script (scripts/write_meta.py) calls with ``snakemake``: ``main`` with the rule's log set up.
run_in_rule = partial(run_rule, main)
