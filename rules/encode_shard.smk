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
    # memory and time per attempt (rules/cluster.smk); peak for ImageNet train: images streamed one
    # at a time: flat in the shard size (~0.4 GB; ~0.55 GB as an array task, see rules/cluster.smk)
    resources:
        mem_mb=per_attempt(1500),
        runtime=per_attempt(60),
    params:
        shards=lambda wildcards: split_config(wildcards)["shards"],
        encode=encode_settings(),
    script:
        "../scripts/encode_shard.py"
