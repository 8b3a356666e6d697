rule merge:
    """Append every part, in index order, to one LMDB; renumber around skipped images."""
    input:
        parts=part_files(f"{WORK}/{{split}}/parts/{{shard}}.lmdb"),
        reports=part_files(f"{WORK}/{{split}}/parts/{{shard}}.json"),
        manifest=f"{WORK}/{{split}}/manifest.jsonl",
    output:
        temp(f"{WORK}/{{split}}/merged.lmdb"),
    log:
        f"{LOGS}/merge/{{split}}.log",
    benchmark:
        f"{WORK}/benchmarks/merge/{{split}}.tsv"
    conda:
        "../envs/imagefolder-lmdb.yaml"
    # a reading thread checks passed-through images ahead of the writer (scripts/merge.py)
    threads: 2
    resources:
        mem_mb=2000,
        runtime=120,
    script:
        "../scripts/merge.py"
