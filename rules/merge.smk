rule merge:
    """Append every part, in index order, to one LMDB; renumber around skipped images."""
    input:
        parts=part_files(PATHS.part()),
        reports=part_files(PATHS.part_report()),
        manifest=PATHS.manifest(),
    output:
        temp(PATHS.merged()),
    log:
        PATHS.log("merge"),
    benchmark:
        PATHS.benchmark("merge")
    conda:
        "../envs/imagefolder-lmdb.yaml"
    # a reading thread checks passed-through images ahead of the writer (src/imagefolder_lmdb/steps/merge.py)
    threads: 2
    # memory and time per attempt (rules/cluster.smk); peak for ImageNet train: the shard reports
    # and one shard's rows, ~0.55 KB per image, + ~0.2 GB of batches (~1.3 GB)
    resources:
        mem_mb=per_attempt(4000),
        runtime=per_attempt(120),  # reads every passed-through image from the source again
    params:
        settings=merge_settings,
    script:
        "../scripts/merge.py"
