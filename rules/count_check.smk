# A checkpoint: once it has run, Snakemake judges each encode job afresh by its shard's stamp, so a
# changed image reruns only the shards it lies in (src/imagefolder_lmdb/work/shard_stamps.py).
checkpoint count_check:
    """Scan the source as torchvision's ImageFolder does; write the manifest and each shard's stamp; check the counts."""
    input:
        source=PATHS.source(),
        labels=listing_label_files,
        shared_classes=shared_class_manifest,
        made_from=made_from_file,
    output:
        manifest=PATHS.manifest(),
        counts=PATHS.counts(),
        stamps=directory(PATHS.shard_stamps()),
    log:
        PATHS.log("count_check"),
    benchmark:
        PATHS.benchmark("count_check")
    conda:
        "../envs/imagefolder-lmdb.yaml"
    threads: 1
    # memory and time per attempt (rules/cluster.smk); peak for ImageNet train: the listing, ~0.8 KB
    # per image (~1.4 GB)
    resources:
        mem_mb=per_attempt(4000),
        runtime=per_attempt(60),
    params:
        settings=count_settings,
    script:
        "../scripts/count_check.py"
