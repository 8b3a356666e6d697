"""A changed source applied as a change (issue 58): the same ``convert SOURCE OUTDIR`` on a folder whose
images or labels changed since its dataset was made writes the split's next revision (docs/FORMAT.md, "A
split of revisions"), not the whole split again.

What changed follows from the source and the dataset, never from Snakemake's records: the split is
listed as ImageFolder lists it now (the workflow's own listing, sources/folder.py) and set against the
current revision's samples. A path only the listing has is added (or, where a path only the revision
has carries its file name and size, and its file was written before the revision or holds the stored
bytes, moved); a path only the revision has is removed; a
path in both is replaced where its file is not the one stored (its size differs from the recorded
source size, or, touched since the revision was made, its CRC-32 differs from a record stored byte for
byte); a path in both under another label is relabelled. Only the added and replaced images are read,
and only in groups (class folders) whose record changed (run/made_from.py, sources/source_record.py).

The change runs in this process (writing/added_records.py, then ``new_revision``), with the reports
Snakemake would make again (verify report, contact sheet, class histogram) written after it, each made
from what changed (``write_reports``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import json
import os
import time
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from imagefolder_lmdb.classes.lists import ClassList, is_dataset
from imagefolder_lmdb.classes.plan import ClassPlan, ClassSource
from imagefolder_lmdb.run.made_from import KEY, VERSION, Verdict, recipe_differences
from imagefolder_lmdb.sources import kind_of_layout
from imagefolder_lmdb.sources.base import Listing, Request
from imagefolder_lmdb.sources.folder import FolderSource, list_tree
from imagefolder_lmdb.sources.labellings import label_rule_changes, label_settings
from imagefolder_lmdb.sources.listing_options import ListingOptions
from imagefolder_lmdb.work.folder_listing import LOOSE_FILES

if TYPE_CHECKING:
    from imagefolder_lmdb.reader.format import Meta
    from imagefolder_lmdb.work.paths import RunPaths

#: A file touched this many seconds before its revision's time may still be another than the one
#: stored, where that time is in whole seconds (a single file's: the end of its conversion) or the
#: file's own times are (a filesystem with coarse timestamps). A revision a change wrote is dated by
#: the listing it was made from, to the microsecond: a file of fine timestamps touched before it is
#: the one the change saw (issue 58: the images a change had just moved were read again by the next).
TOUCHED_SLACK = 2.0


class ChangeError(ValueError):
    """A change cannot be applied; the message is the line to show (the fix included)."""


@dataclass
class SplitChange:
    """What a split is now against its current revision: the whole listing, what to encode, what moved."""

    root: str
    samples: list[tuple[str, int]]
    classes: list[str]
    added: list[tuple[str, int]]  # added or replaced: encoded into the new data file
    moved: dict[str, str] = field(default_factory=dict)  # new path -> old path
    replaced: int = 0
    planned_on: int | None = None
    listed: str | None = None  # when the listing was taken: the new revision's date


def changeable(split: Mapping[str, Any], verdict: Verdict, document: Mapping[str, Any] | None) -> bool:
    """Whether a split's difference from its dataset is one a new revision holds: its images or label
    files changed, no setting (a setting changed stays a full conversion under ``--overwrite``)."""
    if verdict.state != "changed" or document is None or not reads_folder(split):
        return False
    recorded = document.get(KEY)
    if not isinstance(recorded, dict) or recorded.get("version") != VERSION:
        return False
    if document.get("label_kind", "single") != "single" or document.get("fields"):
        return False
    before, now = recorded["recipe"], verdict.made_from["recipe"]
    classes = document.get("classes")
    return not recipe_differences(before, now, classes) and not label_rule_changes(before, now, classes)


def reads_folder(split: Mapping[str, Any]) -> bool:
    """A split read from a folder in place (the one kind whose images a change can find by path)."""
    source = split.get("source")
    if kind_of_layout(str(split.get("layout"))) is not None or not isinstance(source, str):
        return False
    return os.path.isdir(folder_of(split))


def folder_of(split: Mapping[str, Any]) -> str:
    root = (split.get("root") or "").strip("/")
    return os.path.join(split["source"], *root.split("/")) if root else str(split["source"])


def listing_now(split: Mapping[str, Any], classes: ClassSource, shared: Mapping[str, list[str]]) -> Listing:
    """The split as the workflow's count_check lists it now, its labels on its class list."""
    request = Request(source=split["source"], layout=split["layout"], extract=False, root=split.get("root") or "")
    description = FolderSource().prepare(request, "", "")
    labels = label_settings(split)
    explicit = not is_dataset(classes.listed_in)  # as count_check: a list from another dataset may lack classes here
    wanted = None if classes.names is None else ClassList(list(classes.names), classes.words(), explicit)
    if classes.kind == "shared" and classes.shared_from in shared:
        wanted = ClassList(list(shared[str(classes.shared_from)]), classes.words(), explicit=False)
    quiet = {"disable": True}  # a change says what it did in one line, not a bar per folder
    listing = list_tree(description, labels, quiet, wanted, ListingOptions.from_split(dict(split)))
    if listing.label_kind is not None or listing.field_types:
        raise ChangeError(f"{description.source}: a multi-label or field split changes by a full conversion")
    return listing if wanted is None else on_class_list(listing, wanted.names)


