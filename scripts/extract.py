"""Rule extract: make a split's source readable by the shards, writing as little as possible.

- A folder is used where it is (``source.json`` records its path). A folder of per-class tars
  (ILSVRC2012_img_train.tar unpacked one level) is indexed like the tar itself.
- A plain ``.tar`` (also ILSVRC's tar of per-class tars) or a ``.zip`` is indexed by default:
  ``members.jsonl`` lists each file member and where its bytes are, and the shards read them from
  the archive. No per-image file is written.
- A ``.tar.gz``/``.tgz``, or any archive with ``extract: true``, is unpacked into ``tree/``.

Either way every member is checked first: absolute paths, ``..``, links pointing outside, devices
are refused, naming the archive and the member. The output folder is built under a temporary
name and renamed into place when whole.
"""

import json
import logging
import os
from collections.abc import Iterable
from typing import Any, TextIO

from archives import (
    Member,
    check_official_md5,
    extract_nested_tars,
    extract_tar,
    extract_zip,
    index_tar,
    index_tar_of_tars,
    index_zip,
    is_plain_tar,
    is_zip,
)
from workflow_io import hold_point, progress_kwargs, publish, remove_path, run_rule, temporary_path, write_json_atomic

log = logging.getLogger("imagefolder_lmdb.extract")

TREE = "tree"
DESCRIPTION = "source.json"
MEMBERS = "members.jsonl"


def describe_folder(source: str) -> dict[str, Any]:
    log.info("source %s is a folder: used in place, nothing to extract", source)
    return {"kind": "folder", "root": os.path.abspath(source), "source": os.path.abspath(source)}


def wrapper_prefix(paths: list[str]) -> str:
    """The folders every member is wrapped in (``train/`` in ``train/cls/x.jpg``), to strip.

    Descends while all paths share one top folder that holds no files of its own, as the
    extracted tree's root is found for unpacked archives (see ``tree_root``).
    """
    prefix = ""
    while True:
        rest = [p[len(prefix) :] for p in paths]
        tops = {r.split("/", 1)[0] for r in rest}
        if len(tops) != 1 or any("/" not in r for r in rest):
            return prefix
        top = tops.pop()
        if any(r.count("/") == 1 for r in rest):  # files directly in `top`: it is a class folder
            return prefix
        prefix += top + "/"


def write_members(path: str, members: Iterable[Member], strip: str) -> int:
    count = 0
    with open(path, "w", encoding="utf-8") as stream:
        for member in members:
            stream.write(json.dumps([member.path[len(strip) :], member.location], ensure_ascii=False))
            stream.write("\n")
            count += 1
    return count


def index_archives(
    containers: list[str], layout: str, building: str, progress: dict[str, Any], per_class_tars: bool = False
) -> dict[str, Any]:
    """Index archive members in place; writes ``members.jsonl`` into ``building``.

    ``per_class_tars``: the containers are ``<class>.tar`` files whose members are that class's
    images (ILSVRC2012_img_train.tar unpacked one level).
    """
    members: list[Member] = []
    for number, container in enumerate(containers):
        log.info("indexing %s", container)
        if per_class_tars:
            name = os.path.basename(container).removesuffix(".tar")
            members.append(Member(name, None))  # the class folder, even if its tar is empty
            members.extend(Member(f"{name}/{m.path}", m.location) for m in index_tar(container, number))
        elif layout == "ilsvrc-train":
            members.extend(index_tar_of_tars(container, number, progress))
        elif is_zip(container):
            members.extend(index_zip(container, number))
        else:
            members.extend(index_tar(container, number))
    members = [Member(relative_name(m.path), m.location) for m in members]
    files = [m for m in members if not m.is_folder]
    strip = wrapper_prefix([m.path for m in files]) if layout != "ilsvrc-val" else ""
    count = write_members(os.path.join(building, MEMBERS), files, strip)
    log.info("indexed %d file members in %d archive(s); nothing extracted", count, len(containers))
    return {
        "kind": "index",
        "containers": [os.path.abspath(c) for c in containers],
        "members": count,
        "strip": strip,
        "folders": top_folders([m.path for m in members if m.is_folder], strip),
    }


