"""What torchvision's ImageFolder would see: classes, their order, file order, accepted files.

The listing is the project's own, for a real folder and an archive's member paths alike, without
importing torchvision: its rules (``find_classes`` + ``make_dataset``: class = first folder,
``sorted(os.walk)`` order, torchvision's extension test) applied here, and
tests/unit/test_archives.py keeps them equal to torchvision's. Also here: where
an archive's image tree starts (wrapper folders stripped, judged by the images alone) and which
members an unpacked copy would not hold (``__MACOSX/``, the earlier copy of a member stored twice).
"""

from __future__ import annotations

import logging
import os
import stat
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator
from typing import Any

from imagefolder_lmdb.classes.lists import ClassList, OutsideClasses
from imagefolder_lmdb.printable import printable
from imagefolder_lmdb.sources.archive_members import is_macos_metadata, relative_name
from imagefolder_lmdb.sources.base import CountMismatchError, Listing, Request
from imagefolder_lmdb.sources.folder_hints import EMPTY_CLASS_FIX, no_class_folder_hint
from imagefolder_lmdb.sources.listing_options import DEFAULT_LISTING, ListingOptions, is_image
from imagefolder_lmdb.sources.listing_options import IMAGE_EXTENSIONS as DEFAULT_EXTENSIONS
from imagefolder_lmdb.work.files import Member, Sample
from imagefolder_lmdb.work.source_locations import Location

log = logging.getLogger("imagefolder_lmdb.sources")

#: ImageFolder's accepted extensions (torchvision.datasets.folder.IMG_EXTENSIONS), copied (in
#: listing_options.py) so that listing does not import torch (~4 s per job here); tests keep the two equal.
IMAGE_EXTENSIONS = DEFAULT_EXTENSIONS


def relative_files(root: str) -> Iterator[str]:
    """Every file under ``root`` (links followed, as ImageFolder's scan does), as a "/"-separated
    path relative to it."""
    start = len(os.path.join(root, ""))  # os.walk's folders begin with root: cut it, no relpath per file
    for folder, _, names in os.walk(root, followlinks=True):
        prefix = "" if folder == root else folder[start:].replace(os.sep, "/") + "/"
        for name in names:
            yield prefix + name


def find_classes(root: str) -> tuple[list[str], dict[str, int]]:
    """torchvision's ``datasets.folder.find_classes``: the sorted names of the folders in ``root``
    (links to folders count). The same rules written here, so that listing a folder does not import
    torchvision and torch (~2.6 s per job); tests/unit/test_archives.py keeps the two equal."""
    classes = sorted(entry.name for entry in os.scandir(root) if entry.is_dir())
    if not classes:
        raise FileNotFoundError(f"Couldn't find any class folder in {root}.")
    return classes, {name: index for index, name in enumerate(classes)}


def make_dataset(
    root: str, class_to_idx: dict[str, int], is_valid_file: Callable[[str], bool], allow_empty: bool = False
) -> list[tuple[str, int]]:
    """torchvision's ``datasets.folder.make_dataset`` with ``is_valid_file``: per class in name order,
    ``sorted(os.walk(folder, followlinks=True))`` and each folder's file names sorted; a class
    without one valid file is a FileNotFoundError naming it, unless ``allow_empty``."""
    root = os.path.expanduser(root)
    found: list[tuple[str, int]] = []
    available: set[str] = set()
    for name in sorted(class_to_idx):
        folder = os.path.join(root, name)
        if not os.path.isdir(folder):
            continue
        for where, _, names in sorted(os.walk(folder, followlinks=True)):
            for file_name in sorted(names):
                path = os.path.join(where, file_name)
                if is_valid_file(path):
                    found.append((path, class_to_idx[name]))
                    available.add(name)
    empty = set(class_to_idx) - available
    if empty and not allow_empty:
        raise FileNotFoundError(f"Found no valid file for the classes {', '.join(sorted(empty))}. ")
    return found


def no_image_error(where: str, empty: Iterable[str]) -> CountMismatchError:
    return CountMismatchError(
        f"{where}: found no valid file for the classes {', '.join(sorted(empty))}. Every class folder needs at "
        f"least one image ({', '.join(IMAGE_EXTENSIONS)}); remove empty class folders or add their images."
    )


