rule write_meta:
    """Store classes, labels, paths, sizes and checksums; place the finished file."""
    input:
        merged=f"{WORK}/{{split}}/merged.lmdb",
        manifest=f"{WORK}/{{split}}/manifest.jsonl",
        counts=f"{WORK}/{{split}}/counts.json",
        reports=part_files(f"{WORK}/{{split}}/parts/{{shard}}.json"),
    output:
        f"{RESULTS}/{{split}}.lmdb",
    log:
        f"{LOGS}/write_meta/{{split}}.log",
    benchmark:
        f"{WORK}/benchmarks/write_meta/{{split}}.tsv"
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
