"""Rule verify: the finished file checked with the reader (verify/command.py ``verify``), its report
and contact sheet written; the run stops on a problem. ``main`` is the ``verify`` command
(verify/command.py), named here too for scripts/verify.py, whose text stays as it is.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from functools import partial
from typing import TYPE_CHECKING, Any, TextIO

from imagefolder_lmdb.board.rule_runner import run_rule
from imagefolder_lmdb.verify.command import main, summary_line, verify, write_report
from imagefolder_lmdb.verify.contact_sheet import contact_sheet
from imagefolder_lmdb.writing.hold_points import hold_point

if TYPE_CHECKING:
    from imagefolder_lmdb.config.step_settings import VerifySettings
    from imagefolder_lmdb.reader import LMDBReader

__all__ = ["main", "rule_main", "run_in_rule"]
log = logging.getLogger("imagefolder_lmdb.verify")


def rule_main(smk: Any, stream: TextIO) -> None:
    from imagefolder_lmdb.config.step_settings import VerifySettings  # the workflow's (PyYAML): not the command's

    settings = VerifySettings.from_params(smk.params)
    report, ds, indices = verify_dataset(smk.input[0], settings, merged=smk.config.get("merge", True))
    log.info("%s", json.dumps(report, indent=1))
    if not os.environ.get("IMAGEFOLDER_LMDB_MESSAGES"):  # under the progress board, the summary says it
        print(summary_line(report), file=sys.__stderr__, flush=True)
    if not report["ok"]:
        raise RuntimeError("verification failed:\n  " + "\n  ".join(report["problems"]))
    write_report(report, smk.output.report)
    hold_point("verify")  # one output written, the other not yet
    contact_sheet(ds, indices, smk.output.contact)
    hold_point("verified")  # both outputs written, report_split not yet


def verify_dataset(
    path: str, settings: VerifySettings, merged: bool
) -> tuple[dict[str, Any], LMDBReader | None, list[int]]:
    """The rule's check of the dataset at ``path`` (``settings``: its VerifySettings): as the ``verify`` command
    checks it, but that a split of data files made without a merge (``merged`` False) opens none of them as a
    file again: each encode job checked the data file it made (steps/data_file.py)."""
    from imagefolder_lmdb.verify.revisions import is_split_of_revisions, verify_revisions

    if not merged and is_split_of_revisions(path):
        return verify_revisions(path, settings.sample, settings.all, settings.seed, first_files_checked=True)
    return verify(path, settings.sample, settings.all, settings.seed)


#: What the rule's script (scripts/verify.py) calls with ``snakemake``: ``rule_main`` with the rule's log set up.
run_in_rule = partial(run_rule, rule_main)


if __name__ == "__main__":
    sys.exit(main())
