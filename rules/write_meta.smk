rule write_meta:
    """Store classes, labels, paths, sizes and checksums; place the finished file."""
    input:
        merged=PATHS.merged(),
        manifest=PATHS.manifest(),
        counts=PATHS.counts(),
        reports=part_files(PATHS.part_report()),
    output:
        PATHS.dataset(),
    log:
        PATHS.log("write_meta"),
    benchmark:
        PATHS.benchmark("write_meta")
    conda:
        "../envs/imagefolder-lmdb.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        encode=encode_settings(),
    script:
        "../scripts/write_meta.py"
