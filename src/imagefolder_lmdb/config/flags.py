# SPDX-License-Identifier: MIT
"""Every option of ``imagefolder-lmdb convert``, declared once: ``CONVERT_FLAGS``. The parser
(cli.py ``convert_parser``), the setting flags' config keys (config/settings.py ``FLAG_KEYS``) and the
flags refused beside ``--configfile``, those marked ``source_outdir`` (cli.py
``refuse_settings_with_configfile``), are all read from it, so a new flag is one row here
(tests/unit/test_convert_flags.py checks the parser against the table).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from imagefolder_lmdb.config.problems import KeyPath
from imagefolder_lmdb.config.shards import RULE_WORDS


@dataclass(frozen=True, kw_only=True)
class Flag:
    """One option of ``convert``: its name, what argparse needs, and what it sets."""

    name: str  # "--quality"
    help: str  # "{layouts}": the config schema's layouts, filled in where the parser is made
    key: KeyPath | None = None  # the config key it sets ("*": every split); None: read by the command itself
    metavar: str | None = None
    type: Callable[[str], Any] | None = None
    choices: Sequence[str] | None = None
    action: str | None = None  # "store_true", "store_const" (const True: unset stays None), "append"
    nargs: str | None = None  # "?": the value may be left out, ``const`` then given
    const: Any = None  # nargs "?": the value so given; action "store_const": what it stores (None: True)
    default: str | None = None
    layout_choices: bool = False  # its choices are the config schema's layouts (the schema is the workflow's file)
    setting: bool = False  # listed in --help under "settings (the config's keys, without a config file)"
    source_outdir: bool = False  # shapes a SOURCE OUTDIR conversion: refused beside --configfile

    @property
    def dest(self) -> str:
        """Its attribute on argparse's namespace: ``--short-side`` -> ``short_side``."""
        return self.name.lstrip("-").replace("-", "_")

    def argparse_options(self, layouts: Sequence[str] | None) -> dict[str, Any]:
        """The keywords of ``add_argument`` for this flag (``layouts``: the schema's, or None without PyYAML)."""
        options: dict[str, Any] = {"help": self.help.replace("{layouts}", ", ".join(layouts or ["see the schema"]))}
        if self.layout_choices:
            options["choices"] = layouts
        for name in ("metavar", "type", "choices", "action", "default", "nargs", "const"):
            if getattr(self, name) is not None:
                options[name] = getattr(self, name)
        if self.action == "store_const":
            options["const"] = True if self.const is None else self.const
        if self.action == "append":
            options["default"] = []  # a fresh list per parser
        return options


def setting_flag(name: str, help: str, **fields: Any) -> Flag:
    """A flag of the "settings" group: each shapes a SOURCE OUTDIR conversion."""
    return Flag(name=name, help=help, setting=True, source_outdir=True, **fields)


