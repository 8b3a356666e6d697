rule report_split:
    """Class-count histogram and the table of every job's benchmark record, for --report."""
    input:
        verify=f"{RESULTS}/{{split}}.verify.json",
        benchmarks=benchmark_files,
    output:
        histogram=report(
            f"{RESULTS}/{{split}}.classes.png",
            caption="../report/classes.rst",
            category="{split}",
            labels={"figure": "images per class"},
        ),
        benchmarks=report(
            f"{RESULTS}/{{split}}.benchmarks.tsv",
            caption="../report/benchmarks.rst",
            category="{split}",
            labels={"figure": "job benchmarks"},
        ),
    log:
        f"{LOGS}/report_split/{{split}}.log",
    conda:
        "../envs/imagefolder-lmdb.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        work=WORK,
    script:
        "../scripts/report_split.py"
