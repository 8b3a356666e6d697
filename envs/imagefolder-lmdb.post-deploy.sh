#!/usr/bin/env bash
# Snakemake runs this once in the env it has just created (--use-conda): the package the rules import,
# installed editable from the checkout whose workflow runs (rules/common.smk names it).
set -euo pipefail
python -m pip install --no-deps -e "${IMAGEFOLDER_LMDB_CHECKOUT:?set by rules/common.smk}"