def scan_folder(
    root: str, progress: dict[str, Any], wanted: ClassList | None = None, options: ListingOptions = DEFAULT_LISTING
) -> Listing:
    """An ImageFolder tree scanned by ImageFolder's rules and listing arguments (``options``), with a file
    counter (1.28M files take a while). Class folders outside ``wanted`` only have their
    images counted."""
    is_listed = options.accepts()
    try:
        classes, _ = find_classes(root)
    except FileNotFoundError as exc:
        raise CountMismatchError(f"{str(exc).strip()} {no_class_folder_hint(root)}") from exc
    outside = OutsideClasses()
    for name in [name for name in classes if wanted is not None and name not in wanted]:
        # names only, no file opened: the count that says what the class list left out
        folder = os.path.join(root, name)
        outside.add(name, sum(is_listed(os.path.join(folder, path)) for path in relative_files(folder)))
    classes = [name for name in classes if wanted is None or name in wanted]
    if not classes:
        return Listing([], [], root=root, outside=outside)
    check_each_folder_once(root, classes)
    class_to_idx = {name: i for i, name in enumerate(classes)}
    ignored: list[str] = []
    from tqdm import tqdm  # here: the jobs that import this module for its rules of a tree scan nothing

    counter = tqdm(desc=f"scan {root}", unit="file", **progress)

    def accept(path: str) -> bool:
        counter.update()
        if not is_listed(path):
            ignored.append(os.path.relpath(path, root))
            return False
        check_regular_file(path)
        return True

    try:
        found = make_dataset(root, class_to_idx, is_valid_file=accept, allow_empty=options.allow_empty)
    except FileNotFoundError as exc:
        raise CountMismatchError(f"{root}: {str(exc).strip()} {EMPTY_CLASS_FIX}") from exc
    finally:
        counter.close()
    ignored.extend(entry.name for entry in os.scandir(root) if not entry.is_dir())
    samples = [
        Sample(index, label, os.path.relpath(path, root).replace(os.sep, "/"))
        for index, (path, label) in enumerate(found)
    ]
    return Listing(classes, samples, sorted(ignored), root=root, outside=outside)


class SourceFileError(ValueError):
    """An image's path in the source is no regular file (a FIFO, socket or device) or a dangling link."""


