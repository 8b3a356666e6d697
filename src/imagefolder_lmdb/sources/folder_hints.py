"""What a folder that ImageFolder cannot read needs, in one sentence each: images that lie loose
(a label file, Hugging Face's metadata files, or ILSVRC2012 val's layout, only where the names are
ILSVRC's), class folders without images (``allow_empty``). Written in a config's words, ``set
splits.<name>.KEY: VALUE``, which the command line's messages turn into its flags."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from imagefolder_lmdb.sources.label_files.metadata import METADATA_NAMES, json_array_refusal
from imagefolder_lmdb.sources.listing_options import is_image

#: The fix for a class folder without images (``in_command_line_words`` gives the flag on the command line).
EMPTY_CLASS_FIX = (
    "Remove empty class folders or add their images, or keep them as classes without images, as ImageFolder's "
    "allow_empty does: set splits.<name>.allow_empty: true"
)

#: ILSVRC2012's validation images, flat: ``ILSVRC2012_val_00000001.JPEG``.
ILSVRC_VAL_NAME = re.compile(r"ILSVRC2012_val_\d{8}\.JPEG", re.IGNORECASE)


def no_class_folder_hint(root: str) -> str:
    names = [entry.name for entry in os.scandir(root) if entry.is_file()]
    if any(name.endswith(".tar") for name in names):
        return "It holds .tar files: a folder of ILSVRC2012 class tars needs layout: ilsvrc-train."
    images = [name for name in names if is_image(name)]
    if images and all(ILSVRC_VAL_NAME.fullmatch(name) for name in images):
        return (
            "Its images lie loose: ImageFolder needs one subfolder per class; these are ILSVRC2012 val's: "
            "set splits.<name>.layout: ilsvrc-val"
        )
    if images:
        return f"Its images lie loose: ImageFolder needs one subfolder per class. {loose_images_fix(root, names)}"
    return "ImageFolder needs one subfolder per class."


def loose_images_fix(root: str, names: Iterable[str]) -> str:
    """For images without class folders: their labels from a file (one beside them named), or
    Hugging Face's metadata files where there are some."""
    names = list(names)
    if any(name in METADATA_NAMES for name in names):
        return "Its labels are Hugging Face's metadata files: set splits.<name>.labels: metadata"
    if "metadata.json" in names:
        return json_array_refusal(os.path.join(root, "metadata.json"))
    tables = sorted(name for name in names if name.lower().endswith((".csv", ".jsonl", ".parquet")))
    if tables:
        return f"If {tables[0]!r} labels them: set splits.<name>.labels: {tables[0]}"
    return (
        "Give each image's label in a file (a CSV of file_name,label): set splits.<name>.labels: FILE; for "
        "images without labels (a competition's test/: each target -1), set splits.<name>.labels: unlabelled"
    )
