# One conversion at a time into a results folder, and what lets the same command resume after any
# kill: stale Snakemake locks cleared at start, leftovers of killed jobs removed after success.
import glob
import shutil


def hold_results_lock():
    """One conversion at a time into a results folder, and let the same command resume after a kill.

    Every controller of this workflow holds an exclusive flock on {results}/.imagefolder-lmdb.lock
    while it lives; the kernel drops it when the process dies, however it dies. Whoever does not
    obtain it stops before any job: another run writes these outputs (with another work folder,
    Snakemake's own lock would not see it). Whoever obtains it knows that no other controller is
    running, so any Snakemake lock in the work folder is stale (a plain file that a kill -9 or a
    power cut leaves behind, which the next run would refuse to start on): it is removed.
    Started by ``convert``, it adopts the lock the command took before its first write (inherited).
    """
    # cluster job steps run with --nolock; a lint reads the rules, not the data
    if not workflow.is_main_process or "--lint" in sys.argv:
        return None
    from imagefolder_lmdb.run.lock import adopt_or_hold_lock, lock_path

    # a dry run writes nothing: the lock only where its file is there, no stale lock removed
    if DRY_RUN:
        exists = os.path.exists(lock_path(config["results"]))
        return adopt_or_hold_lock(config["results"]) if exists else None
    handle = adopt_or_hold_lock(config["results"])
    if os.path.isdir(".snakemake/locks"):
        shutil.rmtree(".snakemake/locks")
    return handle


CONTROLLER_LOCK = hold_results_lock()  # held open until this process exits


def remove_leftovers(config: dict) -> None:
    """After success, delete what a killed run can leave behind and no later run would.

    temp() merged files survive a SIGKILL that lands while Snakemake deletes them, and once their
    consumer is complete Snakemake never looks at them again; so do the parts of shards a config
    with fewer shards no longer has. *.incomplete files are the temporaries of killed jobs. Only a
    run that is the sole controller here cleans up.
    """
    if CONTROLLER_LOCK is None:
        return
    # --notemp: the user asked to keep temp() files
    keep_temp = workflow.storage_settings.notemp
    for split in SPLITS:
        final = PATHS.dataset(split)
        if not os.path.exists(final):
            continue
        finished = os.path.getmtime(final)
        for path in [] if keep_temp else glob.glob(PATHS.merged(split)):
            if os.path.getmtime(path) <= finished:
                os.remove(path)
        for path in parts_of_other_shards(split) + merged_parts(split, finished):
            os.remove(path)
        for path in glob.glob(
            f"{PATHS.split_work(split)}/**/*.incomplete*", recursive=True
        ) + glob.glob(f"{PATHS.result_files(split)}.incomplete*"):
            shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)


def merged_parts(split: str, finished: float) -> list[str]:
    """Without keep_parts, the part LMDBs the dataset was merged from: temp() files that a kill
    during Snakemake's own removal, or a run that did not need them, left behind."""
    if config["keep_parts"] or workflow.storage_settings.notemp:
        return []
    parts = glob.glob(PATHS.part(split, "*"))
    return [path for path in parts if os.path.getmtime(path) <= finished]


def parts_of_other_shards(split: str) -> list[str]:
    """Every file under parts/ of a shard the split's config does not have (now fewer shards)."""
    current = set(shard_ids(split))
    folder = os.path.dirname(PATHS.part(split))
    names = os.listdir(folder) if os.path.isdir(folder) else []
    return [
        os.path.join(folder, name)
        for name in names
        if name.split(".", 1)[0] not in current
    ]
