"""Source kind ``webdataset``: uncompressed tar files of samples, read in place (layout webdataset).

Its source files are what WebDataset and timm call shards; here "shard" means an encode job, so the
code calls them tar files (messages keep the users' word). A tar file (timm's
``imagenet1k-train-0000.tar`` of the Hugging Face hub's ``imagenet-1k-wds``) holds
samples as consecutive members sharing a key: ``n01440764_10026.jpg`` (the image),
``n01440764_10026.cls`` (the integer label, as text) and ``n01440764_10026.json``. Members are
grouped exactly as the webdataset library groups them (``tariterators.group_by_keys`` with
``base_plus_ext``): the key is the name up to the first dot of its last path component, the
suffix the rest, lower-cased; a new sample starts wherever the key changes, and at each tar file's
end; ``__*__`` names are skipped, a suffix twice in one sample is an error.

Rule extract indexes every tar file (``archive_members.index_tar``: links, devices and escaping names are
refused; a file cut short is named), reads each ``.cls`` (a few bytes) and writes one
members.jsonl row per sample: ``<key>.<image extension>``, where its image's bytes lie, its label.
No per-image file is written. Each sample has exactly one image member (any extension below; the
image is decoded by its content, so a PNG named ``.jpg`` is re-encoded as any PNG) and one
``.cls``; ``.json`` and other members are not read.

Record order: tar files in the order the source names them (a list as given, a brace pattern as it
expands, a glob sorted), samples in tar order within each file: record ``i`` is the ``i``-th
sample ``webdataset.WebDataset(shards, shardshuffle=False)`` yields. Labels are named by
sources/labelled.py (devkit > the shared class list).
"""

from __future__ import annotations

import logging
import os
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from tqdm import tqdm

from imagefolder_lmdb.classes.lists import ClassList
from imagefolder_lmdb.sources.archive_members import index_tar, relative_name
from imagefolder_lmdb.sources.base import Labels, Listing, Request, SampleReader, Source
from imagefolder_lmdb.sources.indexed_archive import TarReader
from imagefolder_lmdb.sources.labelled import label_names, labelled_listing
from imagefolder_lmdb.work.files import (
    ManifestHeader,
    Member,
    SourceDescription,
    iter_labelled_members,
    write_members,
)
from imagefolder_lmdb.work.source_locations import Location, TarLocation, location_as

log = logging.getLogger("imagefolder_lmdb.sources")

#: The last suffix of a sample's image member: torchvision's IMG_EXTENSIONS, the netpbm family and
#: JPEG's other names (webdataset's decoder takes any Pillow format; these are what datasets hold).
IMAGE_SUFFIXES = frozenset(
    ["jpg", "jpeg", "jpe", "jfif", "png", "ppm", "pgm", "pbm", "pnm", "bmp", "tif", "tiff", "webp", "gif"]
)
LABEL_SUFFIX = "cls"
#: Read as webdataset reads ``.cls``: a decimal integer, spaces and a newline around it allowed.
LABEL_TEXT = re.compile(rb"\s*[+-]?\d+\s*")
#: The longest ``.cls`` member read (timm's are 1-4 bytes): a bigger one is no label.
LABEL_MAX_BYTES = 64
#: webdataset's ``tar_file_iterator``: metadata members skipped before grouping.
META_NAME = re.compile(r"__[^/]*__($|/)")
#: webdataset's ``base_plus_ext``: key (up to the first dot of the last component) and suffix.
KEY_AND_SUFFIX = re.compile(r"^((?:.*/|)[^.]+)[.]([^/]*)$")


class WebDatasetSampleError(ValueError):
    """A sample of a tar file is not one image with one label; the message names the file and the key."""


class WebDatasetSource(Source):
    """Tar files (WebDataset's shards) of ``key.<image>`` + ``key.cls`` samples, read in place."""

    kind = "webdataset"
    file_set = True

    @classmethod
    def expects(cls) -> str:
        return "samples of an image and a .cls label"

    @classmethod
    def recognises(cls, ignored: list[str]) -> str | None:
        if not any(name.endswith(f".{LABEL_SUFFIX}") for name in ignored):  # key.jpg beside key.cls
            return None
        return "its files look like WebDataset samples (key.jpg + key.cls): set layout: webdataset."

    def prepare(self, request: Request, building: str, output: str) -> SourceDescription:
        if request.extract:
            raise ValueError(
                f"{request.source}: extract: true does not apply to layout webdataset (its shards are read "
                "in place, nothing is unpacked); remove it."
            )
        tar_files = [os.path.abspath(path) for path in request.files]
        unread: Counter[str] = Counter()
        members = webdataset_members(tar_files, unread, request.progress)
        count = write_members(building, members)
        log.info("indexed %d samples in %d tar file(s); nothing extracted", count, len(tar_files))
        if unread:
            log.info("members not read (not a sample's image or label), by suffix: %s", dict(sorted(unread.items())))
        return SourceDescription(
            self.kind, os.path.abspath(request.source), request.layout, containers=tar_files, members=count
        )

    def list(
        self, description: SourceDescription, source_dir: str, labels: Labels, progress: dict, wanted: ClassList | None
    ) -> Listing:
        tar_files = description.containers
        names = label_names(None, labels.get("devkit"), wanted, description.source)
        where = lambda member: sample_where(tar_files, member)  # noqa: E731
        listing = labelled_listing(iter_labelled_members(source_dir), names, wanted, where)
        listing.containers = tar_files
        listing.root = os.path.dirname(tar_files[0])
        return listing

    def reader(self, header: ManifestHeader) -> SampleReader:
        return WebDatasetReader(header.containers)


