"""Run by the Hugging Face reference venv's Python (``.venv/hf``, requirements-hf.txt), never imported
by the suite: ``datasets.load_dataset("imagefolder", data_dir=DATA_DIR)`` offline, with the cache
under HF_HOME, each split's rows printed as JSON, every row with its image's path (``image_path``),
the image not decoded. ``datasets`` (and the pandas it brings) stays out of the project's venv, where
Snakemake would import pandas at every start.

    .venv/hf/bin/python -I tests/support/hf_imagefolder.py DATA_DIR   (-I: not this folder, whose datasets.py is ours)
"""

import json
import os
import sys

import datasets

datasets.disable_progress_bars()
loaded = datasets.load_dataset(
    "imagefolder", data_dir=sys.argv[1], cache_dir=os.path.join(os.environ["HF_HOME"], "cache")
)
rows = {}
for split, part in loaded.items():
    part = part.cast_column("image", datasets.Image(decode=False))
    rows[split] = [{"image_path": row.pop("image")["path"], **row} for row in part]
json.dump(rows, sys.stdout)
