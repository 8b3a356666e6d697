# The config's checks (src/imagefolder_lmdb/config/check.py), every file's path
# (src/imagefolder_lmdb/work/paths.py) and the input functions the rule files use. Stale locks and
# leftovers of killed runs: rules/resume.smk.
import os
import sys
import time

from snakemake.utils import min_version

from imagefolder_lmdb.config.check import check_config
from imagefolder_lmdb.config.schema import load_schema
from imagefolder_lmdb.config import step_settings
from imagefolder_lmdb.run.scheduler_timers import cancel_scheduler_timers
from imagefolder_lmdb.run.made_from import (
    changed_lines,
    dry_run,
    write_made_from,
    recorded_by_caller,
    split_verdicts,
)
from imagefolder_lmdb.reader.revision_format import data_folder
from imagefolder_lmdb.run.change import settled_splits, workflow_changes
from imagefolder_lmdb.work.paths import SHARD, RunPaths
from imagefolder_lmdb.board.progress import register as register_progress
from imagefolder_lmdb.board.progress import stop_board
from imagefolder_lmdb.board.rule_table import TIMED_RULES
from imagefolder_lmdb.sources import input_files
from imagefolder_lmdb.sources.labellings import (
    label_inputs,
    listing_label_inputs,
)
from imagefolder_lmdb.work.files import shard_name

min_version("9.0")

#: The checkout, for envs/imagefolder-lmdb.post-deploy.sh (--use-conda installs its package): this
#: file's own folder's parent, not workflow.basedir, which inside a host's `module` is the host's.
os.environ.setdefault(
    "IMAGEFOLDER_LMDB_CHECKOUT",
    os.path.dirname(os.path.realpath(str(workflow.current_basedir))),
)

RUN_STARTED = time.time()

# Every check of the config, before any job (src/imagefolder_lmdb/config/check.py): the schema's
# defaults filled in, and every problem reported at once, one line each. `snakemake --lint` reads
# the rules, not the data, and Snakemake tells a Snakefile nothing of it but its command line:
# there, sources that do not exist yet are no error.
CHECKED = check_config(
    config,
    load_schema(str(workflow.source_path("../config/schema.yaml"))),
    workflow.configfiles,
    paths_may_be_missing="--lint" in sys.argv,
    # a folder's label files, read against its images once: not by a cluster job parsing this file
    # again, nor after the command line conversion that started this run read them
    read_labels=workflow.is_main_process
    and "--lint" not in sys.argv
    and not recorded_by_caller(config),
)
#: Which class list each split uses (src/imagefolder_lmdb/classes/plan.py).
CLASS_PLAN = CHECKED.classes
PATHS = RunPaths(
    config["results"], config["work"]
)  # every file's path: src/imagefolder_lmdb/work/paths.py
SPLITS = list(config["splits"])
# Each split's made_from.json, judged against its dataset once, in the main process, before the DAG is
# built: Snakemake then runs what a change in the source or the settings needs, whatever of the work
# folder is left (src/imagefolder_lmdb/run/made_from.py). Cluster job steps parse this file again.
DRY_RUN = dry_run(sys.argv)  # a dry run writes nothing: it says what changed
if (
    workflow.is_main_process
    and "--lint" not in sys.argv
    and not recorded_by_caller(config)
):
    if DRY_RUN:
        for line in changed_lines(split_verdicts(config, CLASS_PLAN)):
            print(line, file=sys.stderr)
    else:
        # a split whose images or labels changed: its next revision, written here (run/change.py)
        VERDICTS = split_verdicts(config, CLASS_PLAN)
        for line in workflow_changes(config, VERDICTS, CLASS_PLAN):
            print(line, file=sys.stderr)
        write_made_from(config, VERDICTS)
# the splits the progress board shows (src/imagefolder_lmdb/board/progress.py)
register_progress(PATHS, SPLITS)


wildcard_constraints:
    split="|".join(SPLITS),
    shard=r"\d{5}",


def split_config(wildcards) -> dict:
    return config["splits"][wildcards.split]


def shard_ids(split: str) -> list[str]:
    return [shard_name(k) for k in range(config["splits"][split]["shards"])]


def part_files(pattern: str):
    """Input function: ``pattern`` expanded over every shard of the wildcard's split."""

    def files(wildcards) -> list[str]:
        return expand(pattern, split=wildcards.split, shard=shard_ids(wildcards.split))

    return files


def shard_stamp(wildcards) -> str:
    """Rule encode_shard's stamp, written by checkpoint count_check (src/imagefolder_lmdb/work/shard_stamps.py)."""
    checkpoints.count_check.get(split=wildcards.split)
    return PATHS.shard_stamp(wildcards.split, wildcards.shard)


def folder_stamp(wildcards) -> str | None:
    """Rule extract's param that changes when a folder source's class folders gain or lose
    files (see src/imagefolder_lmdb/work/folder_listing.py); None for an archive, whose own time shows a change.
    """
    split = split_config(wildcards)
    source = split["source"]
    if not isinstance(source, str) or not os.path.isdir(source):
        return None
    from imagefolder_lmdb.sources.tree import folder_inside

    from imagefolder_lmdb.work.folder_listing import listing_stamp

    folder = folder_inside(source, split["root"])
    if not os.path.isdir(folder):
        return None  # extract stops, naming the folders there are

    return listing_stamp(folder)


