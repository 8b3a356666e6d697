# What lets the same command resume after any kill: stale Snakemake locks cleared at start (only
# when no other controller runs here), and leftovers of killed jobs removed after success.
import fcntl
import glob
import shutil


def clear_stale_snakemake_locks():
    """Let the same command resume after a kill -9 or a power cut.

    Snakemake's lock is a plain file that a killed run leaves behind, and the next run then
    refuses to start. Every controller of this workflow holds an exclusive flock on a file in
    .snakemake/ while it lives; the kernel drops it when the process dies, however it dies. So
    whoever obtains it knows that no other controller is running here, and that any Snakemake
    lock present is stale. Whoever does not obtain it touches nothing: Snakemake's own lock then
    keeps two live runs apart.
    """
    if not workflow.is_main_process:  # cluster job steps run with --nolock
        return None
    os.makedirs(".snakemake", exist_ok=True)
    handle = open(".snakemake/imagefolder-lmdb.controller.lock", "w")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    if os.path.isdir(".snakemake/locks"):
        shutil.rmtree(".snakemake/locks")
    return handle


CONTROLLER_LOCK = clear_stale_snakemake_locks()  # held open until this process exits


def remove_leftovers(config: dict) -> None:
    """After success, delete what a killed run can leave behind and no later run would.

    temp() parts and merged files survive a SIGKILL that lands while Snakemake deletes them, and
    once their consumer is complete Snakemake never looks at them again; *.incomplete files are
    the temporaries of killed jobs. Only a run that is the sole controller here cleans up.
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
        stale = glob.glob(PATHS.part(split, "*")) + glob.glob(PATHS.merged(split))
        for path in [] if keep_temp else stale:
            if os.path.getmtime(path) <= finished:
                os.remove(path)
        for path in glob.glob(
            f"{PATHS.split_work(split)}/**/*.incomplete*", recursive=True
        ) + glob.glob(f"{PATHS.result_files(split)}.incomplete*"):
            shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
