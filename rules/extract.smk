rule extract:
    """Make the source readable by the shards: describe a folder, or safely unpack an archive."""
    input:
        source=source_files,
        labels=label_files,
        # newer than the dataset when the split must be made again (src/imagefolder_lmdb/run/made_from.py)
        made_from=made_from_file,
    output:
        directory(PATHS.source()),
    log:
        PATHS.log("extract"),
    benchmark:
        PATHS.benchmark("extract")
    conda:
        "../envs/imagefolder-lmdb.yaml"
    # an archive's class tars are listed by as many processes (src/imagefolder_lmdb/sources/class_tar_index.py);
    # two, as merge: a SLURM job asking more CPUs than a node has never starts (a 2-CPU node in tests/cluster/)
    threads: 2
    # memory and time per attempt (rules/cluster.smk); peak for ImageNet train: a folder: nothing to
    # do; an archive: its member index, ~0.55 KB per image (~1.0 GB; Kaggle's zip of 1.43M entries:
    # ~1.0 GB, zipfile's own table)
    resources:
        mem_mb=per_attempt(4000),
        runtime=per_attempt(240),
    params:
        settings=extract_settings,
    script:
        "../scripts/extract.py"
