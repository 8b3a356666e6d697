# How jobs are sized and placed, on a cluster and locally alike. Each rule's memory and time live in
# its own `resources:` (and nowhere else: profiles/slurm holds no per-rule figure), as first-attempt
# figures that grow with each retry, so a job killed for memory or time gets more the next time.
#
# The figures are sized for a split of up to ~1.3M images (ImageNet train); mem_mb in MB, runtime
# in minutes. A SLURM job's memory is the rule's script plus the two Snakemake processes of the job
# step (~0.3 GB); an array task has one more (plugin 2.8.0 runs each task's own Snakemake under one
# acting as task 1: ~0.2 GB more, measured on the test cluster, which is why encode_shard asks 1.5 GB).
# Peaks were measured with tests/cluster/measure_peak_rss.py on a tar of class tars
# (ImageNet's train layout) at 100k and 300k images and extrapolated to 1.28M images, job step
# included (the "~" figure beside each rule's request). Requests leave at least 2.5x room over them.
# A local run applies them only when given `--resources mem_mb=N`: jobs then run side by side while
# their requests fit in N (a request over N is lowered to N, so a small machine still runs them).


def per_attempt(first: int):
    """A resource callable: ``first`` for attempt 1, twice that for the first retry, and so on."""
    return lambda wildcards, attempt: first * attempt


# Run in the controller's own process, not through the queue. `all` does nothing; report_split is a
# few seconds of plotting (~0.35 GB). count_check (~1.4 GB, lists every image), write_meta (reads
# the whole manifest) and verify (verify.all decodes every image) are real work: they stay jobs.
localrules:
    all,
    report_split,


# profiles/slurm submits a split's shards as one SLURM job array (`slurm-array-jobs`). Plugin
# 2.8.0 silently drops a batch of ready array jobs that is smaller than the rest of the rule's
# ready jobs (https://github.com/snakemake/snakemake-executor-plugin-slurm/issues/473): those jobs
# never run and the run waits for them forever. That happens when the free job slots (--jobs, and
# the --max-jobs-per-timespan rate) cannot take a split's shards, which become ready together;
# short of a hang, such shards would go as several arrays (seen on the test cluster: --jobs 2 and 5
# shards, nothing submitted after count_check). This check refuses such a run up front.
ARRAY_RULE = "encode_shard"


def array_slots_needed(dag) -> int:
    """Job slots a run may need at once: a split's shards start together while every other
    split runs its own shards or one other job."""
    shards: dict[str, int] = {}
    for job in dag.needrun_jobs():
        split = job.wildcards_dict.get("split")
        if split is not None:  # rule all has none
            shards[split] = shards.get(split, 0) + (job.rule.name == ARRAY_RULE)
    return sum(max(count, 1) for count in shards.values())


def slots_available(workflow) -> tuple[int, str]:
    """The fewest jobs Snakemake may start at once: --jobs and the per-timespan rate."""
    limits = [(workflow.nodes, f"--jobs {workflow.nodes}")]
    rate = workflow.scheduling_settings.max_jobs_per_timespan
    if rate is not None:
        limits.append((rate.max_jobs, f"--max-jobs-per-timespan {rate.max_jobs}/..."))
    return min(limits)


def array_rules(settings) -> set[str]:
    """The rules given to --slurm-array-jobs (comma- or semicolon-separated, as the plugin reads them)."""
    selected = getattr(settings, "array_jobs", None) or ""
    return {name.strip() for name in selected.replace(";", ",").split(",")}


def check_array_slots(workflow) -> None:
    """Fail early, naming the fix, where the SLURM plugin would hang on the shards' array."""
    plugin = workflow.executor_plugin
    if plugin is None or plugin.name != "slurm" or workflow.nodes is None:
        return
    if not {ARRAY_RULE, "all"} & array_rules(workflow.executor_settings):
        return
    needed = array_slots_needed(workflow.dag)
    available, limit = slots_available(workflow)
    if needed > available:
        raise WorkflowError(
            f"The shards still to encode (config keys splits.<name>.shards), submitted as one "
            f"SLURM job array per split, need {needed} job slots at once, but {limit} allows "
            f"{available}: snakemake-executor-plugin-slurm 2.8.0 would leave shards it cannot "
            f"submit together unsubmitted, and the run would hang. Raise --jobs (profiles/slurm "
            f"sets jobs: 64) to at least {needed}, or give fewer shards."
        )


onstart:
    check_array_slots(workflow)
