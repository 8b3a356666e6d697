"""Rule extract: make a split's source readable by the shards, writing as little as possible.

- A folder is used where it is (``source.json`` records its path). A folder of per-class tars
  (ILSVRC2012_img_train.tar unpacked one level) is indexed like the tar itself.
- A plain ``.tar`` (also ILSVRC's tar of per-class tars) or a ``.zip`` is indexed by default:
  ``members.jsonl`` lists each file member and where its bytes are, and the shards read them from
  the archive. No per-image file is written.
- A ``.tar.gz``/``.tgz``, or any archive with ``extract: true``, is unpacked into ``tree/``.

The image tree's root is where an unpacked copy's ImageFolder root would be: wrapper folders around
the class folders (``train/cls/x.jpg``) are stripped, judged by the image files alone (a
``.DS_Store`` or README beside the class folders does not make the wrapper a class). Members that
are not part of the tree are set aside and reported, never dropped silently: Finder's ``__MACOSX/``,
the earlier copy of a member stored twice (``tar rf`` appends; unpacking keeps the last), files
beside a stripped wrapper.

Either way every member is checked first: absolute paths, ``..``, links pointing outside, devices
are refused, naming the archive and the member. The output folder is built under a temporary
name and renamed into place when whole.
"""

import logging
import os
import sys
from collections.abc import Callable, Collection
from typing import Any, TextIO, TypeVar

from archives import (
    check_official_md5,
    class_of_tar,
    class_tars_in,
    extract_nested_tars,
    extract_tar,
    extract_zip,
    index_tar,
    index_tar_of_tars,
    index_zip,
    is_macos_metadata,
    is_plain_tar,
    is_zip,
    relative_name,
)
from work_files import Member, SourceDescription, write_members, write_source_description
from workflow_io import (
    hold_point,
    is_image,
    progress_kwargs,
    publish,
    relative_files,
    remove_path,
    run_rule,
    temporary_path,
)

log = logging.getLogger("imagefolder_lmdb.extract")

T = TypeVar("T")

TREE = "tree"


def describe_folder(source: str, layout: str) -> SourceDescription:
    log.info("source %s is a folder: used in place, nothing to extract", source)
    return SourceDescription("folder", os.path.abspath(source), layout, root=os.path.abspath(source))


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


def within_class_list(items: list[T], class_of: Callable[[T], str], wanted: Collection[str] | None) -> list[T]:
    """The ``items`` (class tars) whose class is in ``wanted`` (all when there is no list)."""
    return [item for item in items if wanted is None or class_of(item) in wanted]


def container_members(
    containers: list[str], layout: str, progress: dict[str, Any], per_class_tars: bool, wanted: Collection[str] | None
) -> tuple[list[Member], list[str]]:
    """Every member of the archives, and the classes whose tars were left unopened (outside
    ``wanted``)."""
    members: list[Member] = []
    unread: list[str] = []
    for number, container in enumerate(containers):
        log.info("indexing %s", container)
        if per_class_tars:
            name = tar_class(container)
            members.append(Member(name, None))  # the class folder, even if its tar is empty
            members.extend(Member(f"{name}/{m.path}", m.location) for m in index_tar(container, number))
        elif layout == "ilsvrc-train":
            inner = class_tars_in(container)
            kept = within_class_list(inner, class_of_tar, wanted)
            unread += [class_of_tar(m) for m in inner if m not in kept]
            members.extend(index_tar_of_tars(container, kept, number, progress))
        elif is_zip(container):
            members.extend(index_zip(container, number))
        else:
            members.extend(index_tar(container, number))
    return members, unread


def index_archives(
    source: str,
    containers: list[str],
    layout: str,
    building: str,
    progress: dict[str, Any],
    per_class_tars: bool = False,
    wanted: Collection[str] | None = None,
) -> SourceDescription:
    """Index archive members in place; writes ``members.jsonl`` into ``building``.

    ``per_class_tars``: the containers are ``<class>.tar`` files whose members are that class's
    images (ILSVRC2012_img_train.tar unpacked one level). ``wanted``: the configured class list;
    class tars of other classes are never opened, and are listed as unread.
    """
    unread: list[str] = []
    if per_class_tars:
        kept = within_class_list(containers, tar_class, wanted)
        unread, containers = [tar_class(c) for c in containers if c not in kept], kept
    members, unread_inside = container_members(containers, layout, progress, per_class_tars, wanted)
    unread += unread_inside
    members, set_aside = tree_members([Member(relative_name(m.path), m.location) for m in members])
    files = [m for m in members if not m.is_folder]
    strip = wrapper_prefix([m.path for m in files if is_image(m.path)]) if layout != "ilsvrc-val" else ""
    set_aside += [f"{m.path} (beside the image tree {strip})" for m in files if not m.path.startswith(strip)]
    files = [m for m in files if m.path.startswith(strip)]
    count = write_members(building, files, strip)
    log.info("indexed %d file members in %d archive(s); nothing extracted", count, len(containers))
    if unread:
        log.info("%d class tars outside the class list left unread, e.g. %s", len(unread), unread[0])
    report_set_aside(set_aside)
    return SourceDescription(
        "index",
        os.path.abspath(source),
        layout,
        containers=[os.path.abspath(c) for c in containers],
        members=count,
        strip=strip,
        folders=top_folders([m.path for m in members if m.is_folder], strip),
        set_aside=set_aside,
        unread_classes=sorted(unread),
    )


