"""What ImageFolder has beyond its index, for code written against it: ``loader``, ``extensions``,
``transforms`` and ``find_classes(directory)``, without importing torchvision."""

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


class StandardTransform:
    """torchvision's StandardTransform: ``transform`` on the image, ``target_transform`` on the label."""

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
        return f"{type(self).__name__}(transform={self.transform!r}, target_transform={self.target_transform!r})"


class DropIn:
    """ImageFolder's remaining attributes (mixed into the dataset classes)."""

    root: str | None
    transform: Callable[[Any], Any] | None
    target_transform: Callable[[Any], Any] | None
    #: The files ImageFolder takes (torchvision's IMG_EXTENSIONS), as ``ImageFolder.extensions``.
    extensions: tuple[str, ...] = IMG_EXTENSIONS

    @property
    def loader(self) -> Callable[[Loadable], Any]:
        """What ImageFolder's ``loader`` does: an RGB image from a record's bytes (``ds.get_bytes(i)``),
        a file object, or a path (a relative one, as ``samples`` hold, is looked for under ``root``)."""
        return loader_for(self.root)

    @property
    def transforms(self) -> StandardTransform | None:
        """``transform`` and ``target_transform`` together, as VisionDataset's ``transforms``."""
        if self.transform is None and self.target_transform is None:
            return None
        return StandardTransform(self.transform, self.target_transform)

    @staticmethod
    def find_classes(directory: str | os.PathLike[str]) -> tuple[list[str], dict[str, int]]:
        """ImageFolder's ``find_classes``: the sorted class folders of ``directory`` and their indices."""
        classes = sorted(entry.name for entry in os.scandir(directory) if entry.is_dir())
        if not classes:
            raise FileNotFoundError(f"Couldn't find any class folder in {os.fspath(directory)}.")
        return classes, {name: index for index, name in enumerate(classes)}
