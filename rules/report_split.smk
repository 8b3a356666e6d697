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
    # memory and time per attempt (rules/cluster.smk); peak for ImageNet train: the class histogram
    # and the table of benchmark records (~0.35 GB)
    resources:
        mem_mb=per_attempt(1000),
        runtime=per_attempt(10),
    params:
        benchmarks=PATHS.benchmarks(),
    script:
        "../scripts/report_split.py"
