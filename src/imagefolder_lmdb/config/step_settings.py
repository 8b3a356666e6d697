"""A split's settings as each rule's step takes them: one typed object per rule (``ExtractSettings``,
``CountSettings``, ``EncodeShardSettings``, ``MergeSettings``, ``WriteMetaSettings``,
``VerifySettings``), made here from the checked config and read back by the step from the rule's
params (``<Rule>Settings.from_params(snakemake.params)``). Rule report_split has none: its one param
is a folder of the work tree, a path like its inputs.

Snakemake compares a job's params with the last run's to decide what to run again, and it can only
compare plain values: so a rule's params are plain data, never the object, and rules/common.smk
makes them here (``as_param``, ``<rule>_params``). It compares each param's ``repr``: a param keeps the
value and shape an earlier version gave it (the encode section in the config's own key order, not
the schema's), so that a work folder left by that version runs nothing again after an upgrade. A
change to any field of a rule's settings runs that rule again; nothing else does. Defaults live in
config/schema.yaml alone: the config is checked (its defaults filled in) before anything here.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar, Self

from imagefolder_lmdb.sources import all_kind_options, kind_options
from imagefolder_lmdb.sources.base import Request
from imagefolder_lmdb.sources.labellings import EXTRACT_KEYS, PARAM_ORDER, extract_label_settings, label_settings
from imagefolder_lmdb.sources.listing_options import ListingOptions
from imagefolder_lmdb.work.files import options_gathered, options_spread

if TYPE_CHECKING:  # imported where used: rules/common.smk imports this module in every job, Pillow needs not
    from imagefolder_lmdb.writing.reencode import EncodeSettings


def param(params: Any, name: str) -> Any:
    """A rule's param ``name``: an attribute of ``snakemake.params``, a key of a dict of params."""
    return params[name] if isinstance(params, Mapping) else getattr(params, name)


@dataclass(frozen=True)
class StepSettings:
    """A rule's settings of one split. The rule has one param, ``settings``, holding the fields as
    ``as_param`` writes them; or, where ``PARAM_PER_FIELD``, one param per field, named after it."""

    #: Each field a param of its own (the rules whose params earlier versions gave that shape).
    PARAM_PER_FIELD: ClassVar[bool] = False

    def as_param(self) -> dict[str, Any]:
        """The settings as the rule's param: plain values Snakemake can compare between runs."""
        return asdict(self)

    @classmethod
    def from_param(cls, param: Mapping[str, Any]) -> Self:
        """The settings the rule's param holds (``as_param``'s dict, as Snakemake hands it on)."""
        return cls(**dict(param))

    @classmethod
    def from_params(cls, params: Any) -> Self:
        """The settings the rule's params hold: ``snakemake.params`` in the step (or a dict of them)."""
        if cls.PARAM_PER_FIELD:
            return cls.from_param({field.name: param(params, field.name) for field in fields(cls)})
        return cls.from_param(param(params, "settings"))


@dataclass(frozen=True)
class ExtractSettings(StepSettings):
    """Rule extract: what to make readable, and how (splits.<name> in config/schema.yaml)."""

    source: str | list[str]  # the config's value: a folder, an archive, or for source files a pattern or list
    layout: str  # a name of sources/layouts.py LAYOUTS (imagefolder, ilsvrc-val, label-file, parquet, ...)
    extract: bool  # unpack archives even where they could be read in place
    md5: bool  # check the official ILSVRC2012 archives against their md5 first
    root: str | None  # the folder inside the source to read
    #: every kind's own keys (sources.all_kind_options: Parquet's columns), the split's kind's among them
    options: dict[str, Any]
    wanted: list[str] | None = None  # the shared class list: other class tars stay unread
    #: what the split's labelling copies out of the source (sources/labellings.py extract_label_settings)
    labelling: dict[str, Any] = field(default_factory=dict)
    folder_stamp: str | None = None  # changes when a folder source's class folders do (work/folder_listing.py)

    #: The mappings besides ``options`` spread into the param, each with the keys it gathers back.
    SPREAD: ClassVar[dict[str, tuple[str, ...]]] = {"labelling": EXTRACT_KEYS}

    def as_param(self) -> dict[str, Any]:
        """The options and the labelling's keys spread as keys of their own, where they stand: the
        param earlier versions gave, when each was a field (a changed param would make Snakemake run
        extract again)."""
        return options_spread(asdict(self), self.SPREAD)

    @classmethod
    def from_param(cls, param: Mapping[str, Any]) -> Self:
        return cls(**options_gathered(cls, dict(param)))

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
            options=kind_options({"layout": self.layout, **self.options}),
            root=(self.root or "").strip("/"),
        )


@dataclass(frozen=True)
class CountSettings(StepSettings):
    """Rule count_check: what the listing is checked against, where classes come from, and the
    split's labelling's settings, handed to the listing as they are."""

    split: str
    expected_images: int | None
    expected_classes: int | None
    shards: int
    class_list: dict[str, Any]  # the split's ClassSource (classes/plan.py) as data
    #: ImageFolder's listing arguments not at their defaults (sources/listing_options.py); None: all are
    listing: dict[str, Any] | None = None
    #: the label keys the split's listing reads (sources/labellings.py label_settings), one mapping
    #: here, keys of their own in the param (``labelling_spread``)
    labelling: dict[str, Any] = field(default_factory=dict)

    def as_param(self) -> dict[str, Any]:
        """As StepSettings', the labelling's keys spread and ``listing`` left out when not used: the
        param earlier versions gave, so that a work folder they left runs nothing again."""
        found = labelling_spread(asdict(self))
        if found["listing"] is None:
            del found["listing"]
        return found

    @classmethod
    def from_param(cls, param: Mapping[str, Any]) -> Self:
        names = {spec.name for spec in fields(cls)}
        labelling = {key: value for key, value in param.items() if key not in names}
        return cls(**{key: value for key, value in param.items() if key in names}, labelling=labelling)


