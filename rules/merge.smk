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
    # a reading thread checks passed-through images ahead of the writer (scripts/merge.py)
    threads: 2
    resources:
        mem_mb=2000,
        runtime=120,
    script:
        "../scripts/merge.py"