def on_class_list(listing: Listing, names: list[str]) -> Listing:
    """The listing's labels as indices into ``names`` (a superset of its classes, both sorted)."""
    index = {name: position for position, name in enumerate(names)}
    relabel = [index[name] for name in listing.classes]
    samples = [dataclasses.replace(sample, label=relabel[sample.label]) for sample in listing.samples]
    return dataclasses.replace(listing, classes=list(names), samples=samples)


def made_time(created: str) -> float:
    """A revision's ``created`` as seconds since the epoch (0: unknown, every touched file checked)."""
    try:
        return datetime.datetime.fromisoformat(created).timestamp()
    except (TypeError, ValueError):
        return 0.0


def listing_time() -> str:
    """Now, to the microsecond: a change's revision is dated by when its source was listed."""
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="microseconds")


def group_of(path: str) -> str:
    """The source record's group a listed path lies in: its class folder, or the loose files."""
    return path.split("/", 1)[0] if "/" in path else LOOSE_FILES


def file_crc(path: str) -> int:
    with open(path, "rb") as stream:
        return zlib.crc32(stream.read())


@dataclass(frozen=True)
class Stored:
    """What the current revision recorded of one sample's source file."""

    source_bytes: int
    crc32: int
    passthrough: bool  # stored byte for byte: its CRC-32 is the source file's


def is_other_file(path: str, stored: Stored, made: float) -> bool:
    """Whether the file at ``path`` is not the one whose record is stored (a replaced image)."""
    info = os.stat(path)
    if info.st_size != stored.source_bytes:
        return True
    if max(info.st_mtime, info.st_ctime) < made - slack(info, made):
        return False  # untouched since the revision's listing: the file stored
    return not stored.passthrough or file_crc(path) != stored.crc32


def slack(info: os.stat_result, made: float) -> float:
    """How long before ``made`` a touch may still be after it: none where both the revision's time and
    the file's are finer than a second, else ``TOUCHED_SLACK``."""
    whole = 1_000_000_000
    fine = made % 1 != 0 and (info.st_mtime_ns % whole != 0 or info.st_ctime_ns % whole != 0)
    return 0.0 if fine else TOUCHED_SLACK


@dataclass(frozen=True)
class StoredRecords:
    """What the current revision recorded of each sample's source file, found by path: one dict of
    positions into the revision's columns, a ``Stored`` made only for the paths looked at."""

    position: dict[str, int]
    source_bytes: np.ndarray
    crc32: np.ndarray
    passthrough: np.ndarray

    @classmethod
    def of(cls, meta: Meta) -> StoredRecords:
        positions = dict(zip(meta.paths, range(len(meta.paths)), strict=True))
        return cls(positions, meta.source_bytes, meta.crc32, meta.storage == 0)

    def __contains__(self, path: object) -> bool:
        return path in self.position

    def __getitem__(self, path: str) -> Stored:
        at = self.position[path]
        return Stored(int(self.source_bytes[at]), int(self.crc32[at]), bool(self.passthrough[at]))


