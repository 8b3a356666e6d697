rule extract:
    """Make the source readable by the shards: describe a folder, or safely unpack an archive."""
    input:
        source=lambda wildcards: split_config(wildcards)["source"],
    output:
        directory(f"{WORK}/{{split}}/source"),
    log:
        f"{LOGS}/extract/{{split}}.log",
    conda:
        "../envs/imagefolder-lmdb.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=240,
    params:
        layout=lambda wildcards: split_config(wildcards)["layout"],
    script:
        "../scripts/extract.py"
