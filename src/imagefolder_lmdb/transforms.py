"""Transforms that decode a JPEG at the size they need (issue 45): ``RandomResizedCrop`` and ``Resize``.

They are torchvision's v2 transforms, subclassed: the same signatures, the same parameter sampling
(``make_params``, inherited, reads only ``.size``, so under a seed the crop box is torchvision's),
and on a decoded image (PIL or tensor) the same output. Given a lazily opened JPEG, a PIL image
whose pixels are not loaded yet (what ``LMDBDataset`` hands over when its transform holds one of
these), they ask libjpeg for the largest DCT reduction (1/2, 1/4, 1/8, Pillow's ``Image.draft``)
after which the crop is still at least the output size on both sides, then crop and resize the
reduced image. That skips most of the inverse DCT, upsampling and colour conversion of a large
photo; the pixels are close to, not equal to, a full decode's (docs/training.md: when to use it).

Used in place of torchvision's, in a v2 or a v1 ``Compose``::

    from torchvision.transforms import v2
    from imagefolder_lmdb import transforms as T

    train = v2.Compose([T.RandomResizedCrop(224), v2.RandomHorizontalFlip(), v2.PILToTensor()])
    val = v2.Compose([T.Resize(256), v2.CenterCrop(224), v2.PILToTensor()])

``CenterCrop`` has no version here: a crop of an unscaled image is already the output size, so no
reduction applies; after ``Resize`` the image is decoded and scaled anyway.
"""

from __future__ import annotations

from typing import Any

from PIL import Image, JpegImagePlugin

try:
    from torchvision.transforms import functional as _v1_functional
    from torchvision.transforms import v2
    from torchvision.transforms.v2.functional._geometry import _check_interpolation, _compute_resized_output_size
except ImportError as exc:
    raise ImportError(
        "imagefolder_lmdb.transforms subclasses torchvision's transforms: `pip install torchvision` (0.21 or newer)"
    ) from exc

from imagefolder_lmdb.reader.decoding import is_lazy_jpeg, wants_lazy_jpeg

if not hasattr(v2.Transform, "make_params"):  # before 0.21 v2 called _get_params/_transform: ours would never run
    raise ImportError("imagefolder_lmdb.transforms needs torchvision 0.21 or newer (its make_params and transform)")

__all__ = ["RandomResizedCrop", "Resize", "is_lazy_jpeg", "wants_lazy_jpeg"]

#: The reductions libjpeg offers through Pillow's draft, largest first.
_SCALES = (8, 4, 2)


def _reduction(crop: tuple[int, int], output: tuple[int, int]) -> int:
    """The largest DCT reduction after which a ``crop`` of (width, height) is still at least
    ``output`` (width, height) on both sides; 1 when none applies."""
    return next((s for s in _SCALES if crop[0] >= s * output[0] and crop[1] >= s * output[1]), 1)


def _drafted(image: JpegImagePlugin.JpegImageFile, scale: int) -> float:
    """Ask libjpeg to decode ``image`` at 1/``scale``; the reduction it will apply (draft's own choice,
    which may round: the box maps full-size coordinates to the reduced image)."""
    width, height = image.size
    drafted = image.draft("RGB", (max(1, width // scale), max(1, height // scale)))
    return 1.0 if drafted is None else width / drafted[1][2]


def _resample(interpolation: Any) -> Image.Resampling:
    """Pillow's filter for a torchvision interpolation, as torchvision's PIL kernels pick it."""
    return _v1_functional.pil_modes_mapping[_check_interpolation(interpolation)]


class RandomResizedCrop(v2.RandomResizedCrop):
    """torchvision's ``v2.RandomResizedCrop``, decoding a lazily opened JPEG at the largest DCT
    reduction that keeps the crop at least ``size``: the box is torchvision's (its ``make_params``),
    in full-size coordinates. Any other input: exactly torchvision's."""

    decodes_lazy_jpeg = True

    def reduces(self, width: int, height: int) -> bool:
        """Whether some crop of a ``width`` x ``height`` image could be decoded at a reduced size."""
        out_height, out_width = self.size
        return _reduction((width, height), (out_width, out_height)) > 1

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        if not is_lazy_jpeg(inpt):
            return super().transform(inpt, params)
        out_height, out_width = self.size
        scale = _reduction((params["width"], params["height"]), (out_width, out_height))
        if scale == 1:
            return super().transform(inpt, params)
        factor = _drafted(inpt, scale)
        left, top = params["left"] / factor, params["top"] / factor
        box = (left, top, left + params["width"] / factor, top + params["height"] / factor)
        return inpt.resize((out_width, out_height), resample=_resample(self.interpolation), box=box)


class Resize(v2.Resize):
    """torchvision's ``v2.Resize``, decoding a lazily opened JPEG at the largest DCT reduction that
    keeps the image at least the output size; the output size is computed from the full size, as
    torchvision does. Any other input: exactly torchvision's."""

    decodes_lazy_jpeg = True

    def reduces(self, width: int, height: int) -> bool:
        """Whether a ``width`` x ``height`` image would be decoded at a reduced size."""
        return self._scale(width, height)[0] > 1

    def _scale(self, width: int, height: int) -> tuple[int, int, int]:
        """The reduction for a ``width`` x ``height`` image, and the output's height and width."""
        out_height, out_width = _compute_resized_output_size((height, width), self.size, self.max_size)
        return _reduction((width, height), (out_width, out_height)), out_height, out_width

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        if not is_lazy_jpeg(inpt):
            return super().transform(inpt, params)
        width, height = inpt.size
        scale, out_height, out_width = self._scale(width, height)
        if scale == 1:
            return super().transform(inpt, params)
        factor = _drafted(inpt, scale)
        box = (0.0, 0.0, width / factor, height / factor)
        return inpt.resize((out_width, out_height), resample=_resample(self.interpolation), box=box)