#: The options of ``convert``, in the order ``--help`` lists them (the settings in their own group).
CONVERT_FLAGS: tuple[Flag, ...] = (
    Flag(
        name="--split",
        metavar="NAME",
        help="SOURCE is this one split (train); without it, SOURCE's train/, val/, test/",
        source_outdir=True,
    ),
    Flag(
        name="--splits",
        metavar="A,B",
        help="the split folders of SOURCE to convert (train,val,test)",
        source_outdir=True,
    ),
    Flag(
        name="--layout",
        default="imagefolder",
        layout_choices=True,
        metavar="LAYOUT",
        help="how SOURCE is organised: {layouts} (imagefolder); "
        "ilsvrc-val needs its labels: --set val_labels=FILE or --set devkit=FILE",
    ),
    Flag(
        name="--shards",
        type=int,
        metavar="N",
        help=f"encode jobs each split is cut into (default: {RULE_WORDS})",
        key=("splits", "*", "shards"),
        source_outdir=True,
    ),
    setting_flag(
        "--quality", "JPEG quality of re-encoded images (95)", type=int, metavar="Q", key=("encode", "quality")
    ),
    setting_flag(
        "--short-side",
        "shrink images to this shorter side (none)",
        type=int,
        metavar="PX",
        key=("encode", "short_side"),
    ),
    setting_flag(
        "--on-error", "a broken image: fail, or skip and list it", choices=("fail", "skip"), key=("encode", "on_error")
    ),
    setting_flag(
        "--classes", "the classes: FILE (one per line), imagenet1k, or a,b,c", metavar="LIST", key=("classes",)
    ),
    setting_flag(
        "--root", "the folder inside SOURCE to read (e.g. an archive's)", metavar="PATH", key=("splits", "*", "root")
    ),
    setting_flag(
        "--expected-images",
        "fail unless the split has N images",
        type=int,
        metavar="N",
        key=("splits", "*", "expected_images"),
    ),
    setting_flag(
        "--extensions",
        "the files to take, as DatasetFolder's extensions (ImageFolder's)",
        metavar="EXT,EXT",
        key=("splits", "*", "extensions"),
    ),
    setting_flag(
        "--allow-empty",
        "keep class folders without images, as ImageFolder's",
        action="store_const",
        key=("splits", "*", "allow_empty"),
    ),
    setting_flag(
        "--is-valid-file",
        "take the files this function accepts, as ImageFolder's",
        metavar="MODULE:FUNCTION",
        key=("splits", "*", "is_valid_file"),
    ),
    setting_flag(
        "--labels",
        "each image's label(s) from FILE (.csv/.jsonl/.parquet), or metadata: Hugging Face's metadata "
        "files in SOURCE; folder names are then no labels. With several splits, FILE labels the split "
        "whose folder holds it or that it lies beside and is named after (train.csv beside train/); "
        "SPLIT=FILE names it (once per split)",
        metavar="[SPLIT=]FILE|metadata",
        action="append",
        key=("splits", "*", "labels"),
    ),
    setting_flag(
        "--unlabelled",
        "these splits have no labels (a competition's test/): each target -1, the other splits' classes; "
        "alone, every split no --labels labels",
        metavar="SPLIT,SPLIT",
        nargs="?",
        const="*",
        key=("splits", "*", "labels"),
    ),
    setting_flag(
        "--file-column",
        "the label file's column naming each image (file_name, else id)",
        metavar="NAME",
        key=("splits", "*", "file_column"),
    ),
    setting_flag(
        "--label-column",
        "the label file's column of labels (label)",
        metavar="NAME",
        key=("splits", "*", "label_column"),
    ),
    setting_flag(
        "--label-separator",
        "cuts a CSV label cell into several labels per image (none: one label)",
        metavar="TEXT",
        key=("splits", "*", "label_separator"),
    ),
    setting_flag("--set", "any config key", action="append", metavar="KEY=VALUE"),
    setting_flag("--classes-from", "take the class list of this dataset", metavar="FILE.lmdb"),
    setting_flag("--overwrite", "replace datasets made from another source", action="store_true"),
    setting_flag("--clean", "remove the work folder after success", action="store_true"),
    setting_flag(
        "--keep-parts",
        "keep the shards' part LMDBs (the re-encoded images) so that a changed image re-encodes only its shard",
        action="store_const",
        key=("keep_parts",),
    ),
    setting_flag(
        "--no-merge",
        "write each split as its shards' data files and a pointer over them (a folder beside the split's "
        "name, no serial merge) instead of one file",
        action="store_const",
        const=False,
        key=("merge",),
    ),
    Flag(name="--work", metavar="FOLDER", help="work folder (OUTDIR/work; a URL's: ~/.cache/imagefolder-lmdb)"),
    Flag(name="--cores", metavar="N", help="CPU cores to use (all; with --profile, the profile's)"),
    Flag(
        name="--profile",
        metavar="PROFILE",
        help="slurm: submit every job to SLURM (the packaged profile); or your own",
    ),
    Flag(name="--configfile", metavar="FILE", help="a whole config instead of SOURCE OUTDIR (run from here)"),
    Flag(
        name="--verbose",
        action="store_true",
        help="Snakemake's own output, every job, instead of the progress board",
    ),
)

#: Each setting flag: its config key ("*": every split of the command).
FLAG_KEYS: dict[str, KeyPath] = {flag.name: flag.key for flag in CONVERT_FLAGS if flag.key is not None}
