"""Rule extract: make a split's source readable by the shards, writing as little as possible.

Which kind of source it is, and what making it readable means for that kind, is src/imagefolder_lmdb/sources/
(a folder is used in place, a plain tar or zip is indexed and read in place, anything else is
unpacked). This rule checks the official md5 sums when asked, builds the output folder under a
temporary name, and renames it into place when whole. (The rule keeps the name ``extract`` that
logs, benchmark records, cluster resources and ``--forcerun extract`` use, though it unpacks only
compressed archives, or on request.)
"""

import logging
import os
import sys
from collections.abc import Mapping
from dataclasses import replace
from functools import partial
from typing import Any, TextIO

from imagefolder_lmdb.board.rule_runner import progress_kwargs, run_rule
from imagefolder_lmdb.config.step_settings import ExtractSettings
from imagefolder_lmdb.sources import claiming_source, work_file_options
from imagefolder_lmdb.sources.base import Request
from imagefolder_lmdb.sources.ilsvrc import check_official_md5
from imagefolder_lmdb.sources.labellings import copy_labels_member
from imagefolder_lmdb.work.files import SourceDescription, write_source_description
from imagefolder_lmdb.writing.atomic import publish, remove_path, temporary_path
from imagefolder_lmdb.writing.hold_points import hold_point

log = logging.getLogger("imagefolder_lmdb.extract")


def make_source_readable(
    request: Request, output: str, labelling: Mapping[str, Any] | None = None
) -> SourceDescription:
    """Build ``output`` under a temporary name and rename it into place when whole. ``request``:
    the split's source, layout and classes (``ExtractSettings.request``). ``labelling``:
    what the split's labelling copies out of the source for count_check (a label file inside the
    archive: ``ExtractSettings.labelling``)."""
    source = request.source
    building = temporary_path(output)
    remove_path(building)
    os.makedirs(building)
    description = claiming_source(request).prepare(request, building, output)
    description.labelling = copy_labels_member(source, labelling or {}, building, output)
    description.options = work_file_options(description.options)
    write_source_description(building, description)
    hold_point("extract")
    remove_path(output)
    publish(building, output)
    return description


def check_checksums(paths: list[str], progress: dict[str, Any]) -> None:
    for path in paths:
        outcome = check_official_md5(path, progress)
        log.info("%s", outcome)
        if "not checked" in outcome:  # md5: true was asked for: say so where the user looks
            print(f"WARNING: {outcome}", file=sys.__stderr__, flush=True)


def main(smk: Any, stream: TextIO) -> None:
    settings = ExtractSettings.from_params(smk.params)
    progress = progress_kwargs(stream)
    if settings.md5:
        check_checksums([*smk.input.source, *smk.input.labels], progress)
    # the rule's threads: the processes that list an archive's class tars (sources/class_tar_index.py)
    request = replace(settings.request(list(smk.input.source), progress), workers=max(1, int(smk.threads)))
    make_source_readable(request, smk.output[0], settings.labelling)


#: What the rule's script (scripts/extract.py) calls with ``snakemake``: ``main`` with the rule's log set up.
run_in_rule = partial(run_rule, main)