def check_regular_file(path: str) -> None:
    """Refuse, when the source is listed, an image path that reading would hang on (a FIFO) or fail
    on later (a dangling link, a device): one stat, links followed as ImageFolder's loader does."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        target = os.readlink(path) if os.path.islink(path) else "?"
        raise SourceFileError(
            f"{printable(path)} is a dangling link (to {printable(target)}, which does not exist). Remove the link or "
            "point it at the image, then run the same command again."
        ) from None
    if not stat.S_ISREG(mode):
        kind = "a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
        raise SourceFileError(
            f"{printable(path)} is {kind}, not a regular file: reading it would block or give no image. Remove it or "
            "put the image file there, then run the same command again."
        )


class FolderLinkError(ValueError):
    """A link leads the walk back into a folder it has already walked: its images would be read twice."""


def check_each_folder_once(root: str, classes: list[str]) -> None:
    """Stop, naming the links, where walking the class folders as ImageFolder does (links followed)
    reaches a folder a second time: a link to an enclosing folder (``c/again -> .``) makes
    ImageFolder read its images once per level until the system refuses the path (41 times here),
    and a link to a folder walked elsewhere gives its images twice, under two names. Folders only:
    one stat per folder, no file opened."""
    walked: dict[tuple[int, int], str] = {}
    again: list[tuple[str, str]] = []
    for name in classes:
        for folder, subfolders, _ in os.walk(os.path.join(root, name), followlinks=True):
            info = os.stat(folder)
            first = walked.setdefault((info.st_dev, info.st_ino), folder)
            if first != folder:
                again.append((folder, first))
                subfolders.clear()  # not walked a second time
    if again:
        raise FolderLinkError(folder_link_message(root, again))


def folder_link_message(root: str, again: list[tuple[str, str]]) -> str:
    listed = "\n".join(link_line(root, folder, first) for folder, first in again[:LISTED_FOLDERS])
    more = f"\n  ... and {len(again) - LISTED_FOLDERS} more" if len(again) > LISTED_FOLDERS else ""
    return (
        f"{root}: {len(again)} folder link(s) lead into folders read elsewhere, so ImageFolder would read "
        f"their images twice (through a link to an enclosing folder, once per level: dozens of times):\n"
        f"{listed}{more}\nEach image is stored once: remove these links (or put a copy of the folder in "
        "their place, if its images are meant to be stored twice) and run the same command again."
    )


def link_line(root: str, folder: str, first: str) -> str:
    """``  c/again -> .: leads to c, already read``, for the walk reaching ``first`` again as ``folder``.
    Where ``folder`` is a real folder, the walk came to it first through the link (``A/x -> ../b``
    walked before ``b``): that link is the one named, never the folder."""
    link = linked_on_the_way(root, folder)
    if not os.path.islink(link):
        folder, first = first, folder
        link = linked_on_the_way(root, folder)
    target = f" -> {os.readlink(link)}" if os.path.islink(link) else ""
    reached = f" (reached as {folder})" if folder != link else ""
    return f"  {link}{target}: leads to {first}, already read{reached}"


def linked_on_the_way(root: str, folder: str) -> str:
    """The symbolic link on the path from ``root`` to ``folder`` nearest to ``folder`` (the link the
    walk followed to get there)."""
    path = folder
    while path != root and not os.path.islink(path):
        path = os.path.dirname(path)
    return path if os.path.islink(path) else folder


def walk_order(path: str) -> tuple[str, str]:
    """Sort key of ``sorted(os.walk(...))`` then ``sorted(files)``: the folder, then the name."""
    folder, _, name = path.rpartition("/")
    return folder, name


def order_members(
    entries: list[tuple[str, Location]], where: str, folders: Iterable[str] = (), wanted: ClassList | None = None
) -> Listing:
    """ImageFolder's rules applied to archive member paths, without unpacking anything.
    ``folders``: the archive's top folders, classes even where they hold no file; classes outside
    ``wanted`` are counted, not listed."""
    by_class: dict[str, list[tuple[str, Location]]] = defaultdict(list)
    for folder in folders:
        by_class[folder] = []
    ignored = []
    for path, location in entries:
        if "/" not in path:
            ignored.append(path)  # a file beside the class folders: not in any class
            continue
        by_class[path.split("/", 1)[0]].append((path, location))
    outside = OutsideClasses()
    for name in [name for name in by_class if wanted is not None and name not in wanted]:
        outside.add(name, sum(is_image(path) for path, _ in by_class.pop(name)))
    classes = sorted(by_class)
    samples: list[Sample] = []
    empty = []
    for label, name in enumerate(classes):
        files = sorted(by_class[name], key=lambda entry: walk_order(entry[0]))
        images = [(p, loc) for p, loc in files if is_image(p)]
        ignored.extend(p for p, _ in files if not is_image(p))
        if not images:
            empty.append(name)
        first = len(samples)
        samples.extend(Sample(first + i, label, p, loc) for i, (p, loc) in enumerate(images))
    if empty:
        raise no_image_error(where, empty)
    return Listing(classes, samples, sorted(ignored), outside=outside)


def wrapper_prefix(paths: list[str]) -> str:
    """The folders every image is wrapped in (``train/`` in ``train/cls/x.jpg``), to strip.

    ``paths``: the image files only. Descends while they all share one top folder that holds none
    of them directly (one that does is the only class).
    """
    prefix = ""
    while True:
        rest = [p[len(prefix) :] for p in paths]
        tops = {r.split("/", 1)[0] for r in rest}
        if len(tops) != 1 or any("/" not in r for r in rest):
            return prefix
        top = tops.pop()
        if any(r.count("/") == 1 for r in rest):  # images directly in `top`: it is a class folder
            return prefix
        prefix += top + "/"


def tree_members(members: list[Member]) -> tuple[list[Member], list[str]]:
    """The members an unpacked copy's tree holds, and why each other one is set aside: one entry
    per path, the last (``tar rf`` appends a second copy; unpacking overwrites the first), and
    nothing under ``__MACOSX/``."""
    kept: dict[str, Member] = {}
    set_aside = []
    for member in members:
        if is_macos_metadata(member.path):
            if not member.is_folder:
                set_aside.append(f"{member.path} (macOS metadata, not part of the tree)")
            continue
        if member.path in kept and not member.is_folder:
            set_aside.append(f"{member.path} (stored twice: the later copy is used, as unpacking would)")
        kept.pop(member.path, None)  # the later copy takes the later place, as in the archive
        kept[member.path] = member
    return list(kept.values()), set_aside


def report_set_aside(set_aside: list[str]) -> None:
    if set_aside:
        log.warning("%d archive members set aside (listed in counts.json), e.g. %s", len(set_aside), set_aside[0])


def top_folders(folders: list[str], strip: str) -> list[str]:
    """The class folders an unpacked copy would have, from the archive's folder members: ImageFolder
    makes each a class, so one without images must stop the run here as it would there."""
    tops = {folder[len(strip) :].split("/", 1)[0] for folder in folders if (folder + "/").startswith(strip)}
    return sorted(top for top in tops if top)


def unpacked_tree_root(extracted: str, is_member: Callable[[str], bool] = is_image) -> str:
    """The unpacked tree's root: below the wrapper folders of the files ``is_member`` picks (the
    images; the class tars of ILSVRC's train tar), as ``wrapper_prefix`` finds them in place."""
    paths = [path for path in relative_files(extracted) if is_member(path.rsplit("/", 1)[-1])]
    return os.path.join(extracted, wrapper_prefix(paths)).rstrip("/")