def source_files(wildcards) -> list[str]:
    """Rule extract's input, as the split's kind of source names it (sources.input_files): the
    folder or archive, or every file of a set of source files (webdataset, parquet)."""
    return input_files(split_config(wildcards))


# Each rule's params: its split's settings (src/imagefolder_lmdb/config/step_settings.py), made from
# the checked config as plain data; the rule's step reads them back as one typed object.


def extract_settings(wildcards) -> dict:
    """Rule extract's one param: the split's ExtractSettings, with the class list it shares (only
    those classes are read) and its folder's stamp.
    """
    split = split_config(wildcards)
    wanted = CLASS_PLAN.wanted(wildcards.split)
    return step_settings.extract_settings(
        split,
        wanted=None if wanted is None else list(wanted),
        folder_stamp=folder_stamp(wildcards),
    ).as_param()


def count_settings(wildcards) -> dict:
    """Rule count_check's one param: the split's CountSettings, with where its class list comes from."""
    class_list = CLASS_PLAN.source(wildcards.split).as_param()
    return step_settings.count_settings(
        wildcards.split, split_config(wildcards), class_list=class_list
    ).as_param()


def merge_settings(wildcards) -> dict:
    """Rule merge's one param: the split's MergeSettings."""
    return step_settings.merge_settings(
        wildcards.split, split_config(wildcards)
    ).as_param()


def encode_shard_params(wildcards) -> dict:
    """Rule encode_shard's params: the split's EncodeShardSettings."""
    return step_settings.encode_shard_params(split_config(wildcards), config)


def write_meta_params(wildcards) -> dict:
    """Rule write_meta's params: its WriteMetaSettings."""
    return step_settings.write_meta_params(config)


def verify_params(wildcards) -> dict:
    """Rule verify's params: its VerifySettings."""
    return step_settings.verify_params(config)


def step_param(params, name: str):
    """Input function: the param ``name`` of those ``params(wildcards)`` makes."""
    return lambda wildcards: params(wildcards)[name]


def made_from_file(wildcards) -> list[str]:
    """Rules extract's, count_check's and write_meta's input (merge: false: encode_shard's): the split's
    made_from.json (src/imagefolder_lmdb/run/made_from.py), which a dry run does not write.
    """
    path = PATHS.made_from(wildcards.split)
    return [] if DRY_RUN and not os.path.exists(path) else [path]


def no_merge_only(item):
    """Rule encode_shard's input or output ``item`` with merge: false (its data file, and what the data
    file's meta records); nothing with a merge, so that its files and params stay as they were.
    """
    return [] if config["merge"] else item


def encode_part():
    """Rule encode_shard's part: kept with keep_parts, else a temp() the merge reads. With merge: false
    none: the job removes the part it wrote once its data file is made. A temp() that no job reads is
    deleted as soon as its job ends, and on SLURM an array's every task waits for task 1's outputs too
    (docs/cluster.md, plugin issue #447): the others would wait for a part already deleted.
    """
    if not config["merge"]:
        return []
    return PATHS.part() if config["keep_parts"] else temp(PATHS.part())


def shared_class_manifest(wildcards) -> list[str]:
    """The first split's manifest, whose classes a later sharing split takes (none otherwise)."""
    first = CLASS_PLAN.shared_from(wildcards.split)
    return [PATHS.manifest(first)] if first else []


def label_files(wildcards) -> list[str]:
    """Rule extract's label files, as the split's labelling names them (a devkit, a label CSV; not
    one inside the source archive): src/imagefolder_lmdb/sources/labellings.py."""
    return label_inputs(split_config(wildcards))


def listing_label_files(wildcards) -> list[str]:
    """Rule count_check's label files, as the split's labelling names them (extract's, and a label
    file of its own)."""
    return listing_label_inputs(split_config(wildcards))


def final_outputs() -> list[str]:
    """Rule all's targets: every split's outputs, but those of a split of revisions that is up to date.
    Snakemake would run its jobs again for a param that changed with the source (the folder stamp) and
    delete the pointer first: a change is written before the DAG (run/change.py), never by a job. Such a
    split stands for itself by its data folder, which no rule makes; with every split settled, rule all
    still has an input, and Snakemake says "Nothing to be done" instead of running it.
    """
    settled = settled_splits(config)
    return [
        path
        for split in SPLITS
        for path in (
            [data_folder(PATHS.dataset(split))]
            if split in settled
            else PATHS.final_outputs(split)
        )
    ]


def benchmark_files(wildcards) -> list[str]:
    """Snakemake's benchmark record of every job of a split (the report tabulates them), for each
    timed entry of board/rule_table.py (one per split, or one per shard)."""
    per_split = [
        PATHS.benchmark(rule.name, wildcards.split)
        for rule in TIMED_RULES
        if not rule.per_shard and rule.runs(config["merge"])
    ]
    per_shard = [
        part_files(PATHS.benchmark(rule.name, shard=SHARD))(wildcards)
        for rule in TIMED_RULES
        if rule.per_shard and rule.runs(config["merge"])
    ]
    return per_split + [path for paths in per_shard for path in paths]


def print_summary(config: dict) -> None:
    """After a successful run: per split, what was stored and where the outputs are."""
    from imagefolder_lmdb.board.summary import summary_lines

    stop_board()  # its final state first: no redraw lands after the summary
    for line in summary_lines(config, time.time() - RUN_STARTED):
        print(line)
