rule extract:
    """Make the source readable by the shards: describe a folder, or safely unpack an archive."""
    input:
        source=lambda wildcards: split_config(wildcards)["source"],
        labels=label_files,
    output:
        directory(PATHS.source()),
    log:
        PATHS.log("extract"),
    benchmark:
        PATHS.benchmark("extract")
    conda:
        "../envs/imagefolder-lmdb.yaml"
    threads: 1
    # memory and time per attempt (rules/cluster.smk); peak for ImageNet train: a folder: nothing to
    # do; an archive: its member index, ~0.55 KB per image (~1.0 GB)
    resources:
        mem_mb=per_attempt(4000),
        runtime=per_attempt(240),
    params:
        layout=lambda wildcards: split_config(wildcards)["layout"],
        extract=lambda wildcards: split_config(wildcards)["extract"],
        md5=lambda wildcards: split_config(wildcards)["md5"],
        folder_stamp=folder_stamp,
        classes=wanted_classes,
    script:
        "../scripts/extract.py"
