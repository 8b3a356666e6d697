"""Why rows name no image, where a row's name and an image's differ in a way a person does not see:
the extension (ids ``x.jpeg``, files ``x.jpg``), the Unicode form (``café`` written NFD in the label
file, NFC on disk, as macOS and Linux tools may write it), or a file that is no image (no image
extension). One sentence each, with the fix, added to the message of match_rows."""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from imagefolder_lmdb.printable import printable
from imagefolder_lmdb.sources.label_files.problems import first_few
from imagefolder_lmdb.sources.listing_options import IMAGE_EXTENSIONS


def stem_and_extension(path: str) -> tuple[str, str]:
    """``("a/x", ".jpeg")`` for ``a/x.jpeg``; ``(path, "")`` without an extension in the file's name."""
    head, dot, extension = path.rpartition(".")
    if not dot or "/" in extension or not head or head.endswith("/"):
        return path, ""
    return head, "." + extension


def naming_hints(rows: Sequence[str], images: Iterable[str], others: Sequence[str]) -> str:
    """The hints for the rows' paths ``rows`` that name no image, over the split's ``images`` and
    its files that are no images (``others``); empty when none applies."""
    images = list(images)
    hints = [
        extension_hint(rows, images),
        unicode_hint(rows, images),
        twins_on_disk_hint(images),
        not_image_hint(rows, others),
    ]
    return "".join(f" {hint}" for hint in hints if hint)


def extension_hint(rows: Sequence[str], images: Sequence[str]) -> str:
    """Rows ``x.jpeg`` where the image is ``x.jpg``: the extensions, most common first, and the fix."""
    by_stem = {stem_and_extension(path)[0]: path for path in images}
    pairs: Counter[tuple[str, str]] = Counter()
    example = ""
    for path in rows:
        stem, written = stem_and_extension(path)
        image = by_stem.get(stem) if written else None
        if image is not None:
            pairs[(written, stem_and_extension(image)[1])] += 1
            example = example or path
    if not pairs:
        return ""
    (written, found), _ = pairs.most_common(1)[0]
    stem = printable(stem_and_extension(example)[0])
    return (
        f"The ids end in {written}, the files in {found} ({printable(example)!r} is {stem}{found} on disk): "
        f"write each id as its file is named, or without its extension ({stem!r} names the one image of that "
        f"stem), or rename the files to {written}."
    )


def nfc(name: str) -> str:
    return unicodedata.normalize("NFC", name)


def form(name: str) -> str:
    """The Unicode normal form a name is written in, for messages."""
    return (
        "NFC" if name == nfc(name) else "NFD" if name == unicodedata.normalize("NFD", name) else "neither NFC nor NFD"
    )


def unicode_hint(rows: Sequence[str], images: Sequence[str]) -> str:
    """A row and an image whose names are equal once normalised (NFC), but not as written."""
    by_form = {nfc(path): path for path in images}
    for path in rows:
        image = by_form.get(nfc(path))
        if image is not None and image != path:
            return (
                f"{printable(path)!r} in the label file is written in Unicode's {form(path)}, the file "
                f"{printable(image)!r} in {form(image)}: the same name to a reader, two names to the file system. "
                f"Write the label file's names in the files' form (unicodedata.normalize({form(image)!r}, name)), "
                "or rename the files."
            )
    return ""


def twins_on_disk_hint(images: Sequence[str]) -> str:
    """Two images whose names are equal once normalised: one name to a reader, two files."""
    seen: dict[str, str] = {}
    for path in images:
        other = seen.setdefault(nfc(path), path)
        if other != path:
            return (
                f"The files {printable(other)!r} ({form(other)}) and {printable(path)!r} ({form(path)}) are one "
                "name in two Unicode forms, two files on disk: keep one of them, or rename one."
            )
    return ""


def not_image_hint(rows: Sequence[str], others: Sequence[str]) -> str:
    """Rows that name files which are no images (no image extension): the files, and the fix."""
    stems: Mapping[str, str] = {stem_and_extension(path)[0]: path for path in others}
    named = [stems.get(path) or stems.get(stem_and_extension(path)[0]) for path in rows]
    found = [path for path in named if path is not None]
    if not found:
        return ""
    return (
        f"{len(found)} rows name files that are no images, without an image extension "
        f"({first_few([printable(path) for path in found])}): give each file its image's extension "
        f"({', '.join(IMAGE_EXTENSIONS[:3])}, ...); an id may stay without one, it names the image of its stem."
    )
