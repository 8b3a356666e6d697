"""ILSVRC2012 specifics: the devkit's class list and validation ground truth, val labels, and the
published md5 of the official archives.

Class index = position of the WNID among the sorted WNIDs, which is what ImageFolder gives on the
extracted train tree, so train and val share one ``class_to_idx``.

Validation images are labelled by the number in their file name (``ILSVRC2012_val_00000017.JPEG``
is line 17 of the ground truth), never by position: a partial val tar (or one whose members are
not in name order, like the official one) is labelled right. torchvision's
``parse_val_archive`` labels by position, and its ``parse_devkit_archive`` insists on the official
md5 and saves a pickle, so the devkit is read here with the same scipy call torchvision uses.
"""

import contextlib
import csv
import hashlib
import io
import os
import re
import tarfile
import tempfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tqdm import tqdm

from imagefolder_lmdb.classes.lists import ClassList, is_shipped, shipped_list
from imagefolder_lmdb.sources.archive_members import DamagedArchiveError, check_tar_members
from imagefolder_lmdb.sources.inputs_read import InputRead, read_input

VAL_NAME = re.compile(r"^ILSVRC2012_val_(\d{8})\.(JPEG|jpeg|jpg|JPG|png|PNG)$")
DEVKIT_META = "data/meta.mat"
DEVKIT_GROUND_TRUTH = "data/ILSVRC2012_validation_ground_truth.txt"


class LabelError(ValueError):
    """A validation image whose label cannot be found; the message names it."""


@dataclass
class ValLabels:
    """The 1,000 classes (sorted WNIDs) and the WNID of each validation image number."""

    classes: list[str]
    wnid_of_image: dict[int, str]  # 1-based number in the file name -> WNID
    read_from: InputRead | None = None  # the devkit or CSV as parsed

    def wnid(self, file_name: str) -> str:
        match = VAL_NAME.search(file_name)
        if match is None:
            raise LabelError(f"{file_name}: not an ILSVRC2012 validation file name (ILSVRC2012_val_NNNNNNNN.JPEG)")
        number = int(match.group(1))
        if number not in self.wnid_of_image:
            raise LabelError(f"{file_name}: image number {number} is not in the ground truth")
        return self.wnid_of_image[number]


def parse_meta_mat(path: str) -> dict[int, str]:
    """ILSVRC2012_ID -> WNID of the 1,000 leaf synsets (torchvision's parse_meta_mat logic)."""
    import scipy.io  # imported here: only the ILSVRC layouts need scipy

    synsets = scipy.io.loadmat(path, squeeze_me=True)["synsets"]
    leaves = [s for s in synsets if int(s[4]) == 0]  # field 4: num_children
    return {int(s[0]): str(s[1]) for s in leaves}  # fields 0, 1: ILSVRC2012_ID, WNID


def read_devkit_member(devkit: str, data: bytes, suffix: str, into: str) -> str:
    """Extract the member ending in ``suffix`` (safely) of the devkit whose bytes are ``data`` (read
    once for both members: sources/inputs_read.py) and return its path."""
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
        members = [m for m in tar.getmembers() if m.name.endswith(suffix) and m.isfile()]
        if not members:
            raise LabelError(f"{devkit}: no member ending in {suffix}; is this ILSVRC2012_devkit_t12.tar.gz?")
        check_tar_members(devkit, members, links_allowed=False)
        tar.extractall(into, members=members[:1], filter="data")
    return os.path.join(into, members[0].name)


@contextlib.contextmanager
def devkit_errors(devkit: str) -> Iterator[None]:
    """A devkit that cannot be read is named, with what to do, instead of a bare library error."""
    try:
        yield
    except LabelError:
        raise
    except (OSError, EOFError, tarfile.TarError, zlib.error, ValueError, KeyError, IndexError) as exc:
        raise LabelError(
            f"{devkit}: cannot be read as ILSVRC2012_devkit_t12.tar.gz ({type(exc).__name__}: {exc}). "
            "Give the devkit's .tar.gz as it was downloaded, or download it again if it is damaged."
        ) from exc


def labels_from_devkit(devkit: str) -> ValLabels:
    with devkit_errors(devkit), tempfile.TemporaryDirectory() as scratch:
        data, read = read_input(devkit)
        id_to_wnid = parse_meta_mat(read_devkit_member(devkit, data, DEVKIT_META, scratch))
        with open(read_devkit_member(devkit, data, DEVKIT_GROUND_TRUTH, scratch), encoding="ascii") as stream:
            ids = [int(line) for line in stream if line.strip()]
    unknown = sorted(set(ids) - set(id_to_wnid))
    if unknown:
        raise LabelError(f"{devkit}: ground truth uses ILSVRC2012_IDs {unknown[:5]} that meta.mat does not list")
    return ValLabels(
        classes=sorted(id_to_wnid.values()),
        wnid_of_image={number: id_to_wnid[i] for number, i in enumerate(ids, start=1)},
        read_from=read,
    )


