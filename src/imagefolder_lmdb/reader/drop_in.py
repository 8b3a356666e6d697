"""What ImageFolder has beyond its index, for code written against it: ``loader``, ``extensions``,
``transforms`` and ``find_classes(directory)``, without importing torchvision."""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from typing import Any

from imagefolder_lmdb.reader.decoding import pil_decode

#: torchvision's IMG_EXTENSIONS: the files ImageFolder takes, and so the ones the workflow converted.
IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


def record_loader(record: bytes | bytearray | memoryview | io.BytesIO) -> Any:
    """ImageFolder's ``loader`` for records: an RGB PIL image from a record's stored bytes (or a file
    object holding them), exactly as ImageFolder's loader makes it from the file; there is no path."""
    data = record.getvalue() if isinstance(record, io.BytesIO) else record
    return pil_decode(data)


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

    transform: Callable[[Any], Any] | None
    target_transform: Callable[[Any], Any] | None
    #: The files ImageFolder takes (torchvision's IMG_EXTENSIONS), as ``ImageFolder.extensions``.
    extensions: tuple[str, ...] = IMG_EXTENSIONS

    @property
    def loader(self) -> Callable[[Any], Any]:
        """``record_loader``: what ImageFolder's ``loader(path)`` does, from a record's bytes."""
        return record_loader

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
