"""Which class list each split of a config is converted with, decided from the config before any
job runs (the lists themselves: src/imagefolder_lmdb/classes/lists.py).

Every split with ``share_classes: true`` (the default) uses one list: the config's ``classes:``, or
else the classes of the first such split, whose manifest the later ones read. A split with
``share_classes: false`` lists its own, as ImageFolder does. Rule count_check gets a split's
ClassSource as data and turns it into words here, in ``ClassSource.words``: the summary, the verify
report and the messages show those words, and no code reads them back.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from imagefolder_lmdb.classes.lists import configured_names, configured_origin

#: config: the config's classes:; source: this split's own source, whose classes later sharing splits
#: take; shared: the classes of split ``shared_from``; own: share_classes: false.
SourceKind = Literal["config", "source", "shared", "own"]


@dataclass(frozen=True)
class ClassSource:
    """Where one split's class list comes from."""

    kind: SourceKind
    names: list[str] | None = None  # kind config: the sorted names
    listed_in: str | None = None  # kind config: the classes: value when it is a file or a shipped list
    shared_from: str | None = None  # kind shared: the split whose classes this one takes
    shared_with: tuple[str, ...] = ()  # kind source: the splits that take this split's classes

    def words(self) -> str:
        """The origin in words: "shared from train", "from config/imagenet100.txt", ..."""
        if self.kind == "config":
            return configured_origin(self.listed_in)
        if self.kind == "own":
            return "this split's own (share_classes: false)"
        if self.kind == "shared":
            return f"shared from {self.shared_from}"
        shared = f", shared with {', '.join(self.shared_with)}" if self.shared_with else ""
        return f"from this split's source{shared}"

    def as_param(self) -> dict[str, Any]:
        """For a rule's params (plain data, so that Snakemake can compare it between runs)."""
        return {**asdict(self), "shared_with": list(self.shared_with)}

    @classmethod
    def from_param(cls, param: dict[str, Any] | None) -> ClassSource:
        if not param:
            return cls("source")
        return cls(**{**param, "shared_with": tuple(param.get("shared_with", ()))})


@dataclass(frozen=True)
class ClassPlan:
    """The class list of every split of one config."""

    names: list[str] | None  # the config's classes:, sorted (None: the first sharing split's)
    listed_in: str | None  # the classes: value when it names a file or a shipped list
    sharing: tuple[str, ...]  # the splits with share_classes: true, in config order

    @property
    def first(self) -> str | None:
        """The split whose classes every sharing split takes, when the config lists none."""
        return self.sharing[0] if self.sharing and self.names is None else None

    def source(self, split: str) -> ClassSource:
        if split not in self.sharing:
            return ClassSource("own")
        if self.names is not None:
            return ClassSource("config", names=list(self.names), listed_in=self.listed_in)
        if split != self.first:
            return ClassSource("shared", shared_from=self.first)
        return ClassSource("source", shared_with=tuple(name for name in self.sharing if name != split))

    def wanted(self, split: str) -> list[str] | None:
        """The config's class list for a split that shares it (extract reads only those classes)."""
        return list(self.names) if self.names is not None and split in self.sharing else None

    def shared_from(self, split: str) -> str | None:
        """The split whose manifest holds this split's classes (None: its own or the config's)."""
        return self.source(split).shared_from


def plan_classes(config: dict[str, Any]) -> ClassPlan:
    """The plan of a checked config; ClassListError when its ``classes:`` cannot be used."""
    value = config["classes"]
    sharing = tuple(name for name, split in config["splits"].items() if split["share_classes"])
    # a split without labels (layout unlabelled) has no classes of its own: it takes a labelled one's
    sharing = tuple(sorted(sharing, key=lambda name: config["splits"][name].get("layout") == "unlabelled"))
    if value is None:
        return ClassPlan(None, None, sharing)
    names, _ = configured_names(value)
    return ClassPlan(names, value if isinstance(value, str) else None, sharing)
