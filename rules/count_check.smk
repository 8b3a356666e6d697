rule count_check:
    """Scan the source as torchvision's ImageFolder does; write the manifest; check the counts."""
    input:
        source=PATHS.source(),
        labels=label_files,
        shared_classes=shared_class_manifest,
    output:
        manifest=PATHS.manifest(),
        counts=PATHS.counts(),
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
        devkit=lambda wildcards: split_config(wildcards)["devkit"],
        val_labels=label_file,
        expected_images=lambda wildcards: split_config(wildcards)["expected_images"],
        expected_classes=lambda wildcards: split_config(wildcards)["expected_classes"],
        class_list=class_list,
        shards=lambda wildcards: split_config(wildcards)["shards"],
    script:
        "../scripts/count_check.py"