def files_beside(tree: str, root: str) -> list[str]:
    """Files unpacked outside the image root, as the index route lists them: ``<path> (beside the
    image tree <wrapper>/)``."""
    wrapper = os.path.relpath(root, tree).replace(os.sep, "/") + "/"
    beside = []
    for folder, folders, names in os.walk(tree):
        folders[:] = [name for name in folders if os.path.join(folder, name) != root]
        beside += [os.path.relpath(os.path.join(folder, name), tree).replace(os.sep, "/") for name in names]
    return [f"{path} (beside the image tree {wrapper})" for path in sorted(beside)] if root != tree else []


# --------------------------------------------------------------------------------------------------
# A folder inside the source (splits.<name>.root), and sources whose folders are splits, not classes.
# --------------------------------------------------------------------------------------------------

#: Folder names that hold a whole split (Kaggle's ILSVRC/Data/CLS-LOC/{train,val,test}); never classes.
SPLIT_FOLDERS = frozenset({"train", "val", "test"})
#: How many folder names an error message lists.
LISTED_FOLDERS = 8


class RootError(ValueError):
    """``root`` names no folder of the source, or the source's top folders are splits, not classes."""


def root_problem(root: str) -> str | None:
    """Why a configured ``root`` cannot be a folder inside the source, or None."""
    if root.startswith(("/", "\\")) or "\\" in root:
        return "must be relative and '/'-separated"
    if ".." in root.split("/"):
        return "must not hold '..'"
    return None


def folder_inside(source: str, root: str | None) -> str:
    """The folder ``root`` of a folder source (the source itself when there is none)."""
    root = (root or "").strip("/")
    return os.path.join(source, *root.split("/")) if root else source


def folder_to_read(request: Request) -> str:
    """A folder source's folder to read, ``source/root``; stops, naming the folders there are, if
    ``root`` is not one."""
    folder = folder_inside(request.source, request.root)
    if not os.path.isdir(folder):
        raise RootFilter(request.root).missing_in_folder(request.source)
    return folder


