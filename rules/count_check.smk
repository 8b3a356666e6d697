rule count_check:
    """Scan the source as torchvision's ImageFolder does; write the manifest; check the counts."""
    input:
        source=f"{WORK}/{{split}}/source",
        labels=label_files,
        shared_classes=shared_class_manifest,
    output:
        manifest=f"{WORK}/{{split}}/manifest.jsonl",
        counts=f"{WORK}/{{split}}/counts.json",
    log:
        f"{LOGS}/count_check/{{split}}.log",
    benchmark:
        f"{WORK}/benchmarks/count_check/{{split}}.tsv"
    conda:
        "../envs/imagefolder-lmdb.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        devkit=lambda wildcards: split_config(wildcards)["devkit"],
        val_labels=lambda wildcards: split_config(wildcards)["val_labels"],
        expected_images=lambda wildcards: split_config(wildcards)["expected_images"],
        expected_classes=lambda wildcards: split_config(wildcards)["expected_classes"],
        class_list=class_list,
    script:
        "../scripts/count_check.py"
