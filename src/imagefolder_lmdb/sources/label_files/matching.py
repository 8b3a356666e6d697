"""Which image each row names, in one pass over each (dicts: linear in rows and images).

A row names an image by its path relative to a folder (the split's root for a label file, the
metadata file's own folder for Hugging Face's ``metadata.*``). A name without an image extension
(Kaggle's ``id``) names the one image whose path without its extension is that name; two such images
make it ambiguous. Every image has exactly one row and every row one image, else an error."""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from imagefolder_lmdb.printable import printable
from imagefolder_lmdb.sources.label_files.naming_hints import naming_hints
from imagefolder_lmdb.sources.label_files.problems import LabelFileError, first_few


class RowNames(NamedTuple):
    """What the rows say, one list entry per row: the image path each names (joined to its folder),
    as written (for messages), and where the row is. Lists, not an object per row: made for 100k rows."""

    paths: list[str]
    written: list[str]
    places: Sequence[str]


class ImageIndex:
    """The images by path, and by path without extension (stems) for names written without one."""

    def __init__(self, images: Sequence[str], is_image: Callable[[str], bool]) -> None:
        self.paths = frozenset(images)
        self.is_image = is_image
        self.by_stem: dict[str, list[str]] = defaultdict(list)
        for path in images:
            # without its extension, posixpath.splitext's rule without its cost at 100k paths: the
            # whole path where it has none, a dot in a folder's name, or a hidden file's leading dot
            head, dot, extension = path.rpartition(".")
            if not dot or "/" in extension or not head or head.endswith("/"):
                head = path
            self.by_stem[head].append(path)

    def find(self, path: str, written: str, place: str) -> str | None:
        """The image the row at ``place`` names (``path``, ``written`` so), or None."""
        if path in self.paths:
            return path
        if self.is_image(path):  # a name with an image's extension names that file, no other
            return None
        candidates = self.by_stem.get(path, [])
        if len(candidates) > 1:
            both = " and ".join(repr(printable(image)) for image in sorted(candidates)[:2])
            raise LabelFileError(
                f"{printable(place)}: {printable(written)!r} names both {both}: write the file name with its extension."
            )
        return candidates[0] if candidates else None


def row_path(place: str, written: Any, folder: str, column: str) -> str:
    """A row's image path, joined to ``folder``; a name that leaves the folder is refused."""
    if isinstance(written, bool) or not isinstance(written, str | int) or written == "":
        raise LabelFileError(
            f"{printable(place)}: the file name ({column!r}) is {written!r}: give every row the path of its image."
        )
    text = str(written)
    if "/" not in text and text not in (".", "..") and not folder:  # a plain name: nothing to normalise
        return text
    inside = posixpath.normpath(text)  # "a/../b.jpg" is b.jpg; "../b.jpg" leaves the folder
    if text.startswith("/") or inside == ".." or inside.startswith("../") or "://" in text:
        raise LabelFileError(
            f"{printable(place)}: {printable(text)!r} is not a path inside {printable(folder or '.')!r}: "
            "write each image's path relative to that folder."
        )
    return posixpath.normpath(posixpath.join(folder, inside))


def match_rows(
    names: RowNames, images: Sequence[str], is_image: Callable[[str], bool], where: str, others: Sequence[str] = ()
) -> list[str]:
    """The image each row names, in row order. ``where``: the label file(s), for messages;
    ``others``: the split's files that are no images (named where a row names one)."""
    index = ImageIndex(images, is_image)
    row_of: dict[str, int] = {}
    matched: list[str] = []
    unmatched: list[int] = []
    for number, path in enumerate(names.paths):
        image = path if path in index.paths else index.find(path, names.written[number], names.places[number])
        if image is None:
            unmatched.append(number)
        elif image in row_of:
            raise LabelFileError(
                f"{printable(names.places[number])}: the image {printable(image)!r} has a row already "
                f"({printable(names.places[row_of[image]])}): keep one row per image."
            )
        else:
            row_of[image] = number
            matched.append(image)
    missing = [path for path in images if path not in row_of] if len(row_of) < len(images) else []
    if unmatched or missing:
        raise LabelFileError(
            unmatched_message(names, unmatched, missing, where)
            + wrapper_hint(names, unmatched, index)
            + naming_hints([names.paths[number] for number in unmatched], index.paths, others)
        )
    return matched


def wrapper_hint(names: RowNames, unmatched: Sequence[int], index: ImageIndex) -> str:
    """Where every image lies in one folder (``train/`` of a competition's zip) under which the rows'
    names would find their images: that folder is the split's root."""
    tops = {path.partition("/")[0] for path in index.paths}
    if len(tops) != 1 or not unmatched or not all("/" in path for path in index.paths):
        return ""
    top = tops.pop()
    first = names.paths[unmatched[0]]
    if index.find(f"{top}/{first}", first, names.places[unmatched[0]]) is None:
        return ""
    return (
        f" Every image lies in {printable(top)!r}, and the names are relative to the split's root: set the split's "
        f"root to {printable(top)!r} (--root {printable(top)})."
    )


def unmatched_message(names: RowNames, unmatched: Sequence[int], missing: Sequence[str], where: str) -> str:
    """Rows without an image and images without a row, counted, with the first few of each."""
    parts = []
    if unmatched:
        first = printable(names.places[unmatched[0]])
        written = [printable(names.written[number]) for number in unmatched]
        parts.append(f"{len(unmatched)} rows name no image ({first}: {first_few(written)})")
    if missing:
        parts.append(f"{len(missing)} images have no row ({first_few([printable(path) for path in missing])})")
    return (
        f"{printable(where)}: {' and '.join(parts)}: every image needs exactly one row; add the missing rows, "
        "remove the others, or correct the file names."
    )
