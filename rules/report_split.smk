rule report_split:
    """Class-count histogram and the table of every job's benchmark record, for --report."""
    input:
        verify=PATHS.verify_report(),
        benchmarks=benchmark_files,
    output:
        histogram=report(
            PATHS.class_histogram(),
            caption="../report/classes.rst",
            category="{split}",
            labels={"figure": "images per class"},
        ),
        benchmarks=report(
            PATHS.benchmark_table(),
            caption="../report/benchmarks.rst",
            category="{split}",
            labels={"figure": "job benchmarks"},
        ),
    log:
        PATHS.log("report_split"),
    conda:
        "../envs/imagefolder-lmdb.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        benchmarks=PATHS.benchmarks(),
    script:
        "../scripts/report_split.py"
