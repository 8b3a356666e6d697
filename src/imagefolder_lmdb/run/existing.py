# SPDX-License-Identifier: MIT
"""What an OUTDIR already holds, read before a command-line conversion writes into it: nothing is
replaced in silence, and a split converted on its own numbers its classes as the others do.

- ``OUT/<split>.lmdb`` made from another source (path or root inside it) or with other encode
  settings is not replaced without ``--overwrite``; the same source whose contents changed is
  rebuilt (the workflow's source stamp, or here the source's times after a ``--clean``).
- A split converted alone into an OUT holding other splits takes their class list (ImageFolder's
  numbering of another split's folders would give other labels), or stops naming the difference.
- A conversion whose outputs are all there, from the same source and settings, is not run again:
  the summary of what is there is printed instead (also after ``--clean`` removed the work folder).
"""

from __future__ import annotations

import glob
import json
import os
from dataclasses import dataclass
from typing import Any

from imagefolder_lmdb.classes.plan import ClassSource, plan_classes
from imagefolder_lmdb.run.change import reads_folder
from imagefolder_lmdb.run.made_from import KEY as MADE_FROM
from imagefolder_lmdb.run.made_from import VERSION as MADE_FROM_VERSION
from imagefolder_lmdb.run.made_from import Verdict, classes_in_words, recipe, recipe_differences
from imagefolder_lmdb.sources.labellings import edited_label_file, label_file_change_words
from imagefolder_lmdb.sources.layouts import DEFAULT_LAYOUT, layout_named
from imagefolder_lmdb.work.paths import RunPaths


class OutputsError(ValueError):
    """OUT holds something this command would replace or contradict; the message says the fix."""


@dataclass(frozen=True)
class Existing:
    """One split's dataset already in OUT: its path and meta document."""

    path: str
    document: dict[str, Any]

    @property
    def classes(self) -> list[str]:
        return list(self.document["classes"])

    @property
    def source(self) -> tuple[str, str | None]:
        source = self.document.get("source", {})
        return str(source.get("path")), source.get("inside")


def existing_splits(results: str) -> dict[str, Existing]:
    """Every dataset in ``results`` by split name (``train.lmdb`` -> train)."""
    from imagefolder_lmdb.work.split_document import split_document  # the reader (numpy) only when asked

    found = {}
    for path in sorted(glob.glob(os.path.join(glob.escape(results), "*.lmdb"))):
        document = split_document(path) if os.path.isfile(path) else None
        if document is not None and "classes" in document:
            found[os.path.basename(path)[: -len(".lmdb")]] = Existing(path, document)
    return found


def same_path(a: Any, b: Any) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return a == b or os.path.realpath(a) == os.path.realpath(b)
    return a == b


def differences(
    existing: Existing,
    split: dict[str, Any],
    encode: dict[str, Any],
    classes: ClassSource | None = None,
    label_edits: bool = True,
) -> list[str]:
    """How the planned split differs from the file there, in words that follow "was made": its
    source's path, its root, its class list, layout, label files, columns or encode settings (a file
    made before datasets recorded what they were made from: the source, root, encode settings and
    a class list the config names). ``label_edits``: whether a label file edited at the same path
    counts (not where the edit is applied as a change: run/change.py)."""
    recorded = existing.document.get(MADE_FROM)
    if isinstance(recorded, dict) and recorded.get("version") == MADE_FROM_VERSION and classes is not None:
        now = recipe(split, encode, classes)
        found = recipe_differences(recorded["recipe"], now, existing.classes)
        edited = label_file_difference(existing, recorded["recipe"], now, split) if label_edits else []
        return found + edited + on_error_difference(existing, encode)
    return legacy_differences(existing, split, encode) + class_list_difference(existing, classes)