class RootFilter:
    """The members under the folder ``root`` of a source ("" = all), their paths made relative to it;
    it remembers the folders seen on the way to ``root``, so that a ``root`` the source lacks is
    answered with the folders it does have there. One pass, nothing kept per member."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.parts = root.split("/") if root else []
        self.children: list[set[str]] = [set() for _ in self.parts]
        self.kept = 0

    def see(self, path: str) -> str | None:
        """``path`` relative to ``root``, or None if it lies outside (a folder member named
        ``root`` itself is outside: the tree's own top is no member of it)."""
        if not self.root:
            self.kept += 1
            return path
        if path.startswith(self.root + "/") and len(path) > len(self.root) + 1:
            self.kept += 1
            return path[len(self.root) + 1 :]
        names = path.split("/")
        for depth in range(min(len(self.parts), len(names) - 1)):
            self.children[depth].add(names[depth])
            if names[depth] != self.parts[depth]:
                break
        return None

    def relative(self, path: str) -> str:
        """``path`` (under ``root``) relative to it."""
        return path[len(self.root) + 1 :] if self.root else path

    def members(self, members: Iterable[Member]) -> Iterator[Member]:
        """The members under ``root``, renamed (``./`` prefixes removed first, as unpacking does)."""
        for member in members:
            path = self.see(relative_name(member.path))
            if path is not None:
                yield member if path == member.path else Member(path, member.location)

    def check_found(self, source: str) -> None:
        """Stop if nothing lay under ``root``, naming the folders there are instead."""
        if self.root and not self.kept:
            raise self.missing(source)

    def missing(self, source: str) -> RootError:
        parts = self.parts
        depth = max([0] + [d + 1 for d in range(len(parts) - 1) if parts[d] in self.children[d]])
        near, folders = "/".join(parts[:depth]), sorted(self.children[depth])
        return missing_root_error(source, self.root, near, folders)

    def missing_in_folder(self, source: str) -> RootError:
        """The same answer for a folder source: the deepest folder on the way to ``root`` that exists."""
        depth = 0
        while depth < len(self.parts) - 1 and os.path.isdir(os.path.join(source, *self.parts[: depth + 1])):
            depth += 1
        near = os.path.join(source, *self.parts[:depth])
        return missing_root_error(source, self.root, "/".join(self.parts[:depth]), subfolders(near))


def missing_root_error(source: str, root: str, near: str, folders: list[str]) -> RootError:
    """``root`` is not a folder of ``source``: name both, and the ``folders`` that ``near`` holds."""
    where = f"its folder {near}/" if near else "its top level"
    shown = ", ".join(folders[:LISTED_FOLDERS]) + (", ..." if len(folders) > LISTED_FOLDERS else "")
    return RootError(
        f"{source}: splits.<name>.root {root!r} is not a folder of this source with files in it; {where} holds "
        f"the folders {shown or '(none)'}. Set root to a folder inside the source, '/'-separated (e.g. "
        "ILSVRC/Data/CLS-LOC/train in Kaggle's ImageNet zip)."
    )


def split_folders_error(source: str, prefix: str, tops: Collection[str]) -> RootError | None:
    """Top folders named train/val/test are splits (Kaggle's ILSVRC/Data/CLS-LOC/), never classes:
    the error that tells the user which ``root`` to set, or None for a usual tree."""
    if len(tops) < 2 or not set(tops) <= SPLIT_FOLDERS:
        return None
    return RootError(
        f"{source}: the image folders are {', '.join(sorted(tops))}: splits, not classes (Kaggle's ImageNet zip?). "
        f"Point each split at one of them with splits.<name>.root, e.g. root: {prefix}train for train and "
        f"root: {prefix}val for val (Kaggle's flat val folder: layout: ilsvrc-val, val_labels: LOC_val_solution.csv)."
    )


def check_not_split_folders(source: str, root: str, images: list[str]) -> None:
    """Stop if the image tree below its wrapper folders holds train/val/test folders; ``images``: the
    image paths relative to ``root`` (the configured folder inside ``source``)."""
    wrapper = wrapper_prefix(images)
    tops = {path[len(wrapper) :].split("/", 1)[0] for path in images if "/" in path[len(wrapper) :]}
    error = split_folders_error(source, f"{root}/{wrapper}" if root else wrapper, tops)
    if error is not None:
        raise error


def subfolders(folder: str) -> list[str]:
    return sorted(e.name for e in os.scandir(folder) if e.is_dir() and not e.name.startswith("."))


def check_folder_not_splits(source: str, root: str = "", depth: int = 4) -> None:
    """``check_not_split_folders`` for the folder ``source/root``, from folder names alone (no walk of
    1.28M files): down the chain of single subfolders (Kaggle's unzipped ILSVRC/Data/CLS-LOC/)."""
    folder, prefix = os.path.join(source, *root.split("/")) if root else source, f"{root}/" if root else ""
    for _ in range(depth + 1):
        names = subfolders(folder)
        error = split_folders_error(source, prefix, names)
        if error is not None:
            raise error
        deeper = next_kaggle_folder(prefix, names)
        if deeper is None:
            return
        folder, prefix = os.path.join(folder, deeper), f"{prefix}{deeper}/"


#: Kaggle's unzipped download keeps its images in ILSVRC/Data/CLS-LOC/, beside ILSVRC/Annotations
#: and ILSVRC/ImageSets: the folder to look into next, by the name of the folder looked at.
KAGGLE_NEXT = {"": "ILSVRC", "ILSVRC": "Data", "Data": "CLS-LOC"}


def next_kaggle_folder(prefix: str, names: list[str]) -> str | None:
    """The folder to look into next: the only one, or the next of Kaggle's ILSVRC/Data/CLS-LOC."""
    if len(names) == 1:
        return names[0]
    wanted = KAGGLE_NEXT.get(prefix.rstrip("/").rsplit("/", 1)[-1])
    return wanted if wanted in names else None
