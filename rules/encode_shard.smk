rule encode_shard:
    """Check and encode one contiguous slice of the manifest into a part LMDB."""
    input:
        manifest=f"{WORK}/{{split}}/manifest.jsonl",
    output:
        part=temp(f"{WORK}/{{split}}/parts/{{shard}}.lmdb"),
        report=f"{WORK}/{{split}}/parts/{{shard}}.json",
    log:
        f"{LOGS}/encode_shard/{{split}}/{{shard}}.log",
    benchmark:
        f"{WORK}/benchmarks/encode_shard/{{split}}/{{shard}}.tsv"
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
