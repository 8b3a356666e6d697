"""A split's settings as each step takes them: one typed shape per rule, built from the checked
config by rules/common.smk and read back by the step (``from_param``).

Snakemake compares a job's params with the last run's to decide what to run again, and it can only
compare plain values: so a rule's param is the shape ``as_param`` makes of it (a dict), never the
object. A change to any field of a rule's settings runs that rule again; nothing else does.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import asdict, dataclass
from typing import Any, Self

from imagefolder_lmdb.sources import kind_options
from imagefolder_lmdb.sources.base import Request


@dataclass(frozen=True)
class Settings:
    """A rule's settings of one split: written as a param, read back by the step."""

    def as_param(self) -> dict[str, Any]:
        """The settings as the rule's param: plain values Snakemake can compare between runs."""
        return asdict(self)

    @classmethod
    def from_param(cls, param: dict[str, Any]) -> Self:
        """The settings the rule's param holds (``as_param``'s dict, as Snakemake hands it on)."""
        return cls(**dict(param))


@dataclass(frozen=True)
class ExtractSettings(Settings):
    """Rule extract: what to make readable, and how (splits.<name> in config/schema.yaml)."""

    source: str | list[str]  # the config's value: a folder, an archive, or for source files a pattern or list
    layout: str  # imagefolder | ilsvrc-train | ilsvrc-val | webdataset | parquet
    extract: bool  # unpack archives even where they could be read in place
    md5: bool  # check the official ILSVRC2012 archives against their md5 first
    root: str | None  # the folder inside the source to read
    image_column: str  # layout parquet
    label_column: str
    wanted: list[str] | None = None  # the shared class list: other class tars stay unread
    labels_member: str | None = None  # val_labels, a member of the source archive
    folder_stamp: str | None = None  # changes when a folder source's class folders do (work/folder_listing.py)

    def request(self, files: list[str], progress: dict[str, Any]) -> Request:
        """What the sources are asked to make readable: ``files`` are the source's files as
        Snakemake found them (one, or each source file of a webdataset or parquet split)."""
        wanted: Collection[str] | None = frozenset(self.wanted) if self.wanted is not None else None
        return Request(
            self.source if isinstance(self.source, str) else files[0],
            self.layout,
            self.extract,
            wanted,
            progress,
            files=files,
            options=kind_options(asdict(self)),
            root=(self.root or "").strip("/"),
        )


@dataclass(frozen=True)
class CountSettings(Settings):
    """Rule count_check: what the listing is checked against, and where labels and classes come from."""

    split: str
    expected_images: int | None
    expected_classes: int | None
    shards: int
    devkit: str | None  # ILSVRC2012 devkit (or ``imagenet1k``)
    val_labels: str | None  # a labels CSV of its own (not a member of the source archive)
    class_list: dict[str, Any]  # the split's ClassSource (classes/plan.py) as data


@dataclass(frozen=True)
class MergeSettings(Settings):
    """Rule merge: how many records the split must end with: splits.<name>.expected_images minus
    allow_skipped (no bound without expected_images), and never none."""

    split: str = "this split"
    expected_images: int | None = None
    allow_skipped: int = 0


def extract_settings(split: dict[str, Any], **derived: Any) -> ExtractSettings:
    """Rule extract's settings of the checked split config ``split``; ``derived``: what
    rules/common.smk works out for it (wanted, labels_member, folder_stamp)."""
    keys = ("source", "layout", "extract", "md5", "root", "image_column", "label_column")
    return ExtractSettings(**{key: split[key] for key in keys}, **derived)


def count_settings(name: str, split: dict[str, Any], **derived: Any) -> CountSettings:
    """Rule count_check's settings of split ``name``; ``derived``: val_labels and class_list."""
    keys = ("expected_images", "expected_classes", "shards", "devkit")
    return CountSettings(split=name, **{key: split[key] for key in keys}, **derived)


def merge_settings(name: str, split: dict[str, Any]) -> MergeSettings:
    """Rule merge's settings of split ``name``."""
    return MergeSettings(name, split["expected_images"], split["allow_skipped"])
