"""Rule verify's script, and the command that checks a finished dataset with the reader:

    python scripts/verify.py results/train.lmdb [--full] [--sample 64] [--report r.json] [--contact c.png]
    imagefolder-lmdb verify results/train.lmdb [...]      (the same, installed with pip)

The work is imagefolder_lmdb.steps.verify (src/imagefolder_lmdb/steps/verify.py).
"""

import sys

from imagefolder_lmdb.steps.verify import main, run_in_rule

if __name__ == "__main__":
    if "snakemake" in globals():
        run_in_rule(snakemake)  # type: ignore[name-defined]  # noqa: F821
    else:
        from imagefolder_lmdb.remote.leaving import leave_if_started

        sys.exit(leave_if_started(main()))  # a URL checked: never through obstore's runtime teardown