def find_change(pointer: str, listing: Listing, changed_groups: Mapping[str, str], time_of: Any = None) -> SplitChange:
    """The change from the split at ``pointer`` to ``listing``; ``changed_groups``: the groups whose
    record changed (only their images are looked at again)."""
    from imagefolder_lmdb.reader.revisions import composed_meta
    from imagefolder_lmdb.writing.revisions import read_split

    state = read_split(pointer)
    stored = StoredRecords.of(composed_meta(state.current, state.metas))
    made = made_time(state.current.created) if time_of is None else time_of
    samples = [(sample.path, sample.label) for sample in listing.samples]
    now = {path for path, _ in samples}
    root = listing.root
    replaced = {
        path
        for path, _ in samples
        if path in stored
        and group_of(path) in changed_groups
        and is_other_file(os.path.join(root, path), stored[path], made)
    }
    gone = {path: stored[path] for path in stored.position if path not in now}
    moved = moved_images(root, [path for path, _ in samples if path not in stored], gone, made) if gone else {}
    added = [(path, label) for path, label in samples if (path not in stored and path not in moved) or path in replaced]
    return SplitChange(root, samples, list(listing.classes), added, moved, len(replaced), state.number)


def moved_images(root: str, new_paths: list[str], gone: Mapping[str, Stored], made: float) -> dict[str, str]:
    """``{new path: old path}`` of images moved to another folder: a path gone with the same file name
    whose record is this file (see ``is_moved_file``)."""
    by_name: dict[str, list[str]] = {}
    for path in gone:
        by_name.setdefault(os.path.basename(path), []).append(path)
    moved: dict[str, str] = {}
    for path in new_paths:
        for old in by_name.get(os.path.basename(path), []):
            if is_moved_file(os.path.join(root, path), gone[old], made):
                moved[path] = old
                by_name[os.path.basename(path)].remove(old)
                break
    return moved


def is_moved_file(path: str, record: Stored, made: float) -> bool:
    """Whether the file at ``path`` (a new path with a gone path's file name) is that path's stored file.
    A move (a rename) keeps a file's size and modification time: the same size and a time from before
    the revision was made is taken as the same file without reading it, as the source record takes an
    unchanged folder (sources/source_record.py); a file written since is read once, where its record
    holds its bytes as they were (stored byte for byte), to compare CRC-32s."""
    info = os.stat(path)
    if info.st_size != record.source_bytes:
        return False
    if info.st_mtime < made - slack(info, made):
        return True  # its bytes written before the revision; a rename changes the ctime, never the mtime
    return record.passthrough and file_crc(path) == record.crc32


@dataclass(frozen=True)
class Applied:
    """A change written: the revision, what changed, how long it took, the split's data files."""

    split: str
    revision: int
    changes: dict[str, int]
    seconds: float
    files: int
    first_change: bool
    pointer: str
    replaced: int = 0  # images replaced at the same path: counted as added and as removed

    def lines(self) -> list[str]:
        """What the summary says of it (and, the first time, what the split now is on disk)."""
        counts = self.changes
        said = [
            f"{self.split}: revision {self.revision}: {counts.get('added', 0)} added, "
            f"{counts.get('relabelled', 0)} relabelled, {counts.get('removed', 0)} removed"
            + (f", {counts['moved']} moved" if counts.get("moved") else "")
            + (f" ({self.replaced} of them replaced: added and removed)" if self.replaced else "")
            + f"; {self.seconds:.1f} s"
        ]
        if self.first_change:
            said.append(
                f"{self.pointer} is now a split of {self.files} files (its data in {self.pointer}.d/): copy "
                f"{os.path.basename(self.pointer)} together with {os.path.basename(self.pointer)}.d/, or run "
                f"imagefolder-lmdb flatten {self.pointer} to make it one file again"
            )
        return said


def apply_change(
    name: str, pointer: str, change: SplitChange, config: Mapping[str, Any], verdict: Verdict, workers: int = 1
) -> Applied:
    """Encode the change's added images into one data file (by ``workers`` threads), then write the
    split's next revision."""
    from imagefolder_lmdb.writing.added_records import write_added
    from imagefolder_lmdb.writing.hold_points import hold_point
    from imagefolder_lmdb.writing.reencode import EncodeSettings
    from imagefolder_lmdb.writing.revisions import new_revision

    added_file = added_file_path(config, name)
    skipped: list[dict[str, Any]] = []
    if change.added:
        if os.path.exists(added_file):
            os.remove(added_file)  # a killed change's: its images may have changed since
        source = {"path": change.root, "root": change.root, "ignored_files": 0}
        settings = EncodeSettings.from_config(config["encode"])
        skipped = write_added(added_file, change.root, change.added, change.classes, settings, source, workers)
        hold_point("change-added")  # the added file complete, the pointer not yet replaced
    left_out = {entry["path"] for entry in skipped}
    samples = [(path, label) for path, label in change.samples if path not in left_out]
    document = {"made_from": verdict.made_from, "stats": {"skipped": skipped}}
    written = new_revision(
        pointer,
        samples,
        change.classes,
        [added_file] if change.added else [],
        planned_on=change.planned_on,
        moved=change.moved,
        document=document,
        created=change.listed,
    )
    hold_point("change-written")  # the pointer replaced, the added file and the reports not yet
    remove_added_file(config, name)  # linked into the data folder by new_revision
    files = len(written.data_files)
    return Applied(name, written.revision, written.changes, 0.0, files, written.first_change, pointer, change.replaced)


