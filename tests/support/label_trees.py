"""Trees of real images with label files beside them, as the label-file tests build them, and the
parser run on them as a source would (a folder's files, or a zip's members, as relative paths)."""

from __future__ import annotations

import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from imagefolder_lmdb.sources.label_files import LabelSettings, LabelTable, read_label_file, read_metadata_tree
from imagefolder_lmdb.sources.label_files.settings import DEFAULT_SETTINGS
from imagefolder_lmdb.sources.listing_options import is_image

from .images import jpeg_bytes, png_bytes


def write_images(root: Path, paths: Iterable[str]) -> list[str]:
    """A real JPEG (or PNG, by suffix) at each relative path under ``root``, each of its own pixels."""
    written = []
    for seed, path in enumerate(paths):
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(png_bytes(seed) if path.lower().endswith(".png") else jpeg_bytes(seed, (24, 16)))
        written.append(path)
    return written


def write_files(root: Path, files: Mapping[str, str | bytes]) -> None:
    """Label files (or any) by relative path: text written as UTF-8, bytes as they are."""
    for path, content in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)


def tree_files(root: Path) -> list[str]:
    """Every file under ``root``, as a relative POSIX path."""
    return sorted(path.relative_to(root).as_posix() for path in root.rglob("*") if path.is_file())


def label_folder(
    root: Path, label_file: Path, settings: LabelSettings = DEFAULT_SETTINGS, classes: list[str] | None = None
) -> LabelTable:
    """``labels: PATH`` over the images of folder ``root`` (the label file may lie elsewhere)."""
    images = [path for path in tree_files(root) if is_image(path)]
    return read_label_file(label_file.name, label_file.read_bytes(), images, settings, classes)


def metadata_folder(
    root: Path, settings: LabelSettings = DEFAULT_SETTINGS, classes: list[str] | None = None
) -> LabelTable:
    """``labels: metadata`` over folder ``root``."""
    return read_metadata_tree(str(root), tree_files(root), lambda path: (root / path).read_bytes(), settings, classes)


def metadata_zip(archive: Path, settings: LabelSettings = DEFAULT_SETTINGS) -> LabelTable:
    """``labels: metadata`` over a zip's members, read without unpacking it."""
    with zipfile.ZipFile(archive) as opened:
        members = [info.filename for info in opened.infolist() if not info.is_dir()]
        return read_metadata_tree(str(archive), members, opened.read, settings)


def zip_folder(root: Path, archive: Path) -> None:
    """``root``'s files as a zip's members (shutil.make_archive's shape, as datasets' tests make it)."""
    with zipfile.ZipFile(archive, "w") as opened:
        for path in tree_files(root):
            opened.write(root / path, path)
