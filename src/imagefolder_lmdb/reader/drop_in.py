"""What ImageFolder has beyond its index, for code written against it: ``loader``, ``extensions``,
``transforms`` and ``find_classes(directory)``, without importing torchvision; and the classes
``LMDBDataset`` is built on (``dataset_bases``).

Where torchvision is installed, LMDBDataset is an ``ImageFolder`` subclass whose ``__init__`` never
runs ImageFolder's (the file holds the index; nothing is scanned). Subclassing, rather than adding the
class to torchvision's private wrapper registry (``tv_tensors._dataset_wrapper.WRAPPER_FACTORIES``),
keeps to torchvision's public classes: ``wrap_dataset_for_transforms_v2`` finds ImageFolder's entry by
walking the MRO, as it does for any subclass, with no torchvision version to pin, and
``isinstance(ds, ImageFolder)`` holds for code that asks. The price: torchvision's import (~1-2 s
here; BENCHMARKS.md) in the process that builds the class, and so in every spawned worker.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from typing import Any, BinaryIO

from imagefolder_lmdb.reader.decoding import pil_decode

#: torchvision's IMG_EXTENSIONS: the files ImageFolder takes, and so the ones the workflow converted.
IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


#: What ``loader`` takes: a record's bytes (``ds.get_bytes(i)``), a file object, or a file's path.
Loadable = bytes | bytearray | memoryview | BinaryIO | str | os.PathLike[str]


def record_loader(record: Loadable) -> Any:
    """ImageFolder's ``loader``: an RGB PIL image, exactly as ImageFolder's loader makes it from the
    file. Given a record's stored bytes or a file object, from those; given a path, from the file
    there, as ``ImageFolder.loader(path)`` reads it."""
    if isinstance(record, str | os.PathLike):
        with open(record, "rb") as stream:
            return pil_decode(stream.read())
    if isinstance(record, io.BytesIO):
        return pil_decode(record.getvalue())
    if hasattr(record, "read"):
        return pil_decode(record.read())
    return pil_decode(record)


def loader_for(root: str | None) -> Callable[[Loadable], Any]:
    """``record_loader``, where a relative path that is not a file here is looked for under ``root``
    (the folder converted: ``samples`` hold paths relative to it), and named with the fix when it is
    in neither place."""

    def load(record: Loadable) -> Any:
        if not isinstance(record, str | os.PathLike) or os.path.isabs(record) or os.path.exists(record):
            return record_loader(record)
        under_root = os.path.join(root, record) if root else None
        if under_root is not None and os.path.exists(under_root):
            return record_loader(under_root)
        raise FileNotFoundError(
            f"{os.fspath(record)}: no such file{f' here or under {root}' if root else ''}. This dataset's "
            f"samples hold paths relative to the folder it was converted from; its own copy of an image is "
            f"ds[i], or ds.loader(ds.get_bytes(i))."
        )

    return load


def _transform_lines(transform: Callable[[Any], Any], head: str) -> list[str]:
    lines = repr(transform).splitlines()
    return [f"{head}{lines[0]}"] + [" " * len(head) + line for line in lines[1:]]


class StandardTransform:
    """torchvision's StandardTransform: ``transform`` on the image, ``target_transform`` on the label
    (and its ``repr``)."""

    def __init__(self, transform: Callable[[Any], Any] | None, target_transform: Callable[[Any], Any] | None) -> None:
        self.transform = transform
        self.target_transform = target_transform

    def __call__(self, image: Any, target: Any) -> tuple[Any, Any]:
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target

    def __repr__(self) -> str:
        lines = [type(self).__name__]
        if self.transform is not None:
            lines += _transform_lines(self.transform, "Transform: ")
        if self.target_transform is not None:
            lines += _transform_lines(self.target_transform, "Target transform: ")
        return "\n".join(lines)


def joint_transforms(
    transform: Callable[[Any], Any] | None, target_transform: Callable[[Any], Any] | None
) -> StandardTransform | None:
    """VisionDataset's ``transforms`` for these two: None when both are."""
    if transform is None and target_transform is None:
        return None
    return StandardTransform(transform, target_transform)


def listed_extensions(document: dict[str, Any]) -> tuple[str, ...] | None:
    """``extensions`` as the dataset's record of what it was made from says (made_from.recipe.listing;
    absent: ImageFolder's defaults)."""
    made_from = document.get("made_from")
    recipe = made_from.get("recipe") if isinstance(made_from, dict) else None
    listing = recipe.get("listing") if isinstance(recipe, dict) else None
    if not isinstance(listing, dict):
        return IMG_EXTENSIONS
    if listing.get("is_valid_file") is not None:
        return None
    extensions = listing.get("extensions")
    return tuple(extensions) if isinstance(extensions, list) else IMG_EXTENSIONS


class DropIn:
    """ImageFolder's remaining attributes (mixed into the dataset classes)."""

    root: str | None
    transform: Callable[[Any], Any] | None
    target_transform: Callable[[Any], Any] | None
    #: ``transform`` and ``target_transform`` together, as VisionDataset's ``transforms``: set when the
    #: dataset is made, as there (torchvision's v2 wrapper takes it, sets it to None, and puts it back).
    transforms: StandardTransform | None
    meta_document: dict[str, Any]

    @property
    def extensions(self) -> tuple[str, ...] | None:
        """The files the conversion took, as DatasetFolder's ``extensions``: the split's ``extensions``
        setting where one was given, None where ``is_valid_file`` chose them (as torchvision sets it),
        else ImageFolder's (torchvision's IMG_EXTENSIONS)."""
        return listed_extensions(self.meta_document)

    @property
    def loader(self) -> Callable[[Loadable], Any]:
        """What ImageFolder's ``loader`` does: an RGB image from a record's bytes (``ds.get_bytes(i)``),
        a file object, or a path (a relative one, as ``samples`` hold, is looked for under ``root``)."""
        return loader_for(self.root)

    @staticmethod
    def find_classes(directory: str | os.PathLike[str]) -> tuple[list[str], dict[str, int]]:
        """ImageFolder's ``find_classes``: the sorted class folders of ``directory`` and their indices."""
        classes = sorted(entry.name for entry in os.scandir(directory) if entry.is_dir())
        if not classes:
            raise FileNotFoundError(f"Couldn't find any class folder in {os.fspath(directory)}.")
        return classes, {name: index for index, name in enumerate(classes)}


#: What LMDBDataset needs torch for, said where torch is missing (LMDBReader reads without it).
NO_TORCH = (
    "LMDBDataset is a torch Dataset, and torch is not installed: pip install torch (or "
    "'imagefolder-lmdb[torch]'); imagefolder_lmdb.LMDBReader reads the same file without torch"
)


def dataset_bases() -> tuple[type, ...]:
    """The classes LMDBDataset adds to LMDBReader: torchvision's ``ImageFolder`` where torchvision is
    installed (the module's docstring says why), else torch's ``Dataset``, as ImageFolder is."""
    try:
        from torch.utils.data import Dataset
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(NO_TORCH, name=exc.name) from None
    try:
        from torchvision.datasets import ImageFolder
    except ModuleNotFoundError:
        return (Dataset,)
    return (ImageFolder,)