def added_file_path(config: Mapping[str, Any], name: str) -> str:
    """Where a change of split ``name`` writes its added records before ``new_revision`` links them."""
    return os.path.join(config["work"], name, "added.lmdb")


def remove_added_file(config: Mapping[str, Any], name: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.remove(added_file_path(config, name))


#: The images a change's contact sheet shows at most (of those it added): a sheet of 64 photos is a
#: ~2.7 MB PNG, more than a change of a few images writes for its dataset (issue 58: <= 1 MB).
CHANGE_SHEET_IMAGES = 16


def write_reports(config: Mapping[str, Any], name: str, since: int | None) -> None:
    """What rules verify and report_split make of a new dataset, for the split's current revision written
    on revision ``since`` (None: every revision): the verify report (with the facts a file's report gives,
    so that the summary and the up-to-date check read it as they read a file's), the contact sheet and
    the class histogram. Made from what changed (docs/FORMAT.md, "A change's reports"): verify checks the
    pointer and only the data files added since ``since`` (``verify --since``); the contact sheet shows
    some of the images added (a change that added none keeps the sheet as it is); the histogram is drawn
    again from the new class counts (the pointer's labels: no image read)."""
    from imagefolder_lmdb.verify.checks import dataset_facts
    from imagefolder_lmdb.verify.class_histogram import class_histogram
    from imagefolder_lmdb.verify.command import verify, write_report
    from imagefolder_lmdb.verify.contact_sheet import contact_sheet
    from imagefolder_lmdb.work.paths import RunPaths

    paths = RunPaths(config["results"], config["work"])
    dataset, checks = paths.dataset(name), config["verify"]
    report, ds, indices = verify(dataset, checks["sample"], checks["all"], checks["seed"], since=since)
    if not report["ok"] or ds is None:
        problems = "; ".join(report["problems"])
        raise ChangeError(f"{dataset}: the new revision failed verification: {problems}")
    report = {**dataset_facts(ds, dataset, []), **report}
    write_report(report, paths.verify_report(name))
    if indices or since is None or not os.path.exists(paths.contact_sheet(name)):
        shown = indices if since is None else indices[:CHANGE_SHEET_IMAGES]
        contact_sheet(ds, shown, paths.contact_sheet(name))
    class_histogram(report["class_counts"], paths.class_histogram(name), name)


def parent_revision(dataset: str) -> int | None:
    """The revision the current one of the pointer at ``dataset`` was written on (None: its first). Read
    in an environment of its own (read_document): ``verify`` opens the pointer after it in this process."""
    from imagefolder_lmdb.reader.document import read_document
    from imagefolder_lmdb.reader.revision_format import entry_of, is_pointer_document

    document = read_document(dataset)
    if not is_pointer_document(document):
        return None
    assert document is not None
    parent = entry_of(document, None, dataset).get("parent")
    return parent if isinstance(parent, int) else None


def apply_changes(
    config: dict[str, Any],
    documents: Mapping[str, Mapping[str, Any] | None],
    verdicts: dict[str, Verdict],
    plan: ClassPlan,
    skip: list[str],
    workers: int = 1,
) -> list[Applied]:
    """Every split of ``config`` whose dataset a change brings up to date, written as a new revision
    (those in ``skip``: replaced by --overwrite), its added images encoded by ``workers`` threads;
    their verdicts become "same"."""
    from imagefolder_lmdb.work.paths import RunPaths
    from imagefolder_lmdb.writing.revision_copy import remove_meta_copy

    paths = RunPaths(config["results"], config["work"])
    shared: dict[str, list[str]] = {}
    applied = []
    for name in ordered(config, plan):
        split, verdict = config["splits"][name], verdicts[name]
        document = documents.get(name)
        if name not in skip and renumbered(plan.source(name), document, shared):
            verdict = Verdict(verdict.made_from, "changed")  # the list it takes changed: its labels do
        if name in skip or not changeable(split, verdict, document):
            remove_meta_copy(paths.dataset(name))  # converted whole: the workflow makes it
            if document is not None:
                shared[name] = list(document["classes"])
            if name not in skip and verdict.up_to_date and reports_stale(paths.dataset(name), document):
                # a change killed before its reports: never Snakemake over a pointer
                write_reports(config, name, parent_revision(paths.dataset(name)))
                remove_added_file(config, name)  # linked into the data folder before the kill
            continue
        started, listed = time.monotonic(), listing_time()
        listing = listing_now(split, plan.source(name), shared)
        shared[name] = list(listing.classes)
        change = find_change(paths.dataset(name), listing, verdict.changed_groups)
        change = dataclasses.replace(change, listed=listed)
        done = apply_change(name, paths.dataset(name), change, config, verdict, workers)
        write_reports(config, name, change.planned_on or 1)  # a single file was revision 1
        applied.append(dataclasses.replace(done, seconds=time.monotonic() - started))
        verdicts[name] = Verdict(verdict.made_from, "same")
    return applied


def reports_stale(dataset: str, document: Mapping[str, Any] | None) -> bool:
    """Whether a split of revisions' verify report names another revision than its current one."""
    from imagefolder_lmdb.reader.identity import meta_digest
    from imagefolder_lmdb.work.paths import RunPaths
    from imagefolder_lmdb.work.split_document import is_pointer

    if document is None or not is_pointer(dataset):
        return False  # a single file: the workflow's rules make its reports
    report = RunPaths(os.path.dirname(dataset), "").verify_report(os.path.basename(dataset).removesuffix(".lmdb"))
    try:
        with open(report, encoding="utf-8") as stream:
            return bool(json.load(stream).get("dataset_meta_digest") != meta_digest(dict(document)))
    except (OSError, ValueError, AttributeError):
        return True


def renumbered(source: ClassSource, document: Mapping[str, Any] | None, shared: Mapping[str, list[str]]) -> bool:
    """Whether a split taking another's class list (val takes train's) holds another list than that split now."""
    if source.kind != "shared" or document is None or source.shared_from not in shared:
        return False
    return list(document["classes"]) != shared[str(source.shared_from)]


def ordered(config: Mapping[str, Any], plan: ClassPlan) -> list[str]:
    """The splits, each one whose class list another takes before that other."""
    names = list(config["splits"])
    return sorted(names, key=lambda name: plan.source(name).kind == "shared")


def workflow_changes(config: dict[str, Any], verdicts: dict[str, Verdict], plan: ClassPlan) -> list[str]:
    """rules/common.smk's main process (``snakemake --configfile``, ``convert --configfile``): the changes
    applied before the DAG is built, so that Snakemake finds those splits up to date; what each did."""
    from imagefolder_lmdb.work.paths import RunPaths
    from imagefolder_lmdb.work.split_document import split_document

    paths = RunPaths(config["results"], config["work"])
    documents = {name: split_document(paths.dataset(name)) for name in config["splits"]}
    applied = apply_changes(config, documents, verdicts, plan, [])
    return [line for done in applied for line in done.lines()]


def settled_splits(config: Mapping[str, Any]) -> set[str]:
    """The splits whose dataset is a split of revisions that matches what it is made from (its
    ``made_from.json`` older than it: run/made_from.py): nothing of the workflow's jobs is to run for them."""
    from imagefolder_lmdb.run.made_from import newer_than
    from imagefolder_lmdb.work.paths import RunPaths
    from imagefolder_lmdb.work.split_document import is_pointer

    paths = RunPaths(config["results"], config["work"])
    return {
        name
        for name in config["splits"]
        if os.path.exists(paths.made_from(name))
        and is_pointer(paths.dataset(name))
        and not newer_than(paths.made_from(name), paths.dataset(name))
        and (parent_revision(paths.dataset(name)) is not None or reports_made(paths, name))
    }


def reports_made(paths: RunPaths, name: str) -> bool:
    """Whether every output of a first revision is there: a ``--no-merge`` pointer is written by rule
    write_pointer, and a run killed before rules verify and report_split finished leaves them to Snakemake
    (a change's own reports are remade in this process: ``reports_stale``)."""
    return all(os.path.exists(path) for path in paths.final_outputs(name))