def labels_from_solution_csv(path: str) -> ValLabels:
    """Kaggle's LOC_val_solution.csv: ``ImageId,PredictionString`` whose first word is the WNID."""
    wnid_of_image = {}
    data, read = read_input(path)
    for row in csv.DictReader(io.StringIO(data.decode("utf-8"), newline="")):
        match = re.search(r"(\d{8})$", row["ImageId"])
        if match is None or not row["PredictionString"].split():
            raise LabelError(f"{path}: cannot read the row {row}")
        wnid_of_image[int(match.group(1))] = row["PredictionString"].split()[0]
    return ValLabels(classes=sorted(set(wnid_of_image.values())), wnid_of_image=wnid_of_image, read_from=read)


#: Why ``devkit: imagenet1k`` cannot label validation images.
SHIPPED_NOT_GROUND_TRUTH = (
    "the shipped list names the 1,000 classes, not the class of each validation image: those labels are "
    "the devkit's ground truth (data/ILSVRC2012_validation_ground_truth.txt), which no class list can replace. "
    "Set devkit: ILSVRC2012_devkit_t12.tar.gz or val_labels: LOC_val_solution.csv (Kaggle's)"
)


def val_labels(devkit: str | None, solution_csv: str | None) -> ValLabels:
    if is_shipped(devkit):
        raise LabelError(f"layout ilsvrc-val with devkit: {devkit}: {SHIPPED_NOT_GROUND_TRUTH}.")
    if devkit:
        return labels_from_devkit(devkit)
    if solution_csv:
        return labels_from_solution_csv(solution_csv)
    raise LabelError("layout ilsvrc-val needs `devkit:` (ILSVRC2012_devkit_t12.tar.gz) or `val_labels:` (CSV)")


def devkit_classes(devkit: str) -> list[str]:
    """The 1,000 WNIDs, sorted: what a complete train split must hold (``devkit: imagenet1k``: the
    shipped list, the same WNIDs)."""
    return devkit_class_list(devkit)[0]


def devkit_class_list(devkit: str) -> tuple[list[str], InputRead | None]:
    """``devkit_classes``, and the devkit as parsed (None: the shipped list, no file of the user's)."""
    if is_shipped(devkit):
        return list(shipped_list(devkit).names), None
    with devkit_errors(devkit), tempfile.TemporaryDirectory() as scratch:
        data, read = read_input(devkit)
        return sorted(parse_meta_mat(read_devkit_member(devkit, data, DEVKIT_META, scratch)).values()), read


#: md5 of the files as distributed by image-net.org (also in torchvision.datasets.imagenet).
OFFICIAL_MD5 = {
    "ILSVRC2012_img_train.tar": "1d675b47d978889d74fa0da5fadfb00e",
    "ILSVRC2012_img_val.tar": "29b22e2961454d5413ddabcf34fc5622",
    "ILSVRC2012_devkit_t12.tar.gz": "fa75699e90414af021442c21a62c3abf",
}


def train_devkit_problems(
    held: list[str], class_list: ClassList, own_list: bool, expected: list[str] | None
) -> list[str]:
    """Rule count_check, for ILSVRC2012's class tars with a devkit (``expected``: its classes; None:
    no devkit, or another labelling): the WNIDs a full source lacks (``own_list``: the split lists its
    own classes), or a class list names wrongly."""
    if expected is None:
        return []
    missing = sorted(set(expected) - set(held)) if own_list else []
    extra = sorted(set(class_list.names) - set(expected))
    return [f"class {w} (its tar or folder) is missing" for w in missing[:20]] + [
        f"{w} is not an ILSVRC2012 class" for w in extra[:20]
    ]


def md5_of(path: str, progress: dict[str, Any] | None = None, chunk: int = 8 << 20) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    with (
        open(path, "rb") as stream,
        tqdm(
            total=os.path.getsize(path),
            desc=f"md5 {os.path.basename(path)}",
            unit="B",
            unit_scale=True,
            **(progress or {}),
        ) as bar,
    ):
        while block := stream.read(chunk):
            digest.update(block)
            bar.update(len(block))
    return digest.hexdigest()


def check_official_md5(path: str, progress: dict[str, Any] | None = None) -> str:
    """Compare an official archive with its published md5; other file names are not checked."""
    expected = OFFICIAL_MD5.get(os.path.basename(path))
    if expected is None:
        return f"{path}: no published md5 for this file name, not checked"
    actual = md5_of(path, progress)
    if actual != expected:
        raise DamagedArchiveError(
            f"{path}: md5 {actual} differs from the published {expected}; the file is damaged or "
            "incomplete. Download it again."
        )
    return f"{path}: md5 {actual} matches the published value"