class WebDatasetReader(TarReader):
    """Reads samples' images from the tar files; names the file, the sample key and the member."""

    def describe(self, path: str, location: Location) -> str:
        member = path.split("/", 1)[-1]  # the manifest path is <class>/<member>
        tar_file = self.containers[location_as(TarLocation, path, location).tar]
        return f"{tar_file}: sample {sample_key(member)} (member {member})"


def sample_key(member: str) -> str:
    match = KEY_AND_SUFFIX.match(member)
    return match.group(1) if match else member


def sample_where(tar_files: list[str], member: Member) -> str:
    """A listed sample, as messages name it: its tar file and key."""
    tar_file = tar_files[location_as(TarLocation, member.path, member.location).tar]
    return f"{tar_file}: sample {sample_key(member.path)}"


# --------------------------------------------------------------------------------------------------
# Grouping a tar file's members into samples, as webdataset does.
# --------------------------------------------------------------------------------------------------


@dataclass
class KeyedSample:
    """The members of one sample: suffix (lower-cased) -> (member name, location)."""

    key: str
    parts: dict[str, tuple[str, TarLocation]] = field(default_factory=dict)


def webdataset_members(tar_files: list[str], unread: Counter[str], progress: dict) -> Iterator[Member]:
    """One member row per sample of every tar file, in record order (``unread``: suffixes not read)."""
    for number, tar_file in enumerate(tqdm(tar_files, desc="index tar files", unit="file", **progress)):
        with open(tar_file, "rb") as stream:
            for sample in grouped_samples(tar_file, index_tar(tar_file, number)):
                yield sample_member(tar_file, sample, stream.fileno(), unread)


def grouped_samples(tar_file: str, members: Iterator[Member]) -> Iterator[KeyedSample]:
    """webdataset's grouping: consecutive file members with the same key form a sample."""
    current: KeyedSample | None = None
    for member in members:
        if member.location is None or is_meta(member.path):
            continue  # folders, and webdataset's __*__ metadata members
        match = KEY_AND_SUFFIX.match(member.path)
        if match is None:
            continue  # no suffix: webdataset skips it too
        key, suffix = match.group(1), match.group(2).lower()
        if current is None or key != current.key:
            if current is not None:
                yield current
            current = KeyedSample(key)
        if suffix in current.parts:
            raise WebDatasetSampleError(
                f"{tar_file}: sample {key} has two .{suffix} members ({current.parts[suffix][0]}, {member.path}); "
                "webdataset refuses such a shard too. Write each sample's members once."
            )
        current.parts[suffix] = (member.path, location_as(TarLocation, member.path, member.location))
    if current is not None:
        yield current


def is_meta(name: str) -> bool:
    """webdataset's ``tar_file_iterator`` skips these before grouping."""
    return bool(META_NAME.match(name)) or ("/" not in name and name.startswith("__") and name.endswith("__"))


def sample_member(tar_file: str, sample: KeyedSample, fd: int, unread: Counter[str]) -> Member:
    """The sample as a member row: its image (the one member with an image suffix) and label."""
    images = [suffix for suffix in sample.parts if suffix.rsplit(".", 1)[-1] in IMAGE_SUFFIXES]
    held = ", ".join(name for name, _ in sample.parts.values())
    if len(images) != 1:
        what = "no image member" if not images else f"{len(images)} image members"
        raise WebDatasetSampleError(
            f"{tar_file}: sample {sample.key} has {what} (members: {held}); each sample needs exactly one image "
            f"({', '.join(sorted(IMAGE_SUFFIXES))}) and its .cls label. Write the shard again with one image per "
            "sample, or remove the sample."
        )
    if LABEL_SUFFIX not in sample.parts:
        raise WebDatasetSampleError(
            f"{tar_file}: sample {sample.key} has no .{LABEL_SUFFIX} member, so no label (members: {held}). Write "
            f"the shard again with a {sample.key}.cls holding its class number, or remove the sample."
        )
    unread.update(suffix for suffix in sample.parts if suffix not in (images[0], LABEL_SUFFIX))
    name, location = sample.parts[images[0]]
    return Member(relative_name(name), location, read_label(tar_file, sample, fd))


def read_label(tar_file: str, sample: KeyedSample, fd: int) -> int:
    """The integer a sample's ``.cls`` member holds."""
    name, location = sample.parts[LABEL_SUFFIX]
    data = os.pread(fd, min(location.size, LABEL_MAX_BYTES + 1), location.offset)
    if len(data) > LABEL_MAX_BYTES or not LABEL_TEXT.fullmatch(data):
        raise WebDatasetSampleError(
            f"{tar_file}: sample {sample.key}: {name} holds {data[:20]!r}, not a class number. A .cls member holds "
            "the label as a decimal integer (e.g. 417); write the shard again with it, or remove the sample."
        )
    return int(data)