def label_file_difference(
    existing: Existing, recorded: dict[str, Any], now: dict[str, Any], split: dict[str, Any]
) -> list[str]:
    """A label file (``labels: PATH``) edited at the same path: its labels are the dataset's, so a
    change replaces it only with --overwrite, named by the first image whose label differs."""
    edited = edited_label_file(recorded, now)
    if edited is None:
        return []
    from imagefolder_lmdb.reader import LMDBReader  # the reader (numpy) only when asked

    reader = LMDBReader(existing.path)
    named = [
        [reader.classes[label] for label in target] if isinstance(target, list) else reader.classes[target]
        for target in reader.targets
    ]
    change = label_file_change_words(edited, split, [path for path, _ in reader.samples], named, source_files(split))
    return [f"with other labels: {change}"]


def source_files(split: dict[str, Any]) -> list[str] | None:
    """The files of a folder source's split now, relative to its root (None: not a folder here)."""
    from imagefolder_lmdb.sources.tree import folder_inside, relative_files

    source = split.get("source")
    folder = folder_inside(source, split.get("root")) if isinstance(source, str) else ""
    return sorted(relative_files(folder)) if folder and os.path.isdir(folder) else None


def on_error_difference(existing: Existing, encode: dict[str, Any]) -> list[str]:
    """``on_error`` changed where the file set images aside (else it made no difference to it)."""
    before = existing.document.get("settings", {}).get("encode", {}).get("on_error", encode.get("on_error"))
    if before == encode.get("on_error") or not skipped_any(existing):
        return []
    return [f"with encode on_error {before!r}, not {encode.get('on_error')!r}"]


def class_list_difference(existing: Existing, classes: ClassSource | None) -> list[str]:
    """A class list the config names that is not the one the file holds."""
    if classes is None or classes.names is None or sorted(classes.names) == existing.classes:
        return []
    return [
        f"with the class list {classes_in_words({'names': existing.classes})}, "
        f"not {classes_in_words({'names': sorted(classes.names)})}"
    ]


def legacy_differences(existing: Existing, split: dict[str, Any], encode: dict[str, Any]) -> list[str]:
    """``differences`` of a file that does not record what it was made from."""
    path, inside = existing.source
    found = []
    if not same_path(path, split["source"]):
        found.append(f"from {path}, not {split['source']}")
    settings = existing.document.get("settings", {}).get("encode", {})
    # a key the file's settings lack came after it was made: not a difference the user made
    changed = [
        f"{key} {settings[key]!r}, not {value!r}"
        for key, value in encode.items()
        if settings.get(key, value) != value and (key != "on_error" or skipped_any(existing))
    ]
    if changed:
        found.append("with encode " + ", ".join(changed))
    if (inside or None) != (split.get("root") or None):
        found.insert(
            1 if found and found[0].startswith("from") else 0,
            f"with root {inside or 'none'}, not {split.get('root') or 'none'}",
        )
    return found


def skipped_any(existing: Existing) -> bool:
    """Whether the file set bad images aside. Where it set none aside, ``on_error`` made no
    difference to it (a run that failed on a bad image, then given ``--on-error skip`` as its
    message says, must not be refused for the splits that were already whole)."""
    return bool(existing.document.get("stats", {}).get("skipped"))


def refuse_replacing(config: dict[str, Any], existing: dict[str, Existing], overwrite: bool) -> list[str]:
    """The splits whose file may be replaced (``--overwrite``: replaced once the new one is complete);
    OutputsError naming the first file that would be replaced in silence."""
    replaced = []
    plan = plan_classes(config)
    for name, split in config["splits"].items():
        if name not in existing:
            continue
        # a label file edited is a change of the split's labels, applied as a new revision where it reads a folder
        found = differences(existing[name], split, config["encode"], plan.source(name), not reads_folder(split))
        if found and meta_copy_removed(existing[name].path):
            continue  # it stood for a published file, which the publish replace rule judges before converting
        if found and not overwrite:
            raise OutputsError(
                f"{existing[name].path} was made {'; '.join(found)}: not replaced. Give --overwrite to "
                "replace it, or another OUTDIR"
            )
        if found:
            replaced.append(name)
    return replaced


def meta_copy_removed(path: str) -> bool:
    """Whether ``path`` was a meta copy of a published file (publish/sync.py), now removed: the split it
    stands for is converted whole, and the published file is the publish replace rule's to judge."""
    from imagefolder_lmdb.writing.revision_copy import remove_meta_copy

    return remove_meta_copy(path)


