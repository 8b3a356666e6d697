# SPDX-License-Identifier: MIT
"""``imagefolder-lmdb init-config NAME``: print one of the shipped, commented configs (the wheel
holds them under imagefolder_lmdb/workflow/config/), to save, edit and run with
``imagefolder-lmdb convert --configfile FILE``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

#: Each name and its file in config/.
CONFIGS = {
    "folder": "folder.yaml",
    "imagenet": "imagenet.yaml",
    "kaggle": "imagenet-kaggle.yaml",
    "wds": "imagenet-wds.yaml",
    "parquet": "imagenet-parquet.yaml",
}
WHAT = {
    "folder": "an ImageFolder tree of your own (train/ and val/)",
    "imagenet": "the ILSVRC2012 downloads: train tar, val tar, devkit",
    "kaggle": "Kaggle's imagenet-object-localization-challenge.zip",
    "wds": "ImageNet as WebDataset tar shards",
    "parquet": "ImageNet as Parquet files (the Hugging Face hub's)",
}


def config_text(name: str) -> str:
    from imagefolder_lmdb.convert import WORKFLOW

    return (WORKFLOW / "config" / CONFIGS[name]).read_text(encoding="utf-8")


def main(argv: Sequence[str] | None = None, prog: str = "imagefolder-lmdb init-config") -> int:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Print a commented config to start from: save it, set the paths, and run it with "
        "imagefolder-lmdb convert --configfile FILE.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n".join(f"  {name:<9} {WHAT[name]}" for name in CONFIGS),
    )
    parser.add_argument("name", nargs="?", choices=list(CONFIGS), metavar="NAME", help=", ".join(CONFIGS))
    args = parser.parse_args(argv)
    if args.name is None:  # the choices, with what each is for, rather than "required: NAME"
        parser.error("give NAME, one of:\n" + "\n".join(f"  {name:<9} {WHAT[name]}" for name in CONFIGS))
    sys.stdout.write(config_text(args.name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
