rule encode_shard:
    """Check and encode one contiguous slice of the manifest into a part LMDB."""
    input:
        manifest=PATHS.manifest(),
    output:
        part=temp(PATHS.part()),
        report=PATHS.part_report(),
    log:
        PATHS.log("encode_shard", shard=SHARD),
    benchmark:
        PATHS.benchmark("encode_shard", shard=SHARD)
    conda:
        "../envs/imagefolder-lmdb.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=60,
    params:
        shards=lambda wildcards: split_config(wildcards)["shards"],
        encode=encode_settings(),
    script:
        "../scripts/encode_shard.py"
