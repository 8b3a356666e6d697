# merge: false (--no-merge, issue 60): rules/encode_shard.smk's jobs each write a complete data file of
# the split, and this small step writes the split as a pointer over them (docs/FORMAT.md, a split of
# revisions). Both rules can make the split's file, as merge + write_meta can: ruleorder picks by config["merge"].


if config["merge"]:

    ruleorder: write_meta > write_pointer

else:

    ruleorder: write_pointer > write_meta


rule write_pointer:
    """The split as revision 1 of a pointer over its shards' data files; reads only their meta."""
    input:
        files=part_files(PATHS.data_file()),
        manifest=PATHS.manifest(),
    output:
        PATHS.dataset(),
    log:
        PATHS.log("write_pointer"),
    benchmark:
        PATHS.benchmark("write_pointer")
    conda:
        "../envs/imagefolder-lmdb.yaml"
    threads: 1
    # memory and time per attempt (rules/cluster.smk): each data file's meta, one at a time, and one
    # order and label entry per image (~0.6 GB for ImageNet train)
    resources:
        mem_mb=per_attempt(2000),
        runtime=per_attempt(30),
    params:
        settings=merge_settings,
    script:
        "../scripts/write_pointer.py"
