# merge: false (--no-merge, issue 60): each shard's job writes a complete data file of the split;
# rules/write_pointer.smk writes the split as a pointer over them.


rule data_file:
    """One shard's part (every record, merge: false) with its meta and record locations: a data file of the split."""
    input:
        part=PATHS.part(),
        report=PATHS.part_report(),
        manifest=PATHS.manifest(),
        counts=PATHS.counts(),
        made_from=made_from_file,
    output:
        temp(PATHS.data_file()),
    log:
        PATHS.log("data_file", shard=SHARD),
    benchmark:
        PATHS.benchmark("data_file", shard=SHARD)
    conda:
        "../envs/imagefolder-lmdb.yaml"
    threads: 1
    # memory and time per attempt (rules/cluster.smk); peak for an ImageNet train shard: its rows of
    # the manifest and its report (~0.1 GB); no record is copied (a hard link of the part)
    resources:
        mem_mb=per_attempt(1500),
        runtime=per_attempt(60),
    params:
        encode=step_param(write_meta_params, "encode"),
    script:
        "../scripts/data_file.py"
