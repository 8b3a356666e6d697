rule extract:
    """Make the source readable by the shards: describe a folder, or safely unpack an archive."""
    input:
        source=source_files,
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
    resources:
        mem_mb=1500,  # a zip's index: zipfile's table of its entries, ~1.0 GB for Kaggle's 1.43M
        runtime=240,
    params:
        layout=lambda wildcards: split_config(wildcards)["layout"],
        extract=lambda wildcards: split_config(wildcards)["extract"],
        md5=lambda wildcards: split_config(wildcards)["md5"],
        folder_stamp=folder_stamp,
        classes=wanted_classes,
        source=lambda wildcards: split_config(wildcards)["source"],
        image_column=lambda wildcards: split_config(wildcards)["image_column"],
        label_column=lambda wildcards: split_config(wildcards)["label_column"],
        root=lambda wildcards: split_config(wildcards)["root"],
        labels_member=lambda wildcards: labels_member(split_config(wildcards)),
    script:
        "../scripts/extract.py"