def relative_name(path: str) -> str:
    """``./cls/x.jpg`` (``tar -C tree .``) as ``cls/x.jpg``: the path an unpacked copy has under its root."""
    while path.startswith("./"):
        path = path[2:]
    return "" if path == "." else path


def top_folders(folders: list[str], strip: str) -> list[str]:
    """The class folders an unpacked copy would have, from the archive's folder members: ImageFolder
    makes each a class, so one without images must stop the run here as it would there."""
    tops = {folder[len(strip) :].split("/", 1)[0] for folder in folders if (folder + "/").startswith(strip)}
    return sorted(top for top in tops if top)


def tree_root(extracted: str) -> str:
    """Archives often wrap the tree in one top folder (``train/cls/x.jpg``): descend into it."""
    root = extracted
    while True:
        entries = [e for e in os.scandir(root) if not e.name.startswith(".")]
        if len(entries) == 1 and entries[0].is_dir() and not any(e.is_file() for e in os.scandir(entries[0].path)):
            root = entries[0].path
        else:
            return root


def unpack_archive(source: str, layout: str, building: str, output: str) -> dict[str, Any]:
    """Unpack ``source`` into ``building/tree``; paths in the description are the final ones."""
    log.info("extracting %s", source)
    tree = os.path.join(building, TREE)
    members = (extract_zip if is_zip(source) else extract_tar)(source, tree)
    if layout == "ilsvrc-train":
        extract_nested_tars(tree_root(tree))
    root = tree if layout == "ilsvrc-val" else tree_root(tree)
    final_root = os.path.join(output, os.path.relpath(root, building))
    log.info("extracted %d members; the image tree will be at %s", members, final_root)
    return {"kind": "extracted", "root": os.path.abspath(final_root), "members": members}


def class_tars(folder: str) -> list[str]:
    return sorted(e.path for e in os.scandir(folder) if e.is_file() and e.name.endswith(".tar"))


def describe(source: str, layout: str, extract_tree: bool, building: str, output: str, progress: dict) -> dict:
    if os.path.isdir(source):
        tars = class_tars(source) if layout == "ilsvrc-train" else []
        if not tars:
            return describe_folder(source)
        if extract_tree:
            raise ValueError(f"{source}: extract: true is not supported for a folder of class tars; unpack them")
        return index_archives(tars, layout, building, progress, per_class_tars=True)
    if not extract_tree and (is_plain_tar(source) or is_zip(source)):
        return index_archives([source], layout, building, progress)
    return unpack_archive(source, layout, building, output)


def extract(source: str, output: str, layout: str, extract_tree: bool, progress: dict[str, Any]) -> dict[str, Any]:
    """Build ``output`` under a temporary name and rename it into place when whole."""
    building = temporary_path(output)
    remove_path(building)
    os.makedirs(building)
    description = describe(source, layout, extract_tree, building, output, progress)
    description.update(source=os.path.abspath(source), layout=layout)
    write_json_atomic(os.path.join(building, DESCRIPTION), description)
    hold_point("extract")
    remove_path(output)
    publish(building, output)
    return description


def check_checksums(paths: list[str], progress: dict[str, Any]) -> None:
    for path in paths:
        log.info("%s", check_official_md5(path, progress))


def main(smk: Any, stream: TextIO) -> None:
    progress = progress_kwargs(stream)
    if smk.params.md5:
        check_checksums([smk.input.source, *smk.input.labels], progress)
    extract(smk.input.source, smk.output[0], smk.params.layout, smk.params.extract, progress)


if __name__ == "__main__":
    run_rule(main, snakemake)  # type: ignore[name-defined]  # noqa: F821