def shared_classes(config: dict[str, Any], existing: dict[str, Existing], classes_flag: str) -> list[str] | None:
    """The class list a split converted alone must take from the other splits in OUT (None: no
    other split there, or classes given). OutputsError when those splits disagree."""
    others = {name: found for name, found in existing.items() if name not in config["splits"]}
    if not others or config.get("classes") is not None:
        return None
    lists = {tuple(found.classes) for found in others.values()}
    if len(lists) > 1:
        raise OutputsError(
            f"the datasets in {config['results']} ({', '.join(sorted(others))}) number their classes differently: "
            f"name the list this split takes with {classes_flag}"
        )
    return list(lists.pop())


def unlisted_classes(config: dict[str, Any], classes: list[str]) -> dict[str, list[str]]:
    """Per split read from a folder: class folders the list lacks (their images would be set aside);
    per split labelled by a label file: its labels the list lacks (unlisted_labels)."""
    known, found = set(classes), unlisted_labels(config, classes)
    for name, split in config["splits"].items():
        folder = split["source"]
        if split.get("labels") is not None:
            continue
        classes_are_folders = layout_named(split.get("layout", DEFAULT_LAYOUT)).labelling.classes_are_folders
        if not classes_are_folders or not isinstance(folder, str):
            continue
        folder = os.path.join(folder, split["root"]) if split.get("root") else folder
        if os.path.isdir(folder):
            extra = sorted(e.name for e in os.scandir(folder) if e.is_dir() and e.name not in known)
            if extra:
                found[name] = extra
    return found


def unlisted_labels(config: dict[str, Any], classes: list[str]) -> dict[str, list[str]]:
    """Per split labelled by a label file: the labels ``classes`` lacks (their images would be set
    aside, as a class folder's)."""
    from imagefolder_lmdb.sources.table_listing import labels_outside  # reads the file: only when asked

    found = {}
    for name, split in config["splits"].items():
        outside = labels_outside(split, classes)
        if outside:
            found[name] = outside
    return found


def up_to_date(config: dict[str, Any], existing: dict[str, Existing], verdicts: dict[str, Verdict]) -> bool:
    """Every split's outputs are there and match what it is made from now (run/made_from.py); a file
    made before datasets recorded that: from this source and these settings, and nothing in the
    source newer than it. Nothing to convert."""
    paths = RunPaths(config["results"], config["work"])
    plan = plan_classes(config)
    for name, split in config["splits"].items():
        if name not in existing or not all(os.path.exists(path) for path in paths.final_outputs(name)):
            return False
        if not reports_describe(paths.verify_report(name), existing[name]):
            return False  # a kill between the new dataset and its reports: verify runs again
        verdict = verdicts[name]
        if verdict.state == "legacy":
            if differences(existing[name], split, config["encode"], plan.source(name)):
                return False
            if newest_time(split["source"]) > os.path.getmtime(existing[name].path):
                return False
        elif not verdict.up_to_date:
            return False
    return True


def reports_describe(report_path: str, dataset: Existing) -> bool:
    """Whether the verify report (which report_split reads after it) names the dataset present: its
    meta digest. A report of another file, or one older than the digest, is redone, never shown."""
    from imagefolder_lmdb.reader.identity import meta_digest

    try:
        with open(report_path, encoding="utf-8") as stream:
            recorded = json.load(stream).get("dataset_meta_digest")
    except (OSError, ValueError, AttributeError):
        return False
    return recorded == meta_digest(dataset.document)


def newest_time(source: Any) -> float:
    """The latest modification time of a source: a file's, or any entry's in a folder tree."""
    sources = source if isinstance(source, list) else [source]
    newest = 0.0
    for path in sources:
        if not os.path.exists(path):
            return float("inf")
        newest = max(newest, os.path.getmtime(path))
        for folder, folders, files in os.walk(path):
            for entry in folders + files:
                newest = max(newest, os.lstat(os.path.join(folder, entry)).st_mtime)
    return newest
