"""What the tests and the benchmarks share: data builders and helpers, no tests.

The tests import the workflow's modules as the rules do, from the installed package
``imagefolder_lmdb`` (``make test`` installs the checkout editable). Tests find this package as
``support`` because pytest puts tests/ on the path (rootdir conftest); the benchmarks, run as
``python -m benchmarks.run`` from the checkout, import it as ``tests.support``: its modules import
each other relatively, so both names work.

- ``support.images``: generated images: ImageNet-like ImageFolder trees (``make_images``, from
  benchmarks/make_images.py, the demo's generator), the test tree's size, single JPEG/PNG values.
- ``support.odd_images``: a tree of images of many sizes, aspect ratios, formats and modes (EXIF-
  rotated, MPO, one pixel wide, ...) for the resizing settings.
- ``support.archives``: tar, tar.gz and zip makers, members of any kind, hostile archives, zips as
  other tools write them.
- ``support.ilsvrc``: ILSVRC2012-structured archives: a tar of class tars, the flat val tar, a devkit.
- ``support.kaggle``: Kaggle's ImageNet zip with its folder names and CSVs (and the same unzipped).
- ``support.legacy``: folder2lmdb files (pickled values), hostile pickles among them.
- ``support.workflow``: the snakemake CLI on this repository's workflow: write a config, run it,
  convert a tree, start a run held at a hook point and kill it.
- ``support.datasets``: reading results back: every key and value, records and meta compared,
  record locations checked against LMDB.
- ``support.commands``: the repository's other commands (scripts/ CLIs, linters) run as a user would.
- ``support.readme``: README.md and docs/*.md as the tests read them: runnable blocks, sections,
  headings, links.
- ``support.config_reference``: docs/configuration.md's tables, generated from config/schema.yaml.
- ``support.settings``: settings as the schema's defaults make them (``encode_settings(quality=90)``).
- ``support.prose_names``: what a name in prose can name: each command's flags, Snakemake's, the
  names a module defines, the config schema's keys.
- ``support.package``: the working tree as a commit holds it, the wheel pip builds from it, a fresh
  venv to install it into.
- ``support.emulators``: Azurite and fake-gcs-server on free loopback ports, for the gs:// and az://
  tests; containers, buckets and objects made with plain HTTP requests.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: The venv's bin folder: snakemake, ruff and snakefmt of the interpreter running this, or of the
#: venv IMAGEFOLDER_LMDB_WORKFLOW_BIN names (tests/workflow/test_floors.py runs the reader's tests
#: in a venv of the requirements' floors, and converts as a user would, in the workflow's own venv).
BIN = Path(os.environ.get("IMAGEFOLDER_LMDB_WORKFLOW_BIN") or Path(sys.executable).parent)