def tar_class(path: str) -> str:
    """The class of a ``<class>.tar`` file in a folder of class tars."""
    return os.path.basename(path).removesuffix(".tar")


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


def tree_root(extracted: str, is_member: Callable[[str], bool] = is_image) -> str:
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


def is_class_tar(name: str) -> bool:
    return name.endswith(".tar")


def unpack_archive(source: str, layout: str, building: str, output: str) -> SourceDescription:
    """Unpack ``source`` into ``building/tree``; paths in the description are the final ones."""
    log.info("extracting %s", source)
    tree = os.path.join(building, TREE)
    members, left_out = (extract_zip if is_zip(source) else extract_tar)(source, tree)
    if layout == "ilsvrc-train":
        extract_nested_tars(tree_root(tree, is_class_tar))
    root = tree if layout == "ilsvrc-val" else tree_root(tree)
    final_root = os.path.join(output, os.path.relpath(root, building))
    log.info("extracted %d members; the image tree will be at %s", members, final_root)
    set_aside = [f"{name} (macOS metadata, not part of the tree)" for name in left_out]
    set_aside += files_beside(tree, root)
    report_set_aside(set_aside)
    return SourceDescription(
        "extracted",
        os.path.abspath(source),
        layout,
        root=os.path.abspath(final_root),
        members=members,
        set_aside=set_aside,
    )


def check_no_class_folders(source: str, tars: list[str]) -> None:
    """Class tars and class folders side by side: an unpacking that stopped halfway. Read as tars
    only, the unpacked classes would be lost; read as a tree, the packed ones."""
    folders = sorted(e.name for e in os.scandir(source) if e.is_dir() and not e.name.startswith("."))
    if folders:
        raise ValueError(
            f"{source} holds {len(tars)} class tars and {len(folders)} class folders ({folders[0]}, ...): "
            "an unpacking that stopped halfway? Unpack the remaining tars into folders of their names "
            "(then it is an ImageFolder tree: layout imagefolder), or give ILSVRC2012_img_train.tar itself."
        )


def class_tars(folder: str) -> list[str]:
    return sorted(e.path for e in os.scandir(folder) if e.is_file() and e.name.endswith(".tar"))


def describe(
    source: str,
    layout: str,
    extract_tree: bool,
    building: str,
    output: str,
    progress: dict,
    wanted: Collection[str] | None = None,
) -> SourceDescription:
    if os.path.isdir(source):
        tars = class_tars(source) if layout == "ilsvrc-train" else []
        if not tars:
            return describe_folder(source, layout)
        check_no_class_folders(source, tars)
        if extract_tree:
            raise ValueError(f"{source}: extract: true is not supported for a folder of class tars; unpack them")
        return index_archives(source, tars, layout, building, progress, per_class_tars=True, wanted=wanted)
    if not extract_tree and (is_plain_tar(source) or is_zip(source)):
        return index_archives(source, [source], layout, building, progress, wanted=wanted)
    return unpack_archive(source, layout, building, output)


def extract(
    source: str,
    output: str,
    layout: str,
    extract_tree: bool,
    progress: dict[str, Any],
    wanted: Collection[str] | None = None,
) -> SourceDescription:
    """Build ``output`` under a temporary name and rename it into place when whole. ``wanted``:
    the configured class list, whose other classes' tars are never opened."""
    building = temporary_path(output)
    remove_path(building)
    os.makedirs(building)
    description = describe(source, layout, extract_tree, building, output, progress, wanted)
    write_source_description(building, description)
    hold_point("extract")
    remove_path(output)
    publish(building, output)
    return description


def check_checksums(paths: list[str], progress: dict[str, Any]) -> None:
    for path in paths:
        outcome = check_official_md5(path, progress)
        log.info("%s", outcome)
        if "not checked" in outcome:  # md5: true was asked for: say so where the user looks
            print(f"WARNING: {outcome}", file=sys.__stderr__, flush=True)


def main(smk: Any, stream: TextIO) -> None:
    progress = progress_kwargs(stream)
    if smk.params.md5:
        check_checksums([smk.input.source, *smk.input.labels], progress)
    classes = smk.params.classes
    wanted = frozenset(classes) if classes is not None else None
    extract(smk.input.source, smk.output[0], smk.params.layout, smk.params.extract, progress, wanted)


if __name__ == "__main__":
    run_rule(main, snakemake)  # type: ignore[name-defined]  # noqa: F821