def labelling_spread(found: dict[str, Any]) -> dict[str, Any]:
    """CountSettings' fields with the labelling's keys as keys of their own: those of ``PARAM_ORDER``
    after ``shards``, the rest last."""
    labelling = found.pop("labelling")
    spread: dict[str, Any] = {}
    for key, value in found.items():
        spread[key] = value
        if key == "shards":
            spread.update({name: labelling[name] for name in PARAM_ORDER if name in labelling})
    return spread | {key: value for key, value in labelling.items() if key not in PARAM_ORDER}


@dataclass(frozen=True)
class EncodeShardSettings(StepSettings):
    """Rule encode_shard: how many encode jobs the split is cut into (this job's slice of the
    manifest: its stamp), and how each image is checked and stored (``encode`` in config/schema.yaml).
    Two params, ``shards`` and ``encode``, as ``encode_shard_params`` makes them."""

    PARAM_PER_FIELD = True
    shards: int
    encode: EncodeSettings

    @classmethod
    def from_param(cls, param: Mapping[str, Any]) -> Self:
        from imagefolder_lmdb.writing.reencode import EncodeSettings

        return cls(int(param["shards"]), EncodeSettings.from_config(param["encode"]))


@dataclass(frozen=True)
class MergeSettings(StepSettings):
    """Rule merge: how many records the split must end with: splits.<name>.expected_images minus
    allow_skipped (no bound without expected_images), and never none."""

    split: str
    expected_images: int | None
    allow_skipped: int


@dataclass(frozen=True)
class WriteMetaSettings(StepSettings):
    """Rule write_meta: the encode settings the meta records (``settings.encode`` of meta/json).
    One param, ``encode``, as ``write_meta_params`` makes it."""

    PARAM_PER_FIELD = True
    encode: EncodeSettings

    @classmethod
    def from_param(cls, param: Mapping[str, Any]) -> Self:
        from imagefolder_lmdb.writing.reencode import EncodeSettings

        return cls(EncodeSettings.from_config(param["encode"]))


@dataclass(frozen=True)
class VerifySettings(StepSettings):
    """Rule verify: which records it decodes (``verify`` in config/schema.yaml). Three params,
    ``sample``, ``all`` and ``seed``, as ``verify_params`` makes them."""

    PARAM_PER_FIELD = True
    sample: int  # random records decoded and checked
    all: bool  # every record instead
    seed: int  # of the random sample


def extract_settings(split: dict[str, Any], **derived: Any) -> ExtractSettings:
    """Rule extract's settings of the checked split config ``split``; ``derived``: what
    rules/common.smk works out for it (wanted, folder_stamp)."""
    keys = ("source", "layout", "extract", "md5", "root")
    options = {key: split[key] for key in all_kind_options()}
    labelling = extract_label_settings(split)
    return ExtractSettings(**{key: split[key] for key in keys}, options=options, labelling=labelling, **derived)


def count_settings(name: str, split: dict[str, Any], **derived: Any) -> CountSettings:
    """Rule count_check's settings of split ``name``; ``derived``: class_list."""
    keys = ("expected_images", "expected_classes", "shards")
    listing = ListingOptions.from_split(split).as_param()
    given = {key: split[key] for key in keys}
    return CountSettings(split=name, **given, listing=listing, labelling=label_settings(split), **derived)


def merge_settings(name: str, split: dict[str, Any]) -> MergeSettings:
    """Rule merge's settings of split ``name``."""
    return MergeSettings(name, split["expected_images"], split["allow_skipped"])


def encode_shard_params(split: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    """Rule encode_shard's params (``EncodeShardSettings``) of the checked split config ``split``; with
    ``merge: false``, ``encode`` also says that the part holds every record (``EVERY_RECORD``)."""
    every = {} if config.get("merge", True) else {EVERY_RECORD: True}
    return {"shards": split["shards"], "encode": encode_param(config) | every}


#: Rule encode_shard's ``encode`` param's entry (merge: false only, so that a run with a merge has the
#: params it had): the part holds every stored image, numbered from 0, as a data file's records.
EVERY_RECORD = "every_record"


def write_meta_params(config: dict[str, Any]) -> dict[str, Any]:
    """Rule write_meta's params (``WriteMetaSettings``)."""
    return {"encode": encode_param(config)}


def verify_params(config: dict[str, Any]) -> dict[str, Any]:
    """Rule verify's params (``VerifySettings``): the checked config's verify section."""
    verify = config["verify"]
    return {"sample": verify["sample"], "all": verify["all"], "seed": verify["seed"]}


def encode_param(config: dict[str, Any]) -> dict[str, Any]:
    """The checked config's encode section as rules encode_shard and write_meta take it: in the
    config's own key order (the keys given first, then the defaults), which is how earlier versions
    gave it: Snakemake compares the param's repr, and another order would encode every shard again."""
    return dict(config["encode"])
