rule write_meta:
    """Store classes, labels, paths, sizes and checksums; place the finished file."""
    input:
        merged=PATHS.merged(),
        manifest=PATHS.manifest(),
        counts=PATHS.counts(),
        reports=part_files(PATHS.part_report()),
        made_from=made_from_file,
    output:
        PATHS.dataset(),
    log:
        PATHS.log("write_meta"),
    benchmark:
        PATHS.benchmark("write_meta")
    conda:
        "../envs/imagefolder-lmdb.yaml"
    threads: 1
    # memory and time per attempt (rules/cluster.smk); peak for ImageNet train: the manifest and the
    # shard reports, ~0.5 KB per image (~1.0 GB)
    resources:
        mem_mb=per_attempt(4000),
        runtime=per_attempt(60),
    params:
        encode=step_param(write_meta_params, "encode"),
    script:
        "../scripts/write_meta.py"
